package demo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/cmd/mailroom/internal/demo"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/tui"
)

// quitter is a terminal whose operator presses q once the console has
// drawn a few frames (the agents have had time to do something by then).
type quitter struct {
	tcell.SimulationScreen
	mu    sync.Mutex
	shown int
}

func (s *quitter) Show() {
	s.SimulationScreen.Show()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown++; s.shown == 10 {
		go s.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
	}
}

// TestDemoWiring is what `mailroom demo` does: an in-process daemon on a
// data directory, the agents, and the console attached; quitting the console
// stops the agents and then the daemon, cleanly.
func TestDemoWiring(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	agents := make(chan error, 1)
	go func() { agents <- demo.Run(ctx, demo.Options{Addr: d.Addr(), Seed: 1, Rate: 20}) }()

	c, err := client.New(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	console := tui.New(c, tui.Options{StaleAfter: 20 * time.Second, Screen: &quitter{SimulationScreen: tcell.NewSimulationScreen("UTF-8")}})
	if err := console.Run(ctx); err != nil {
		t.Errorf("console.Run = %v, want nil after q", err)
	}

	cancel()
	if err := <-agents; err != nil {
		t.Errorf("demo.Run = %v, want nil", err)
	}
	// Stop fails the test unless Daemon.Run ends cleanly.
	d.Stop()
}
