package tui

import (
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/outbound"
	"github.com/mailroom/mailroom/mailbox"
)

// slowRemote is a remote A2A v0.3 agent for the console's tests with the
// daemon's real dispatcher: it accepts every message as a task that keeps
// working until the test finishes it, answers tasks/get with it as it
// stands, and records the cancels it is asked for. Its listener can be
// shut, as a remote that died.
type slowRemote struct {
	t   *testing.T
	ln  net.Listener
	srv *http.Server

	mu       sync.Mutex
	states   map[string]string // remote task id -> A2A state
	canceled []string
}

func startSlowRemote(t *testing.T) *slowRemote {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &slowRemote{t: t, ln: ln, states: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", r.card)
	mux.HandleFunc("POST /", r.rpc)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	// Every call on a connection of its own: when the remote dies, the
	// next send is refused outright, never written on a kept-alive
	// connection the remote closed (a send that may have arrived, which
	// a loaded machine made of this test's "failing" now and then).
	r.srv.SetKeepAlivesEnabled(false)
	go r.srv.Serve(ln)
	t.Cleanup(r.die)
	return r
}

func (r *slowRemote) url() string { return "http://" + r.ln.Addr().String() + "/" }

// die shuts the remote: connections to it are refused from now on.
func (r *slowRemote) die() { r.srv.Close() }

func (r *slowRemote) card(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"name": "Slow Echo", "description": "works until the test says so", "url": r.url(), "version": "1.0.0",
		"protocolVersion": "0.3.0", "preferredTransport": "JSONRPC",
		"capabilities":      map[string]any{"streaming": false},
		"defaultInputModes": []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"},
		"skills": []map[string]any{{"id": "echo", "name": "echo", "description": "echoes, slowly", "tags": []string{"test"}}},
	})
}

func (r *slowRemote) rpc(w http.ResponseWriter, req *http.Request) {
	var in struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ID      string `json:"id"`
			Message struct {
				MessageID string `json:"messageId"`
			} `json:"message"`
		} `json:"params"`
	}
	if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	id := in.Params.ID
	switch in.Method {
	case "message/send":
		id = "rt-" + in.Params.Message.MessageID[:8]
		if _, ok := r.states[id]; !ok {
			r.states[id] = "working"
		}
	case "tasks/cancel":
		r.states[id] = "canceled"
		r.canceled = append(r.canceled, id)
	}
	state, ok := r.states[id]
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": in.ID, "error": map[string]any{"code": -32001, "message": "task not found"}})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": in.ID, "result": map[string]any{
		"kind": "task", "id": id, "contextId": "ctx-" + id, "status": map[string]any{"state": state}}})
}

func (r *slowRemote) cancels() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.canceled)
}

// The console against a daemon whose own dispatcher delivers to a real
// remote (no stand-in for its reports): the Agents pane shows the remote
// healthy with the card's name and its deliveries in flight, the Leases
// pane says the remote accepted each lease's task and that it is polled
// as the remote's task; requeueing one to an agent that polls cancels it
// at the remote; and when the remote dies, the next task's delivery is
// failing with its error and when it is tried next, and the remote's
// circuit opens, in red, saying when it is probed.
func TestRemoteDeliveriesWithTheRealDispatcher(t *testing.T) {
	t.Parallel()
	remote := startSlowRemote(t)
	fast := func(o *outbound.Options) {
		o.RetryMin, o.RetryMax = 20*time.Millisecond, 2*time.Second
		o.PollMin, o.PollMax = 20*time.Millisecond, 100*time.Millisecond
		o.LeaseWait = 200 * time.Millisecond
		o.FailuresToOpen, o.ProbeInterval = 3, time.Minute
	}
	d := daemontest.Start(t, daemontest.Options{Daemon: []daemon.Option{daemon.WithOutbound(fast)}})
	api := agentAPI{t, newClient(t, d.URL())}
	api.registerRemote("echo@remote", remote.url(), mailbox.BindingAuto, 2)
	first := api.send("echo@remote", "echo this, slowly")
	second := api.send("echo@remote", "and this")

	r := runConsoleSized(t, api.c, Options{Addr: d.URL()}, 200, 60)
	f := r.scr.waitFor(t, "both leases polled as the remote's tasks", func(f frame) bool {
		return strings.Contains(f.lineWith(short(first)), "polling as rt-") && strings.Contains(f.lineWith(short(second)), "polling as rt-")
	})
	for _, task := range []string{first, second} {
		if line := f.lineWith(short(task)); !strings.Contains(line, "echo@remote") {
			t.Errorf("the lease of %s reads %q; want it held by echo@remote", short(task), line)
		}
	}

	r.scr.press(char('5'))
	f = r.scr.waitFor(t, "echo@remote healthy, 2 of 2 in flight", func(f frame) bool {
		return agentsFocused(f) && strings.Contains(remoteAgentLine(f, "echo@remote"), "2/2 in flight")
	})
	wantContains(t, "echo@remote's row", remoteAgentLine(f, "echo@remote"), "remote healthy", "2/2 in flight; healthy for", "at "+remote.url()+" jsonrpc-0.3 (auto)")
	if !f.contains("Slow Echo") {
		t.Errorf("the remote's card name (synced from its card) is not shown:\n%s", f)
	}

	// The operator hands the first task to an agent that polls: its
	// delivery ends and the remote is asked to cancel its task.
	entry, ok := api.entry(first)
	if !ok || entry.LeaseID == "" {
		t.Fatalf("the first task is not in flight: %+v", entry)
	}
	api.repair(mailbox.RepairRequest{TaskID: first, Reason: "test: the remote is too slow",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: entry.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted, Recipient: "worker-a@local", NewAgent: true}})
	want := "rt-" + first[:8]
	waitUntil(t, "the remote asked to cancel "+want, func() bool { return slices.Contains(remote.cancels(), want) })
	r.scr.waitFor(t, "echo@remote 1 of 2 in flight", func(f frame) bool {
		return strings.Contains(remoteAgentLine(f, "echo@remote"), "1/2 in flight")
	})

	// The remote dies; the next task's sends are refused, tried again
	// with backoff, and the circuit opens.
	remote.die()
	third := api.send("echo@remote", "nobody will take this")
	r.scr.press(char('2'))
	f = r.scr.waitFor(t, "the third task's delivery failing", func(f frame) bool {
		return strings.Contains(f.lineWith(short(third)), "failing, next try in")
	})
	if line := f.lineWith(short(third)); !strings.Contains(line, "remote message") {
		t.Errorf("the failing delivery reads %q; want the error of its send", line)
	}
	r.scr.press(char('5'))
	f = r.scr.waitFor(t, "echo@remote's circuit open", func(f frame) bool {
		return strings.Contains(remoteAgentLine(f, "echo@remote"), "! remote circuit open")
	})
	line := remoteAgentLine(f, "echo@remote")
	wantContains(t, "echo@remote's row", line, "circuit open for", "probe in", "transport: Post "+remote.url())
	if got := styleOf(f, line, "echo@remote"); got != colorStale {
		t.Errorf("a remote with its circuit open is drawn in %v, want %v", got, colorStale)
	}
}

// waitUntil polls cond for up to screenWait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(screenWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
