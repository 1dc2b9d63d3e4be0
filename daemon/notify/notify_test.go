package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/mailbox"
)

// received is one POST a receiver got.
type received struct {
	id, token, auth string
	state           string // the task's status.state (v0.3) or status.state (v1.0)
	taskID          string
}

// receiver is a webhook that records what it is sent; fail says whether
// to answer a POST with 500 instead of 204.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []received
	fail func(n int) bool
	more chan struct{}
}

func newReceiver(t *testing.T, fail func(n int) bool) *receiver {
	r := &receiver{fail: fail, more: make(chan struct{}, 1000)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var task struct {
			ID     string `json:"id"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
			Task *struct {
				ID     string `json:"id"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			} `json:"task"`
		}
		if err := json.Unmarshal(body, &task); err != nil {
			t.Errorf("a notification that is not JSON: %s", body)
		}
		rec := received{id: req.Header.Get(notify.HeaderID), token: req.Header.Get(notify.HeaderToken), auth: req.Header.Get("Authorization"),
			state: task.Status.State, taskID: task.ID}
		if task.Task != nil {
			rec.state, rec.taskID = task.Task.Status.State, task.Task.ID
		}
		r.mu.Lock()
		n := len(r.got)
		r.got = append(r.got, rec)
		r.mu.Unlock()
		if r.fail != nil && r.fail(n) {
			http.Error(w, "not now", http.StatusInternalServerError)
		} else {
			w.WriteHeader(http.StatusNoContent)
		}
		r.more <- struct{}{}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// wait waits until the receiver has had n POSTs and returns them.
func (r *receiver) wait(t *testing.T, ctx context.Context, n int) []received {
	t.Helper()
	for {
		r.mu.Lock()
		got := append([]received(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.more:
		case <-ctx.Done():
			t.Fatalf("the receiver had %d notifications (%+v), want %d", len(got), got, n)
		}
	}
}

type box struct {
	t   *testing.T
	ctx context.Context
	dir string
	eng *engine.Engine
	n   *notify.Notifier
	run context.CancelFunc
	ran chan struct{}
}

func start(t *testing.T, dir string, o notify.Options) *box {
	t.Helper()
	st, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(st, engine.Options{})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	b := &box{t: t, ctx: ctx, dir: dir, eng: eng, n: notify.New(eng, eng.Push(), o), ran: make(chan struct{})}
	rctx, stop := context.WithCancel(ctx)
	b.run = stop
	go func() { defer close(b.ran); b.n.Run(rctx) }()
	t.Cleanup(func() { b.stop(); cancel() })
	return b
}

// stop ends the notifier and closes the engine (a clean shutdown).
func (b *box) stop() {
	if b.eng == nil {
		return
	}
	b.run()
	<-b.ran
	b.eng.Close()
	b.eng = nil
}

func (b *box) send(url, token string) string {
	b.t.Helper()
	id := mailbox.Task{Sender: "caller@a2a", Recipient: "worker@local", IntentText: "work"}
	out, err := b.eng.SendWithPush(b.ctx, id, mailbox.PushConfig{URL: url, Token: token, Authentication: &mailbox.PushAuth{Schemes: []string{"Bearer"}, Credentials: "cred"}})
	if err != nil {
		b.t.Fatal(err)
	}
	return out.TaskID
}

func (b *box) work(status string) {
	b.t.Helper()
	task, lease, err := b.eng.Lease(b.ctx, "worker@local")
	if err != nil || task == nil {
		b.t.Fatalf("lease = %v, %v", task, err)
	}
	r := mailbox.Result{TaskID: task.ID, LeaseID: lease.LeaseID, Status: status, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "done"}}}
	if err := b.eng.PostResult(b.ctx, r); err != nil {
		b.t.Fatal(err)
	}
}

// outbox waits until the outbox satisfies ok.
func (b *box) outbox(what string, ok func([]mailbox.Notification) bool) []mailbox.Notification {
	b.t.Helper()
	for {
		ns, err := b.eng.Push().Outbox(b.ctx)
		if err != nil {
			b.t.Fatal(err)
		}
		if ok(ns) {
			return ns
		}
		select {
		case <-b.ctx.Done():
			b.t.Fatalf("the outbox never came to %s: %+v", what, ns)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func empty(ns []mailbox.Notification) bool { return len(ns) == 0 }

// The receiver sees every change of the task in order, each once, with
// the config's token and credentials and a stable id; delivered, the
// outbox is empty.
func TestEveryChangeInOrder(t *testing.T) {
	rcv := newReceiver(t, nil)
	b := start(t, t.TempDir(), notify.Options{})
	id := b.send(rcv.srv.URL+"/hook", "tok-1")
	b.work(mailbox.StatusOK)
	got := rcv.wait(t, b.ctx, 3)
	b.outbox("empty", empty)
	var states []string
	for _, g := range got {
		states = append(states, g.state)
		if g.token != "tok-1" || g.auth != "Bearer cred" || g.taskID != id || g.id == "" {
			t.Errorf("notification %+v, want token tok-1, Bearer cred, task %s and an id", g, id)
		}
	}
	if want := "TASK_STATE_SUBMITTED TASK_STATE_WORKING TASK_STATE_COMPLETED"; strings.Join(states, " ") != want {
		t.Errorf("states = %v, want %s", states, want)
	}
	if len(got) != 3 {
		t.Errorf("the receiver got %d notifications, want 3", len(got))
	}
}

// A failing receiver gets retries with backoff, then a dead letter that
// stays; an operator's retry delivers it once the receiver is back.
func TestFailingReceiverDeadLetters(t *testing.T) {
	var mu sync.Mutex
	down := true
	rcv := newReceiver(t, func(int) bool { mu.Lock(); defer mu.Unlock(); return down })
	b := start(t, t.TempDir(), notify.Options{MaxAttempts: 3, RetryMin: time.Millisecond, RetryMax: 4 * time.Millisecond})
	b.send(rcv.srv.URL+"/hook", "tok")
	ns := b.outbox("one dead letter", func(ns []mailbox.Notification) bool { return len(ns) == 1 && ns[0].Dead })
	if ns[0].Attempts != 3 || !strings.Contains(ns[0].LastError, "500 Internal Server Error") {
		t.Errorf("dead letter = %+v, want 3 attempts and the receiver's 500", ns[0])
	}
	got := rcv.wait(t, b.ctx, 3)
	for _, g := range got[1:] {
		if g.id != got[0].id {
			t.Errorf("a retry had id %q, the first %q: want the same", g.id, got[0].id)
		}
	}
	mu.Lock()
	down = false
	mu.Unlock()
	if _, err := b.eng.RetryNotification(mailbox.WithPrincipal(b.ctx, "oncall"), ns[0].ID, "receiver back"); err != nil {
		t.Fatal(err)
	}
	b.n.Wake()
	b.outbox("empty", empty)
	if last := rcv.wait(t, b.ctx, 4)[3]; last.id != ns[0].ID {
		t.Errorf("the retried delivery had id %q, want %q", last.id, ns[0].ID)
	}
}

// A receiver that is down while the task moves on gets everything
// pending when it comes back, in order; across a restart of the daemon
// the outbox is delivered by the new run.
func TestComesBackAndRestart(t *testing.T) {
	var mu sync.Mutex
	down := true
	rcv := newReceiver(t, func(int) bool { mu.Lock(); defer mu.Unlock(); return down })
	dir := t.TempDir()
	b := start(t, dir, notify.Options{MaxAttempts: 1000, RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond})
	b.send(rcv.srv.URL+"/hook", "tok")
	b.work(mailbox.StatusOK)
	rcv.wait(t, b.ctx, 2) // it is being tried
	b.stop()
	mu.Lock()
	down = false
	mu.Unlock()
	failures := len(rcv.wait(t, t.Context(), 0))
	b = start(t, dir, notify.Options{RetryMin: time.Millisecond})
	b.outbox("empty", empty)
	got := rcv.wait(t, b.ctx, failures+3)[failures:]
	var states []string
	for _, g := range got {
		states = append(states, g.state)
	}
	if want := "TASK_STATE_SUBMITTED TASK_STATE_WORKING TASK_STATE_COMPLETED"; strings.Join(states, " ") != want {
		t.Errorf("after the restart the receiver got %v, want %s", states, want)
	}
}

// A native sender's webhook is posted when a result is waiting for it:
// the task, its status and the notification's id, with its token.
func TestNativeSenderWebhook(t *testing.T) {
	type got struct {
		body  notify.ResultWaiting
		token string
	}
	seen := make(chan got, 4)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rw notify.ResultWaiting
		if err := json.NewDecoder(r.Body).Decode(&rw); err != nil {
			t.Errorf("a notification that is no result_waiting: %v", err)
		}
		seen <- got{rw, r.Header.Get(notify.HeaderToken)}
	}))
	defer rcv.Close()
	b := start(t, t.TempDir(), notify.Options{})
	if _, err := b.eng.RegisterAgent(b.ctx, "planner@local", mailbox.AgentCard{Name: "Planner", Webhook: &mailbox.Webhook{URL: rcv.URL + "/results", Token: "tok-native"}}); err != nil {
		t.Fatal(err)
	}
	out, err := b.eng.Send(b.ctx, mailbox.Task{Sender: "planner@local", Recipient: "worker@local", IntentText: "work"})
	if err != nil {
		t.Fatal(err)
	}
	b.work(mailbox.StatusOK)
	select {
	case g := <-seen:
		if g.token != "tok-native" || g.body.Kind != notify.KindResultWaiting || g.body.TaskID != out.TaskID || g.body.Status != mailbox.StatusOK || g.body.Sender != "planner@local" {
			t.Errorf("the webhook got %+v with token %q, want the ok result of %s for planner@local with tok-native", g.body, g.token, out.TaskID)
		}
	case <-b.ctx.Done():
		t.Fatal("the sender's webhook was never called")
	}
	b.outbox("empty", empty)
}

// /metrics counts the notifications by outcome and shows the dead letters.
func TestMetrics(t *testing.T) {
	rcv := newReceiver(t, func(n int) bool { return n < 2 })
	b := start(t, t.TempDir(), notify.Options{MaxAttempts: 2, RetryMin: time.Millisecond, RetryMax: time.Millisecond})
	b.send(rcv.srv.URL+"/hook", "tok") // its first notification fails twice: dead
	b.outbox("one dead letter", func(ns []mailbox.Notification) bool { return len(ns) == 1 && ns[0].Dead })
	b.work(mailbox.StatusOK) // the lease's and the result's are delivered
	b.outbox("the dead letter alone", func(ns []mailbox.Notification) bool { return len(ns) == 1 })
	var w metrics.Writer
	b.n.WriteMetrics(&w)
	var out strings.Builder
	w.WriteText(&out)
	for _, want := range []string{`mailroom_push_notifications_total{outcome="delivered"} 2`, `mailroom_push_notifications_total{outcome="failed"} 2`,
		`mailroom_push_notifications_total{outcome="dead_lettered"} 1`, "mailroom_push_delivery_seconds_count 2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, out.String())
		}
	}
}
