package storetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// Workload plays realistic mailbox traffic against a State: sends (some
// idempotent, some answered from the result cache), leases, results,
// drains, operator repairs and retry-stale requeues, and, when
// Conversations is set, conversations: workers ask their senders
// (input_required, auth_required) or refuse (rejected), senders reply, and
// operators or callers end tasks waiting on a reply. Each event is decided
// by the State's own Decide functions and applied to it, so the sequence is
// exactly what an engine would append, and State is the state those events
// make. The same seed gives the same events.
type Workload struct {
	State *mailbox.State
	// Conversations adds conversation traffic. Without it the workload
	// plays what it played before conversations existed, event for event,
	// so tests tuned to a seed's traffic keep their meaning.
	Conversations bool
	rng           *rand.Rand
	nowMs         int64
	ids           uint64
	sent          []string
}

var (
	senders    = []string{"planner@local", "triage@local"}
	recipients = []string{"coder@local", "reviewer@local", "tester@local"}
)

// NewWorkload returns a workload over an empty mailbox.
func NewWorkload(seed uint64) *Workload {
	return &Workload{
		State: mailbox.NewState(),
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		nowMs: 1_767_225_600_000, // 2026-01-01
	}
}

// Events decides and applies the next n events.
func (w *Workload) Events(tb testing.TB, n int) []mailbox.Event {
	tb.Helper()
	evs := make([]mailbox.Event, n)
	for i := range evs {
		evs[i] = w.Next(tb)
	}
	return evs
}

// Next decides the next event, applies it to State and returns it with its
// seq set.
func (w *Workload) Next(tb testing.TB) mailbox.Event {
	tb.Helper()
	// Strictly increasing time: the state orders some things by time, and
	// ties would test the state rather than the store.
	w.nowMs += 1 + w.rng.Int64N(400)
	ev := w.decide(tb)
	ev.Seq = w.State.Seq + 1
	if err := w.State.Apply(ev); err != nil {
		tb.Fatalf("workload: the state refuses its own decision %+v: %v", ev, err)
	}
	return ev
}

func (w *Workload) decide(tb testing.TB) mailbox.Event {
	tb.Helper()
	for {
		var (
			ev mailbox.Event
			ok bool
		)
		if w.Conversations {
			if ev, ok = w.tryConversing(tb); ok {
				return ev
			}
			continue
		}
		switch r := w.rng.IntN(100); {
		case r < 28:
			ev, ok = w.send(tb)
		case r < 52:
			ev, ok = w.lease()
		case r < 72:
			ev, ok = w.post(tb)
		case r < 86:
			ev, ok = w.drain()
		case r < 96:
			ev, ok = w.repair(tb)
		default:
			ev, ok = w.retryStale(tb)
		}
		if ok {
			return ev
		}
	}
}

// tryConversing is one try of decide with conversations: a little less of
// everything else, to make room for replies and for ending tasks that wait
// on one (fewer than questions are asked, so tasks do wait).
func (w *Workload) tryConversing(tb testing.TB) (mailbox.Event, bool) {
	tb.Helper()
	switch r := w.rng.IntN(100); {
	case r < 26:
		return w.send(tb)
	case r < 48:
		return w.lease()
	case r < 69:
		return w.post(tb)
	case r < 82:
		return w.drain()
	case r < 86:
		return w.reply(tb)
	case r < 87:
		return w.endWaiting(tb)
	case r < 97:
		return w.repair(tb)
	default:
		return w.retryStale(tb)
	}
}

func (w *Workload) uuid() string {
	w.ids++
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", w.rng.Uint32(), w.ids&0xffff, w.rng.IntN(0x1000), w.rng.IntN(0x1000), w.ids)
}

func pick[T any](w *Workload, xs []T) T { return xs[w.rng.IntN(len(xs))] }

func (w *Workload) send(tb testing.TB) (mailbox.Event, bool) {
	tb.Helper()
	t := mailbox.Task{
		ID:         w.uuid(),
		Sender:     pick(w, senders),
		Recipient:  pick(w, recipients),
		IntentText: fmt.Sprintf("step %d: %s", w.ids, pick(w, []string{"summarize the failing build", "review the diff of PR 42", "write tests for the parser", "rerun the flaky suite"})),
	}
	if w.rng.IntN(3) == 0 {
		kind := pick(w, []string{"review", "build", "research"})
		t.TaskKind = &kind
	}
	if w.rng.IntN(4) == 0 {
		d := w.nowMs + w.rng.Int64N(3_600_000)
		t.DeadlineMs = &d
	}
	if len(w.sent) > 0 && w.rng.IntN(4) == 0 {
		t.Parent = pick(w, w.sent)
	}
	switch w.rng.IntN(4) {
	case 0:
		t.Idempotency = &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: fmt.Sprintf("job-%d", w.rng.IntN(6))}
	case 1:
		t.Idempotency = &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateUnsafe, Key: fmt.Sprintf("once-%d", w.ids)}
	}
	if _, live := w.State.LiveDuplicate(t); live {
		return mailbox.Event{}, false // the engine answers this without an event
	}
	ev, err := w.State.DecideSend(t, w.nowMs)
	if err != nil {
		tb.Fatalf("workload: send: %v", err)
	}
	w.sent = append(w.sent, t.ID)
	return ev, true
}

func (w *Workload) lease() (mailbox.Event, bool) {
	recipient := ""
	if w.rng.IntN(5) != 0 {
		recipient = pick(w, recipients)
	}
	return w.State.DecideLease(recipient, pick(w, append([]string{""}, recipients...)), w.uuid(), w.nowMs)
}

// leased picks an in-flight task, and sometimes forgets which lease it holds.
func (w *Workload) leased() (mailbox.QueueEntry, string, bool) {
	in := w.State.InFlightTasks()
	if len(in) == 0 {
		return mailbox.QueueEntry{}, "", false
	}
	e := pick(w, in)
	lease := e.LeaseID
	if w.rng.IntN(3) == 0 {
		lease = ""
	}
	return e, lease, true
}

func (w *Workload) post(tb testing.TB) (mailbox.Event, bool) {
	tb.Helper()
	e, lease, ok := w.leased()
	if !ok {
		return mailbox.Event{}, false
	}
	statuses := []string{mailbox.StatusOK, mailbox.StatusOK, mailbox.StatusPartial, mailbox.StatusError}
	if w.Conversations {
		statuses = append(statuses, mailbox.StatusRejected)
		if len(e.Task.Turns) < maxWorkloadTurns {
			statuses = append(statuses, mailbox.StatusInputRequired, mailbox.StatusAuthRequired)
		}
	}
	r := mailbox.Result{TaskID: e.Task.ID, LeaseID: lease, Status: pick(w, statuses)}
	r.Content = []mailbox.Content{{Type: mailbox.ContentText, Text: fmt.Sprintf("done in attempt %d: \"quoted\", unicode é, newline\nand tab\t", e.Attempt)}}
	if mailbox.Asks(r.Status) {
		r.Content[0].Text = fmt.Sprintf("question %d in attempt %d: staging or \"production\"?", len(e.Task.Turns)/2+1, e.Attempt)
	}
	if w.rng.IntN(2) == 0 {
		v, _ := json.Marshal(map[string]any{"files": w.rng.IntN(40), "ok": r.Status == mailbox.StatusOK, "tags": []string{"a", "b"}})
		r.Content = append(r.Content, mailbox.Content{Type: mailbox.ContentJSON, Value: v})
	}
	switch r.Status {
	case mailbox.StatusError:
		r.ErrorMessage = "the build failed: exit status 2"
	case mailbox.StatusRejected:
		r.ErrorMessage = "not mine to do"
	}
	ev, err := w.State.DecidePostResult(r, w.nowMs)
	if err != nil {
		tb.Fatalf("workload: post result: %v", err)
	}
	return ev, true
}

func (w *Workload) drain() (mailbox.Event, bool) {
	sender := ""
	if w.rng.IntN(4) != 0 {
		sender = pick(w, senders)
	}
	ev, _, ok := w.State.DecideDrain(sender, w.nowMs)
	return ev, ok
}

func (w *Workload) repair(tb testing.TB) (mailbox.Event, bool) {
	tb.Helper()
	if w.rng.IntN(4) == 0 {
		return w.repairQueued(tb)
	}
	e, lease, ok := w.leased()
	if !ok {
		return mailbox.Event{}, false
	}
	req := mailbox.RepairRequest{TaskID: e.Task.ID, Reason: "worker " + e.LeasedTo + " stopped answering"}
	if w.rng.IntN(2) == 0 {
		risk := mailbox.RiskOperatorAccepted
		if e.Task.Idempotent() && w.rng.IntN(2) == 0 {
			risk = mailbox.RiskIdempotent
		}
		req.Command = mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: lease, DuplicateRisk: risk}
	} else {
		req.Command = mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: lease, Message: "abandoned by the operator"}
	}
	ev, err := w.State.DecideRepair(req, "operator@local", w.nowMs)
	if err != nil {
		tb.Fatalf("workload: repair: %v", err)
	}
	return ev, true
}

// repairQueued moves a queued task to another recipient or cancels it,
// guarded by its recipient (or not).
func (w *Workload) repairQueued(tb testing.TB) (mailbox.Event, bool) {
	tb.Helper()
	queued := w.State.QueuedTasks()
	if len(queued) == 0 {
		return mailbox.Event{}, false
	}
	e := pick(w, queued)
	req := mailbox.RepairRequest{TaskID: e.Task.ID, Reason: "agent " + e.Task.Recipient + " is gone"}
	guard := e.Task.Recipient
	if w.rng.IntN(3) == 0 {
		guard = ""
	}
	if w.rng.IntN(2) == 0 {
		to := pick(w, recipients)
		if to == e.Task.Recipient {
			return mailbox.Event{}, false
		}
		req.Command = mailbox.RepairCommand{Action: mailbox.ActionMove, QueuedFor: guard, Recipient: to}
	} else {
		req.Command = mailbox.RepairCommand{Action: mailbox.ActionCancel, QueuedFor: guard}
	}
	ev, err := w.State.DecideRepair(req, "operator@local", w.nowMs)
	if mailbox.ErrorCode(err) == mailbox.CodeConflict {
		return mailbox.Event{}, false // an idempotent twin already queued there
	}
	if err != nil {
		tb.Fatalf("workload: queued repair: %v", err)
	}
	return ev, true
}

func (w *Workload) retryStale(tb testing.TB) (mailbox.Event, bool) {
	tb.Helper()
	rep := w.State.PlanRetryStale(mailbox.RetryPolicy{Enabled: true, MinLeaseAgeMs: 1000, MaxAttempts: 5, MaxRequeues: 1, ScanLimit: 100}, w.nowMs)
	if len(rep.Requeued) == 0 {
		return mailbox.Event{}, false
	}
	ev, err := w.State.DecideRetryRequeue(rep.Requeued[0], "retry-stale", w.nowMs)
	if err != nil {
		tb.Fatalf("workload: retry-stale requeue: %v", err)
	}
	return ev, true
}

// maxWorkloadTurns keeps the workload's conversations well inside the
// default max_turns, which the state checks only when a turn is decided
// through the service, never on Apply.
const maxWorkloadTurns = 8

// reply answers a task waiting on its sender, sometimes with the answer
// in two parts (text and json).
func (w *Workload) reply(tb testing.TB) (mailbox.Event, bool) {
	tb.Helper()
	waiting := w.State.WaitingTasks()
	if len(waiting) == 0 {
		return mailbox.Event{}, false
	}
	e := pick(w, waiting)
	r := mailbox.Reply{TaskID: e.Task.ID, Sender: e.Task.Sender,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: fmt.Sprintf("answer %d: use \"staging\", é", len(e.Task.Turns)/2+1)}}}
	if w.rng.IntN(3) == 0 {
		v, _ := json.Marshal(map[string]any{"env": "staging", "token": w.rng.IntN(1000)})
		r.Content = append(r.Content, mailbox.Content{Type: mailbox.ContentJSON, Value: v})
	}
	r, err := mailbox.NormalizeReply(r)
	if err != nil {
		tb.Fatalf("workload: reply: %v", err)
	}
	ev, _, ok, err := w.State.DecideReply(r, "", w.nowMs)
	if err != nil || !ok {
		tb.Fatalf("workload: reply to waiting task %s: %v (ok %v)", e.Task.ID, err, ok)
	}
	return ev, true
}

// endWaiting ends a task waiting on its sender without a reply (an
// operator's forced error, or its sender's cancel), or hands it over to
// the other sender.
func (w *Workload) endWaiting(tb testing.TB) (mailbox.Event, bool) {
	tb.Helper()
	waiting := w.State.WaitingTasks()
	if len(waiting) == 0 {
		return mailbox.Event{}, false
	}
	e := pick(w, waiting)
	var (
		ev  mailbox.Event
		err error
	)
	switch w.rng.IntN(3) {
	case 2:
		// Handed to the other sender (not ended: it waits on that one),
		// guarded by its sender.
		to := senders[0]
		if to == e.Task.Sender {
			to = senders[1]
		}
		ev, err = w.State.DecideRepair(mailbox.RepairRequest{TaskID: e.Task.ID, Reason: e.Task.Sender + " is gone",
			Command: mailbox.RepairCommand{Action: mailbox.ActionHandOver, SentBy: e.Task.Sender, Sender: to}}, "operator@local", w.nowMs)
		if mailbox.ErrorCode(err) == mailbox.CodeConflict {
			return mailbox.Event{}, false // an A2A task, or an idempotent twin from that sender
		}
	case 0:
		// Guarded, or not, by the lease that asked.
		guard := ""
		if q, _ := e.Task.Question(); w.rng.IntN(2) == 0 {
			guard = q.LeaseID
		}
		ev, err = w.State.DecideRepair(mailbox.RepairRequest{TaskID: e.Task.ID, Reason: "nobody answers",
			Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: guard, Message: "the question went unanswered"}}, "operator@local", w.nowMs)
	default:
		ev, err = w.State.DecideCancel(e.Task.ID, e.Task.Sender, "answered elsewhere", w.nowMs)
	}
	if err != nil {
		tb.Fatalf("workload: ending waiting task %s: %v", e.Task.ID, err)
	}
	return ev, true
}
