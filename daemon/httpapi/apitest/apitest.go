// Package apitest starts a real mailroom daemon for tests: a log store in a
// directory, the engine over it and the HTTP API on 127.0.0.1, served by a
// real http.Server on a real socket. It can drop every connection and
// restart the daemon on the same directory and port, which is what the
// resume and durability tests need.
package apitest

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/daemon/store/logstore"
)

// Options configure the daemon's parts.
type Options struct {
	Store  logstore.Options
	Engine engine.Options
	API    httpapi.Options
}

// Daemon is a running test daemon.
type Daemon struct {
	t    testing.TB
	Dir  string
	opts Options
	addr string

	mu     sync.Mutex
	Engine *engine.Engine
	srv    *http.Server
	served chan struct{}
	conns  map[net.Conn]struct{}
}

// Start runs a daemon on a fresh temporary directory and 127.0.0.1:0. It is
// stopped when the test ends.
func Start(t testing.TB, opts Options) *Daemon {
	t.Helper()
	return StartIn(t, t.TempDir(), opts)
}

// StartIn runs a daemon on dir.
func StartIn(t testing.TB, dir string, opts Options) *Daemon {
	t.Helper()
	d := &Daemon{t: t, Dir: dir, opts: opts, addr: "127.0.0.1:0"}
	d.start()
	t.Cleanup(d.Stop)
	return d
}

// openEngine replays the log in d.Dir.
func (d *Daemon) openEngine() *engine.Engine {
	d.t.Helper()
	st, err := logstore.Open(d.Dir, d.opts.Store)
	if err != nil {
		d.t.Fatalf("opening the log in %s: %v", d.Dir, err)
	}
	eng, err := engine.Open(st, d.opts.Engine)
	if err != nil {
		st.Close()
		d.t.Fatalf("opening the engine: %v", err)
	}
	return eng
}

func (d *Daemon) start() {
	d.t.Helper()
	eng := d.openEngine()
	// Go listens with SO_REUSEADDR, so a restart can bind the port the
	// previous listener just released.
	ln, err := net.Listen("tcp", d.addr)
	if err != nil {
		eng.Close()
		d.t.Fatalf("listening on %s: %v", d.addr, err)
	}
	d.addr = ln.Addr().String()
	srv := &http.Server{Handler: httpapi.New(auth.Guard(eng), d.opts.API), ReadHeaderTimeout: 10 * time.Second}
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		d.mu.Lock()
		defer d.mu.Unlock()
		switch s {
		case http.StateNew:
			d.conns[c] = struct{}{}
		case http.StateClosed, http.StateHijacked:
			delete(d.conns, c)
		}
	}
	served := make(chan struct{})
	d.mu.Lock()
	d.Engine, d.srv, d.served, d.conns = eng, srv, served, make(map[net.Conn]struct{})
	d.mu.Unlock()
	go func() {
		defer close(served)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			d.t.Errorf("serving: %v", err)
		}
	}()
}

// Addr is host:port, as the daemon's listen address is written.
func (d *Daemon) Addr() string { return d.addr }

// URL is the daemon's base URL.
func (d *Daemon) URL() string { return "http://" + d.addr }

// DropConnections closes every client connection abruptly, as a network
// failure would; the daemon keeps running.
func (d *Daemon) DropConnections() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for c := range d.conns {
		c.Close()
	}
}

// Stop closes the listener and every connection, then the engine and its
// log, like a daemon that stopped. It is idempotent.
func (d *Daemon) Stop() {
	d.t.Helper()
	d.mu.Lock()
	srv, eng, served := d.srv, d.Engine, d.served
	d.srv = nil
	d.mu.Unlock()
	if srv == nil {
		return
	}
	eng.EndSubscriptions()
	srv.Close()
	<-served
	if err := eng.Close(); err != nil {
		d.t.Errorf("closing the engine: %v", err)
	}
}

// Restart stops the daemon and starts it again on the same directory and
// port, replaying its log.
func (d *Daemon) Restart() {
	d.t.Helper()
	d.Stop()
	d.start()
}

// Offline stops the daemon, runs fn on its engine while no client can
// connect (so clients miss whatever fn does), then serves again on the same
// directory and port.
func (d *Daemon) Offline(fn func(*engine.Engine)) {
	d.t.Helper()
	d.Stop()
	eng := d.openEngine()
	fn(eng)
	if err := eng.Close(); err != nil {
		d.t.Fatalf("closing the offline engine: %v", err)
	}
	d.start()
}
