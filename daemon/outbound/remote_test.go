package outbound_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	a2apkg "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

// The remote agent of these tests: a real a2a-go v0.3.3 server (JSON-RPC
// v0.3) whose executor behaves by the first word of the message it gets.

// goExecutor answers "fail", "reject", "ask" (then completes on the
// answer), "stream", "slow" (until released), "hang" (until canceled);
// anything else is echoed back as the artifact.
type goExecutor struct {
	mu       sync.Mutex
	seen     []*a2apkg.Message
	canceled []string // the remote task ids canceled
	release  chan struct{}
}

func newGoExecutor() *goExecutor { return &goExecutor{release: make(chan struct{})} }

// sent counts the messages received with id messageID.
func (e *goExecutor) sent(messageID string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, m := range e.seen {
		if m.ID == messageID {
			n++
		}
	}
	return n
}

func (e *goExecutor) wasCanceled(taskID string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range e.canceled {
		if id == taskID {
			return true
		}
	}
	return false
}

func firstText(m *a2apkg.Message) string {
	for _, p := range m.Parts {
		if t, ok := p.(a2apkg.TextPart); ok {
			return t.Text
		}
	}
	return ""
}

func (e *goExecutor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	e.mu.Lock()
	e.seen = append(e.seen, rc.Message)
	e.mu.Unlock()
	write := func(ev a2apkg.Event) error { return q.Write(ctx, ev) }
	status := func(st a2apkg.TaskState, text string, final bool) error {
		var m *a2apkg.Message
		if text != "" {
			m = a2apkg.NewMessageForTask(a2apkg.MessageRoleAgent, rc, a2apkg.TextPart{Text: text})
		}
		ev := a2apkg.NewStatusUpdateEvent(rc, st, m)
		ev.Final = final
		return write(ev)
	}
	if rc.StoredTask == nil {
		if err := status(a2apkg.TaskStateSubmitted, "", false); err != nil {
			return err
		}
	}
	text := firstText(rc.Message)
	if rc.StoredTask != nil {
		// The answer to the question asked.
		if err := write(a2apkg.NewArtifactEvent(rc, a2apkg.TextPart{Text: "using " + text})); err != nil {
			return err
		}
		return status(a2apkg.TaskStateCompleted, "", true)
	}
	switch strings.Fields(text + " x")[0] {
	case "fail":
		return status(a2apkg.TaskStateFailed, "the disk is full", true)
	case "reject":
		return status(a2apkg.TaskStateRejected, "not my kind of work", true)
	case "ask":
		return status(a2apkg.TaskStateInputRequired, "which database?", true)
	case "stream":
		if err := status(a2apkg.TaskStateWorking, "", false); err != nil {
			return err
		}
		first := a2apkg.NewArtifactEvent(rc, a2apkg.TextPart{Text: "one"})
		if err := write(first); err != nil {
			return err
		}
		for _, chunk := range []string{" two", " three"} {
			ev := a2apkg.NewArtifactUpdateEvent(rc, first.Artifact.ID, a2apkg.TextPart{Text: chunk})
			ev.Append = true
			if err := write(ev); err != nil {
				return err
			}
		}
		return status(a2apkg.TaskStateCompleted, "", true)
	case "slow":
		if err := status(a2apkg.TaskStateWorking, "", false); err != nil {
			return err
		}
		select {
		case <-e.release:
		case <-ctx.Done():
			return nil
		}
		if err := write(a2apkg.NewArtifactEvent(rc, a2apkg.TextPart{Text: "slowly done"})); err != nil {
			return err
		}
		return status(a2apkg.TaskStateCompleted, "", true)
	case "hang":
		if err := status(a2apkg.TaskStateWorking, "", false); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	}
	if err := write(a2apkg.NewArtifactEvent(rc, rc.Message.Parts...)); err != nil {
		return err
	}
	return status(a2apkg.TaskStateCompleted, "", true)
}

func (e *goExecutor) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	e.mu.Lock()
	e.canceled = append(e.canceled, string(rc.TaskID))
	e.mu.Unlock()
	ev := a2apkg.NewStatusUpdateEvent(rc, a2apkg.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

// goRemote is an a2a-go server on 127.0.0.1:0 that can be restarted (a
// fresh handler with an empty in-memory task store on the same
// listener, as a killed and restarted agent), taken down (every request
// answered 503, as a remote that is failing) and brought back, recording
// the credentials each request came with.
type goRemote struct {
	srv     *httptest.Server
	handler atomic.Pointer[http.Handler]
	down    atomic.Bool
	name    string

	mu    sync.Mutex
	exec  *goExecutor
	auths []string
}

func startGoRemote(t *testing.T, name string, streaming bool) *goRemote {
	t.Helper()
	g := &goRemote{name: name}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.auths = append(g.auths, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Api-Key"))
		g.mu.Unlock()
		if g.down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		(*g.handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(g.srv.Close)
	g.restart(streaming)
	return g
}

func (g *goRemote) executor() *goExecutor {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.exec
}

func (g *goRemote) credentials() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.auths...)
}

// restart replaces the server with a fresh one: every task it had is
// forgotten, as an in-memory task store forgets on a restart.
func (g *goRemote) restart(streaming bool) {
	exec := newGoExecutor()
	card := &a2apkg.AgentCard{Name: g.name, Description: "an a2a-go agent", Version: "0.3.3",
		URL: g.srv.URL + "/invoke", PreferredTransport: a2apkg.TransportProtocolJSONRPC, ProtocolVersion: "0.3.0",
		Capabilities:      a2apkg.AgentCapabilities{Streaming: streaming},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2apkg.AgentSkill{{ID: "code", Name: "Code", Description: "writes Go", Tags: []string{"go"}, Examples: []string{"fix the bug"}}}}
	mux := http.NewServeMux()
	mux.Handle("/invoke", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(exec)))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	var h http.Handler = mux
	g.mu.Lock()
	g.exec = exec
	g.mu.Unlock()
	g.handler.Store(&h)
}
