package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	a2apkg "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/internal/remotetest"
	"github.com/mailroom/mailroom/mailbox"
)

// remoteExec is the remote agent's executor: it records every message it
// receives by messageId, and answers after a short random delay (first
// with its task, then, after another, with the task completed), so that
// kills land before the remote accepts a task, between its acceptance
// and its result, and after.
type remoteExec struct {
	mu        sync.Mutex
	rng       *rand.Rand
	received  map[string]int // messageId -> messages received
	completed map[string]int // messageId -> tasks completed
}

func (e *remoteExec) pause(max time.Duration) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return time.Duration(e.rng.Int64N(int64(max)))
}

func (e *remoteExec) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	id := rc.Message.ID
	e.mu.Lock()
	e.received[id]++
	e.mu.Unlock()
	var text string
	for _, p := range rc.Message.Parts {
		if tp, ok := p.(a2apkg.TextPart); ok {
			text = tp.Text
			break
		}
	}
	// The remote's own pace of work (what the test breaks around), not
	// synchronisation.
	time.Sleep(e.pause(250 * time.Millisecond))
	if err := q.Write(ctx, a2apkg.NewStatusUpdateEvent(rc, a2apkg.TaskStateSubmitted, nil)); err != nil {
		return err
	}
	time.Sleep(e.pause(400 * time.Millisecond))
	if err := q.Write(ctx, a2apkg.NewArtifactEvent(rc, a2apkg.TextPart{Text: "done " + text})); err != nil {
		return err
	}
	done := a2apkg.NewStatusUpdateEvent(rc, a2apkg.TaskStateCompleted, nil)
	done.Final = true
	if err := q.Write(ctx, done); err != nil {
		return err
	}
	e.mu.Lock()
	e.completed[id]++
	e.mu.Unlock()
	return nil
}

func (e *remoteExec) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	ev := a2apkg.NewStatusUpdateEvent(rc, a2apkg.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

func (e *remoteExec) counts() (received, completed map[string]int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	received, completed = map[string]int{}, map[string]int{}
	for k, v := range e.received {
		received[k] = v
	}
	for k, v := range e.completed {
		completed[k] = v
	}
	return received, completed
}

// e2eRemote is the remote agent a kill -9 suite delivers to, outside the
// daemons it kills (so it keeps its tasks): where it is registered, what
// it received and completed (by messageId, the mailbox task id), and how
// many requests came without the bearer credential of the daemon's
// config file.
type e2eRemote struct {
	name, url, binding string
	counts             func() (received, completed map[string]int)
	unauthorized       func() int64
}

// startE2ERemote starts an a2a-go v0.3.3 server (JSON-RPC v0.3) in the
// test process, which refuses a request without the bearer credential.
// v0.3 has no ListTasks: what the daemon may have sent it before a kill
// cannot be asked about.
func startE2ERemote(t *testing.T, seed uint64) *e2eRemote {
	t.Helper()
	exec := &remoteExec{rng: rand.New(rand.NewPCG(seed, 7)), received: map[string]int{}, completed: map[string]int{}}
	var unauthorized atomic.Int64
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer "+remoteBearer {
			unauthorized.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, req)
	}))
	srv.Start()
	t.Cleanup(srv.Close)
	card := &a2apkg.AgentCard{Name: "E2E Coder", Description: "an a2a-go agent the daemon is killed around", Version: "0.3.3",
		URL: srv.URL + "/invoke", PreferredTransport: a2apkg.TransportProtocolJSONRPC, ProtocolVersion: "0.3.0",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2apkg.AgentSkill{{ID: "code", Name: "Code", Description: "writes Go", Tags: []string{"go"}}}}
	mux.Handle("/invoke", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(exec)))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	return &e2eRemote{name: "a2a-go v0.3.3, JSON-RPC v0.3", url: srv.URL, binding: mailbox.BindingJSONRPC03, counts: exec.counts, unauthorized: unauthorized.Load}
}

// startE2ENodeRemote starts the @a2a-js/sdk 1.3.0 server (JSON-RPC v1.0,
// with ListTasks) in node, paced like the a2a-go one (it answers the
// send only once it publishes its task, 0-250 ms after it took the
// message, and completes 0-400 ms later with "done " and the text).
func startE2ENodeRemote(t *testing.T) *e2eRemote {
	t.Helper()
	base := remotetest.NodeRemote(t, "v1")
	remotetest.Control(t, base, "pace")
	get := func(what string, v any) {
		resp, err := http.Get(base + "/control/" + what)
		if err != nil {
			t.Errorf("reading the node remote's %s: %v", what, err)
			return
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Errorf("reading the node remote's %s: %v", what, err)
		}
	}
	type seenEntry struct {
		Path          string `json:"path"`
		Authorization string `json:"authorization"`
		Message       *struct {
			MessageID string `json:"messageId"`
		} `json:"message"`
	}
	counts := func() (received, completed map[string]int) {
		received, completed = map[string]int{}, map[string]int{}
		var seen []seenEntry
		var done []string
		get("seen", &seen)
		get("done", &done)
		for _, s := range seen {
			if s.Message != nil {
				received[s.Message.MessageID]++
			}
		}
		for _, id := range done {
			completed[id]++
		}
		return received, completed
	}
	unauthorized := func() int64 {
		var seen []seenEntry
		get("seen", &seen)
		n := int64(0)
		for _, s := range seen {
			if s.Path != "" && s.Authorization != "Bearer "+remoteBearer {
				n++
			}
		}
		return n
	}
	return &e2eRemote{name: "@a2a-js/sdk 1.3.0, JSON-RPC v1.0", url: base, binding: mailbox.BindingJSONRPC10, counts: counts, unauthorized: unauthorized}
}

// remoteConfig writes the daemon's config file holding the remote's
// credential, and returns the flag that reads it.
func remoteConfig(t *testing.T) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mailroom.yaml")
	yaml := fmt.Sprintf("remotes:\n  - {agent: %s, bearer: %q}\n", remoteAgent, remoteBearer)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", path}
}

// registerRemote registers the remote agent on the daemon at addr.
func registerRemote(t *testing.T, c *client.Client, r *e2eRemote) {
	t.Helper()
	_, err := c.RegisterAgent(t.Context(), remoteAgent, mailbox.AgentCard{Description: "the remote the e2e suite delivers to",
		Remote: &mailbox.RemoteSpec{URL: r.url, Binding: r.binding, Concurrency: 4}})
	if err != nil {
		t.Fatalf("registering %s: %v", remoteAgent, err)
	}
}
