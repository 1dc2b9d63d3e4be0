// Command mailroom is the Mailroom daemon, its console and its CLI verbs.
// main only wires the process to run: arguments, standard streams, the
// environment, signals and the exit code.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal starts a clean shutdown, restore the default
		// handling so a second Ctrl-C kills a shutdown that hangs.
		<-ctx.Done()
		stop()
	}()
	os.Exit(runEnv(ctx, &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, environ: os.Environ}, os.Args[1:]))
}
