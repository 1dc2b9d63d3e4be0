package outbound_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/outbound"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

// A real daemon (daemontest) whose dispatcher retries, polls and probes
// in milliseconds, its log kept for reading back, and a native client.
type world struct {
	t    *testing.T
	ctx  context.Context
	d    *daemontest.Daemon
	c    *client.Client
	logs *testlog.Buffer
	// drained holds results drained while waiting for another task's.
	drained map[string]mailbox.PendingResult
}

// fast shortens the dispatcher's waits so that a test of a circuit or a
// poll takes milliseconds; nothing asserts on them.
func fast(o *outbound.Options) {
	o.RetryMin, o.RetryMax = 10*time.Millisecond, 100*time.Millisecond
	o.PollMin, o.PollMax = 10*time.Millisecond, 100*time.Millisecond
	o.ProbeInterval = 50 * time.Millisecond
	o.FailuresToOpen = 3
	o.LeaseWait = 500 * time.Millisecond
	o.CallTimeout = 10 * time.Second
	o.SettleDelay = 50 * time.Millisecond
}

func start(t *testing.T, remotes ...config.RemoteCredential) *world {
	t.Helper()
	return startWith(t, nil, remotes...)
}

// startWith is start with more changes to the dispatcher's options.
func startWith(t *testing.T, change func(*outbound.Options), remotes ...config.RemoteCredential) *world {
	t.Helper()
	logs := &testlog.Buffer{}
	d := daemontest.Start(t, daemontest.Options{Logger: logs.Logger(),
		Config: func(c *config.Config) { c.Remotes = remotes },
		Daemon: []daemon.Option{daemon.WithOutbound(func(o *outbound.Options) {
			fast(o)
			if change != nil {
				change(o)
			}
		})}})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	c, err := client.New(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, ctx: ctx, d: d, c: c, logs: logs, drained: map[string]mailbox.PendingResult{}}
}

// register registers agent as the remote at url.
func (w *world) register(agent, url string, concurrency int) {
	w.t.Helper()
	_, err := w.c.RegisterAgent(w.ctx, agent, mailbox.AgentCard{Description: "registered by the test",
		Remote: &mailbox.RemoteSpec{URL: url, Concurrency: concurrency}})
	if err != nil {
		w.t.Fatalf("registering %s: %v", agent, err)
	}
}

// info is agent's entry in the agents listing.
func (w *world) info(agent string) mailbox.AgentInfo {
	w.t.Helper()
	list, err := w.c.Agents(w.ctx)
	if err != nil {
		w.t.Fatalf("listing agents: %v", err)
	}
	for _, a := range list {
		if a.Agent == agent {
			return a
		}
	}
	return mailbox.AgentInfo{Agent: agent}
}

// waitRemote waits until agent's remote status satisfies cond, and
// returns it.
func (w *world) waitRemote(agent, what string, cond func(*mailbox.RemoteStatus) bool) *mailbox.RemoteStatus {
	w.t.Helper()
	var st *mailbox.RemoteStatus
	waitFor(w.t, agent+": "+what, func() bool {
		st = w.info(agent).Remote
		return st != nil && cond(st)
	}, func() string { b, _ := json.Marshal(st); return string(b) })
	return st
}

// delivery is the task's delivery in agent's status, or nil.
func delivery(st *mailbox.RemoteStatus, taskID string) *mailbox.DeliveryStatus {
	for i := range st.Deliveries {
		if st.Deliveries[i].TaskID == taskID {
			return &st.Deliveries[i]
		}
	}
	return nil
}

// waitDelivery waits until the delivery of taskID to agent satisfies cond.
func (w *world) waitDelivery(agent, taskID, what string, cond func(mailbox.DeliveryStatus) bool) mailbox.DeliveryStatus {
	w.t.Helper()
	st := w.waitRemote(agent, "delivery of "+taskID+" "+what, func(st *mailbox.RemoteStatus) bool {
		dl := delivery(st, taskID)
		return dl != nil && cond(*dl)
	})
	return *delivery(st, taskID)
}

// send sends a native task and returns its id.
func (w *world) send(sender, recipient, intent string, idempotent bool) string {
	w.t.Helper()
	return w.sendID(newTaskID(), sender, recipient, intent, idempotent)
}

func newTaskID() string { return uuid.NewString() }

// sendID sends a native task with the id given.
func (w *world) sendID(id, sender, recipient, intent string, idempotent bool) string {
	w.t.Helper()
	task := mailbox.Task{ID: id, Sender: sender, Recipient: recipient, IntentText: intent}
	if idempotent {
		task.Idempotency = &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: task.ID}
	}
	if _, err := w.c.Send(w.ctx, task); err != nil {
		w.t.Fatalf("sending %q to %s: %v", intent, recipient, err)
	}
	return task.ID
}

// result drains sender's results until taskID's comes (keeping the
// others for their turn: results of concurrent deliveries come in any
// order).
func (w *world) result(sender, taskID string) mailbox.PendingResult {
	w.t.Helper()
	if r, ok := w.drained[taskID]; ok {
		delete(w.drained, taskID)
		return r
	}
	for {
		got, err := w.c.DrainN(w.ctx, sender, 1, 5*time.Second)
		if err != nil {
			w.t.Fatalf("draining %s's results (waiting for task %s): %v\nlog:\n%s", sender, taskID, err, w.logs)
		}
		for _, r := range got {
			if r.TaskID == taskID {
				return r
			}
			w.drained[r.TaskID] = r
		}
	}
}

// entry is the task's queue entry, or nil when it is not queued, in
// flight or waiting.
func (w *world) entry(taskID string) *mailbox.QueueEntry {
	w.t.Helper()
	q, err := w.c.Queue(w.ctx, mailbox.QueueFilter{Limit: mailbox.MaxLimit})
	if err != nil {
		w.t.Fatalf("queue: %v", err)
	}
	for i := range q.Tasks {
		if q.Tasks[i].Task.ID == taskID {
			return &q.Tasks[i]
		}
	}
	return nil
}

// record is the task as the daemon's state holds it.
func (w *world) record(taskID string) mailbox.TaskRecord {
	w.t.Helper()
	for _, r := range w.d.State(w.t).Tasks {
		if r.Task.ID == taskID {
			return r
		}
	}
	w.t.Fatalf("task %s is not in the daemon's state", taskID)
	return mailbox.TaskRecord{}
}

func text(r mailbox.PendingResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// waitFor polls cond until it holds, failing the test at a generous
// deadline with what was seen last.
func waitFor(t *testing.T, what string, cond func() bool, seen func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s; last seen: %s", what, seen())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// seen counts the messages a test remote took, by messageId.
type seen struct {
	mu sync.Mutex
	n  map[string]int
}

// take counts one more sight of messageID and returns how many there were.
func (s *seen) take(messageID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	s.n[messageID]++
	return s.n[messageID]
}

func (s *seen) times(messageID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[messageID]
}

// writeCard writes a test remote's v0.3 JSON-RPC card, served at url.
func writeCard(w http.ResponseWriter, url, name, description string, streaming bool) {
	writeJSON(w, map[string]any{"name": name, "description": description, "version": "1", "url": url,
		"protocolVersion": "0.3.0", "preferredTransport": "JSONRPC", "capabilities": map[string]any{"streaming": streaming},
		"defaultInputModes": []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"}, "skills": []any{}})
}

// completedTask is the result of a JSON-RPC call answering with the
// remote's task for messageID, completed with the text "done".
func completedTask(id json.RawMessage, messageID string) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"kind": "task", "id": "rt-" + messageID, "contextId": "ctx-" + messageID,
		"status": map[string]any{"state": "completed"}, "artifacts": []any{map[string]any{"artifactId": "a", "parts": []any{map[string]any{"kind": "text", "text": "done"}}}}}}
}

// call is one JSON-RPC request a test remote took: its id, method and
// message's id, and how many times the remote has now seen that message.
type call struct {
	ID        json.RawMessage
	Method    string
	MessageID string
	N         int
}

// startTestRemote starts a v0.3 JSON-RPC remote named name that serves its
// card and hands every request, counted by messageId, to answer.
func startTestRemote(t *testing.T, name, description string, streaming bool, answer func(w http.ResponseWriter, r *http.Request, c call)) (*seen, *httptest.Server) {
	s := &seen{}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			writeCard(w, srv.URL+"/", name, description, streaming)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Message struct {
					MessageID string `json:"messageId"`
				} `json:"message"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := req.Params.Message.MessageID
		answer(w, r, call{ID: req.ID, Method: req.Method, MessageID: id, N: s.take(id)})
	}))
	t.Cleanup(srv.Close)
	return s, srv
}
