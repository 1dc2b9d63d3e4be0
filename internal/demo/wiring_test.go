package demo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/config"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/internal/demo"
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
	cfg := config.Default()
	cfg.DataDir, cfg.Addr = t.TempDir(), "127.0.0.1:0"
	d, err := daemon.Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve() }()

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
	shutdown, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	if err := d.Shutdown(shutdown); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
