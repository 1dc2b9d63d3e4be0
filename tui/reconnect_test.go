package tui

import (
	"io"
	"net"
	"sync"
	"testing"
)

// cutProxy stands between a console and its daemon: cut drops every
// connection and refuses new ones until heal, as a network that fails.
type cutProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.drop() })
	return p
}

func (p *cutProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refused := p.cut
		p.mu.Unlock()
		if refused {
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go func() { io.Copy(out, in); out.Close() }()
		go func() { io.Copy(in, out); in.Close() }()
	}
}

func (p *cutProxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *cutProxy) setCut(on bool) {
	p.mu.Lock()
	p.cut = on
	p.mu.Unlock()
	if on {
		p.drop()
	}
}

// Cut off while the daemon compacted its log past where the console was,
// the console reconnects to a snapshot and says so: the seq it had and
// the one it reloaded at. The panes show what the daemon holds.
func TestReconnectAfterCompactionReloadsASnapshot(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	api.send("worker-a@local", "before the cut")
	p := startCutProxy(t, d.Addr())
	r := runConsole(t, newClient(t, p.url()), Options{Addr: p.url()})
	r.scr.waitForText(t, "before the cut")

	p.setCut(true)
	r.scr.waitForText(t, "reconnecting (attempt")
	api.send("worker-b@local", "while it was away")
	if _, err := c.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.setCut(false)
	f := r.scr.waitForText(t, "while it was away")
	r.scr.waitForText(t, "the daemon's log was compacted past seq 1 while the console was away: reloaded a snapshot at seq 2")
	if !f.contains("before the cut") {
		t.Errorf("after the reload the Queue lacks the first task:\n%s", f)
	}
}
