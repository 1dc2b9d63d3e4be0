package remotetest

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	a2apkg "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

// GoExecutor is a remote agent's executor on a2a-go v0.3.3, acting on the
// first word of the message it gets: "fail", "reject", "ask" (then
// completes on the answer, "using ..."), "auth", "say" (answers with a
// message, no task), "stream" (an artifact in chunks), "slow" (until
// Release is closed), "tick" (a working update per send on Tick, until
// Release), "hang" (until canceled); anything else is echoed back as the
// artifact. It records the messages it got and the tasks canceled.
type GoExecutor struct {
	// Release ends the slow and ticking work; Tick sends one more working
	// update of the ticking work.
	Release chan struct{}
	Tick    chan struct{}
	// chunks are the stream's artifact chunks, first to last.
	chunks []string

	mu       sync.Mutex
	seen     []*a2apkg.Message
	canceled []string
}

// Messages are the messages the executor got, in order.
func (e *GoExecutor) Messages() []*a2apkg.Message {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.seen)
}

// Sent counts the messages received with id messageID.
func (e *GoExecutor) Sent(messageID string) int {
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

// WasCanceled reports whether the remote task taskID was canceled.
func (e *GoExecutor) WasCanceled(taskID string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Contains(e.canceled, taskID)
}

func firstText(m *a2apkg.Message) string {
	for _, p := range m.Parts {
		if t, ok := p.(a2apkg.TextPart); ok {
			return t.Text
		}
	}
	return ""
}

// Execute plays the behaviour its message's first word names (goBehaviours);
// a task it is asked about again (the answer to its question) completes.
func (e *GoExecutor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	e.mu.Lock()
	e.seen = append(e.seen, rc.Message)
	e.mu.Unlock()
	x := &goTurn{e: e, ctx: ctx, rc: rc, q: q}
	text := firstText(rc.Message)
	if rc.StoredTask != nil {
		// The answer to the question asked.
		return x.done("using " + text)
	}
	if !strings.HasPrefix(text, "say") {
		if err := x.status(a2apkg.TaskStateSubmitted, "", false); err != nil {
			return err
		}
	}
	if play, ok := goBehaviours[strings.Fields(text + " x")[0]]; ok {
		return play(x)
	}
	if err := x.write(a2apkg.NewArtifactEvent(rc, rc.Message.Parts...)); err != nil {
		return err
	}
	return x.status(a2apkg.TaskStateCompleted, "", true)
}

// goTurn is one Execute call: what its behaviour writes to.
type goTurn struct {
	e   *GoExecutor
	ctx context.Context
	rc  *a2asrv.RequestContext
	q   eventqueue.Queue
}

func (x *goTurn) write(ev a2apkg.Event) error { return x.q.Write(x.ctx, ev) }

func (x *goTurn) status(st a2apkg.TaskState, text string, final bool) error {
	var m *a2apkg.Message
	if text != "" {
		m = a2apkg.NewMessageForTask(a2apkg.MessageRoleAgent, x.rc, a2apkg.TextPart{Text: text})
	}
	ev := a2apkg.NewStatusUpdateEvent(x.rc, st, m)
	ev.Final = final
	return x.write(ev)
}

func (x *goTurn) working() error { return x.status(a2apkg.TaskStateWorking, "", false) }

func (x *goTurn) done(artifact string) error {
	if err := x.write(a2apkg.NewArtifactEvent(x.rc, a2apkg.TextPart{Text: artifact})); err != nil {
		return err
	}
	return x.status(a2apkg.TaskStateCompleted, "", true)
}

// goBehaviours are what a message's first word asks the Go remote to do;
// any other message is echoed back as the task's artifact.
var goBehaviours = map[string]func(*goTurn) error{
	"fail":   func(x *goTurn) error { return x.status(a2apkg.TaskStateFailed, "the disk is full", true) },
	"reject": func(x *goTurn) error { return x.status(a2apkg.TaskStateRejected, "not my kind of work", true) },
	"ask":    func(x *goTurn) error { return x.status(a2apkg.TaskStateInputRequired, "which database?", true) },
	// No task at all: the answer is a message.
	"say": func(x *goTurn) error {
		return x.write(a2apkg.NewMessage(a2apkg.MessageRoleAgent, a2apkg.TextPart{Text: "hello yourself"}))
	},
	"auth": func(x *goTurn) error {
		return x.status(a2apkg.TaskStateAuthRequired, "sign in at https://example.test/login", true)
	},
	"stream": (*goTurn).stream,
	"slow":   (*goTurn).slow,
	"tick":   (*goTurn).tick,
	"hang":   (*goTurn).hang,
}

// stream sends the executor's chunks as one artifact, appended to.
func (x *goTurn) stream() error {
	if err := x.working(); err != nil {
		return err
	}
	first := a2apkg.NewArtifactEvent(x.rc, a2apkg.TextPart{Text: x.e.chunks[0]})
	if err := x.write(first); err != nil {
		return err
	}
	for _, chunk := range x.e.chunks[1:] {
		ev := a2apkg.NewArtifactUpdateEvent(x.rc, first.Artifact.ID, a2apkg.TextPart{Text: chunk})
		ev.Append = true
		if err := x.write(ev); err != nil {
			return err
		}
	}
	return x.status(a2apkg.TaskStateCompleted, "", true)
}

// slow works until the test releases it.
func (x *goTurn) slow() error {
	if err := x.working(); err != nil {
		return err
	}
	select {
	case <-x.e.Release:
	case <-x.ctx.Done():
		return nil
	}
	return x.done("slowly done")
}

// tick sends a status update per tick until released: a resubscriber gets
// its first event (and, from a2a-go, its headers) from a tick.
func (x *goTurn) tick() error {
	for {
		if err := x.working(); err != nil {
			return err
		}
		select {
		case <-x.e.Tick:
			continue
		case <-x.e.Release:
		case <-x.ctx.Done():
			return nil
		}
		return x.done("ticked")
	}
}

// hang works until the call is cancelled.
func (x *goTurn) hang() error {
	if err := x.working(); err != nil {
		return err
	}
	<-x.ctx.Done()
	return nil
}

func (e *GoExecutor) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	e.mu.Lock()
	e.canceled = append(e.canceled, string(rc.TaskID))
	e.mu.Unlock()
	ev := a2apkg.NewStatusUpdateEvent(rc, a2apkg.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

// GoRemote is an a2a-go v0.3.3 server (JSON-RPC v0.3) on 127.0.0.1:0 with
// a GoExecutor, that can be restarted (a fresh handler with an empty
// in-memory task store on the same listener, as a killed and restarted
// agent), taken down (Down: every request answered 503, as a remote that
// is failing) and brought back, recording the credentials each request
// came with.
type GoRemote struct {
	Srv  *httptest.Server
	Down atomic.Bool
	// Name is the card's name, as of the last Restart.
	Name    string
	chunks  []string
	handler atomic.Pointer[http.Handler]

	mu    sync.Mutex
	exec  *GoExecutor
	auths []string
	peers []string
}

// StartGoRemote starts a remote whose card is named name; chunks are its
// streamed artifact's chunks ("one", "two", "three" when none are given).
func StartGoRemote(t testing.TB, name string, streaming bool, chunks ...string) *GoRemote {
	t.Helper()
	return StartGoRemoteTLS(t, name, streaming, nil, chunks...)
}

// StartGoRemoteTLS is StartGoRemote serving HTTPS with cfg (its
// certificate, and ClientAuth with ClientCAs for a remote that asks for
// client certificates), its card's URL https; nil cfg serves plain HTTP.
func StartGoRemoteTLS(t testing.TB, name string, streaming bool, cfg *tls.Config, chunks ...string) *GoRemote {
	t.Helper()
	if len(chunks) == 0 {
		chunks = []string{"one", "two", "three"}
	}
	g := &GoRemote{Name: name, chunks: chunks}
	g.Srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.auths = append(g.auths, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Api-Key"))
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			g.peers = append(g.peers, r.TLS.PeerCertificates[0].Subject.CommonName)
		}
		g.mu.Unlock()
		if g.Down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		(*g.handler.Load()).ServeHTTP(w, r)
	}))
	if cfg != nil {
		g.Srv.TLS = cfg
		g.Srv.EnableHTTP2 = true
		g.Srv.StartTLS()
	} else {
		g.Srv.Start()
	}
	t.Cleanup(g.Srv.Close)
	g.Restart(streaming)
	return g
}

// Peers are the common names of the client certificates requests came
// with, one per request that had one.
func (g *GoRemote) Peers() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.peers)
}

// Executor is the executor of the server as it runs now.
func (g *GoRemote) Executor() *GoExecutor {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.exec
}

// Credentials are the Authorization and X-Api-Key headers ("auth|key")
// each request came with.
func (g *GoRemote) Credentials() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.auths)
}

// Restart replaces the server with a fresh one: every task it had is
// forgotten, as an in-memory task store forgets on a restart.
func (g *GoRemote) Restart(streaming bool) {
	exec := &GoExecutor{Release: make(chan struct{}), Tick: make(chan struct{}), chunks: g.chunks}
	card := &a2apkg.AgentCard{Name: g.Name, Description: "an a2a-go agent", Version: "0.3.3",
		URL: g.Srv.URL + "/invoke", PreferredTransport: a2apkg.TransportProtocolJSONRPC, ProtocolVersion: "0.3.0",
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
