package main

import (
	"context"
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

// e2eRemote is an a2a-go v0.3.3 server (JSON-RPC v0.3) in the test
// process: it outlives every daemon the test kills, keeping its tasks,
// and refuses a request without the bearer credential of the daemon's
// config file.
type e2eRemote struct {
	srv          *httptest.Server
	exec         *remoteExec
	unauthorized atomic.Int64
}

func startE2ERemote(t *testing.T, seed uint64) *e2eRemote {
	t.Helper()
	r := &e2eRemote{exec: &remoteExec{rng: rand.New(rand.NewPCG(seed, 7)), received: map[string]int{}, completed: map[string]int{}}}
	mux := http.NewServeMux()
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer "+remoteBearer {
			r.unauthorized.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, req)
	}))
	r.srv.Start()
	t.Cleanup(r.srv.Close)
	card := &a2apkg.AgentCard{Name: "E2E Coder", Description: "an a2a-go agent the daemon is killed around", Version: "0.3.3",
		URL: r.srv.URL + "/invoke", PreferredTransport: a2apkg.TransportProtocolJSONRPC, ProtocolVersion: "0.3.0",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2apkg.AgentSkill{{ID: "code", Name: "Code", Description: "writes Go", Tags: []string{"go"}}}}
	mux.Handle("/invoke", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(r.exec)))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	return r
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
func registerRemote(t *testing.T, c *client.Client, url string) {
	t.Helper()
	_, err := c.RegisterAgent(t.Context(), remoteAgent, mailbox.AgentCard{Description: "the remote the e2e suite delivers to",
		Remote: &mailbox.RemoteSpec{URL: url, Binding: mailbox.BindingJSONRPC03, Concurrency: 4}})
	if err != nil {
		t.Fatalf("registering %s: %v", remoteAgent, err)
	}
}
