package mailbox

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// requeueTo requeues a leased task for recipient "to" as the engine would.
func (b *box) requeueTo(taskID, leaseID, to string) (RepairOutcome, error) {
	b.t.Helper()
	req, err := NormalizeRepair(RepairRequest{TaskID: taskID, Reason: "worker gone",
		Command: RepairCommand{Action: ActionRequeue, LeaseID: leaseID, DuplicateRisk: RiskOperatorAccepted, Recipient: to}})
	if err != nil {
		return RepairOutcome{}, err
	}
	ev, err := b.s.DecideRepair(req, "oncall", b.now)
	if err != nil {
		return RepairOutcome{}, err
	}
	return b.s.RepairOutcomeOf(b.apply(ev)), nil
}

// agentsByHand computes the listing from a snapshot, the slow and obvious
// way, to hold State.Agents (and the counts it keeps) to it.
func agentsByHand(s *State, nowMs int64, log []Event) []AgentInfo {
	byID := map[string]*AgentInfo{}
	get := func(id string) *AgentInfo {
		if byID[id] == nil {
			byID[id] = &AgentInfo{Agent: id}
		}
		return byID[id]
	}
	snap := s.Snapshot(nowMs)
	for _, t := range snap.Tasks {
		get(t.Task.Sender)
		get(t.Task.Recipient)
		switch t.State {
		case TaskQueued:
			get(t.Task.Recipient).Queued++
		case TaskInFlight:
			a := get(t.LeasedTo)
			a.InFlight++
			a.OldestLeaseAgeMs = max(a.OldestLeaseAgeMs, nowMs-t.LeasedAtMs)
		case TaskWaiting:
			a := get(t.Task.Sender)
			a.Waiting++
			a.OldestWaitingMs = max(a.OldestWaitingMs, nowMs-t.Task.Turns[len(t.Task.Turns)-1].AtMs)
		}
	}
	waiting := map[string]bool{}
	for _, t := range snap.Tasks {
		waiting[t.Task.ID] = t.State == TaskWaiting || t.Task.A2A != nil // neither is a drain owed
	}
	for _, r := range snap.Results {
		a := get(r.Sender)
		a.ResultsPending++
		if !waiting[r.TaskID] {
			a.Undrained++
		}
	}
	acted := actedByHand(log)
	out := []AgentInfo{}
	for id, a := range byID {
		a.LastSeenMs = acted[id]
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out
}

// actedByHand is when each agent last acted: the newest event of the log
// that is its action (a send, a lease, a result, a drain, an answer).
func actedByHand(log []Event) map[string]int64 {
	sender := map[string]string{}
	acted := map[string]int64{}
	for _, ev := range log {
		who := ""
		switch ev.Type {
		case EventTaskSent:
			sender[ev.Task.ID] = ev.Task.Sender
			who = ev.Task.Sender
		case EventTaskLeased, EventResultPosted:
			who = ev.LeasedTo
		case EventResultDrained, EventTaskReplied:
			who = sender[ev.TaskID]
		}
		if who != "" {
			acted[who] = max(acted[who], ev.AtMs)
		}
	}
	return acted
}

func TestAgentsCountsFromTheState(t *testing.T) {
	b := newBox(t)
	b.s.RetainDone = 1
	old := b.send("gone@x", "w1")
	_, l := b.lease("w1")
	if err := b.post(old, l.LeaseID); err != nil {
		t.Fatal(err)
	}
	b.drain("gone@x") // remembered while drained: gone@x is still known

	b.send("p", "w1")
	b.send("p", "w1")
	b.send("q", "w2")
	first, l1 := b.lease("w1")
	b.now += 1000
	b.send("q", "w1")
	// A lease taken on w1's behalf by somebody else counts for its holder.
	helperAt := b.now
	ev, _ := b.s.DecideLease("w1", "helper", b.id(), b.now)
	b.apply(ev)
	b.now += 500
	if err := b.post(first, l1.LeaseID); err != nil {
		t.Fatal(err)
	}
	now := b.now + 2000

	want := []AgentInfo{
		{Agent: "gone@x"},
		{Agent: "helper", InFlight: 1, OldestLeaseAgeMs: now - helperAt},
		{Agent: "p", ResultsPending: 1, Undrained: 1},
		{Agent: "q"},
		{Agent: "w1", Queued: 1},
		{Agent: "w2", Queued: 1},
	}
	acted := actedByHand(b.log)
	for i := range want {
		want[i].LastSeenMs = acted[want[i].Agent]
	}
	if acted["helper"] != helperAt || acted["w2"] != 0 {
		t.Fatalf("by hand: helper acted at %d (want its lease at %d), w2 at %d (want never)", acted["helper"], helperAt, acted["w2"])
	}
	if got := b.s.Agents(now); !reflect.DeepEqual(got, want) {
		t.Fatalf("Agents =\n%+v\nwant\n%+v", got, want)
	}

	// A second lease for one holder: the oldest one's age is reported.
	b.lease("w2")
	ev, _ = b.s.DecideLease("w1", "helper", b.id(), b.now)
	b.apply(ev)
	for _, a := range b.s.Agents(now) {
		if a.Agent == "helper" && (a.InFlight != 2 || a.OldestLeaseAgeMs != now-helperAt) {
			t.Errorf("helper with two leases = %+v, want 2 in flight, the oldest %d ms old", a, now-helperAt)
		}
	}

	// Once the only task naming an agent is forgotten, so is the agent.
	b.drain("p")
	for _, a := range b.s.Agents(now) {
		if a.Agent == "gone@x" {
			t.Errorf("gone@x is still listed after its only task was forgotten: %+v", a)
		}
	}
	if got, want := b.s.Agents(now), agentsByHand(b.s, now, b.log); !reflect.DeepEqual(got, want) {
		t.Errorf("Agents = %+v, by hand %+v", got, want)
	}
}

func TestRequeueToAnotherRecipient(t *testing.T) {
	b := newBox(t)
	moved := b.send("p", "a")
	later := b.send("p", "b")
	_, l := b.lease("a")
	out, err := b.requeueTo(moved, l.LeaseID, "b")
	if err != nil {
		t.Fatal(err)
	}
	if out.Action != OutcomeRequeued || out.State != TaskQueued || out.Recipient != "b" {
		t.Errorf("outcome = %+v, want requeued, queued, for b", out)
	}
	check := func(s *State, what string) {
		t.Helper()
		rec, _ := s.Task(moved)
		if rec.Task.Recipient != "b" || rec.State != TaskQueued {
			t.Errorf("%s: moved task is %s for %s, want queued for b", what, rec.State, rec.Task.Recipient)
		}
		if h := rec.History[len(rec.History)-1]; h.Type != EventTaskRequeued || h.Recipient != "b" {
			t.Errorf("%s: last history entry = %+v, want task_requeued to b", what, h)
		}
		audit := s.Audit(moved, 10)
		if len(audit) != 1 || audit[0].FromRecipient != "a" || audit[0].ToRecipient != "b" || audit[0].LeasedTo != "a" || audit[0].Principal != "oncall" {
			t.Errorf("%s: audit = %+v, want one requeue from a to b of a's lease, by oncall", what, audit)
		}
		// It keeps its place: it was sent before b's own task, so b gets it first.
		if q := ids(s.QueuedTasks()); !reflect.DeepEqual(q, []string{moved, later}) {
			t.Errorf("%s: queue = %v, want [%s %s]", what, q, moved, later)
		}
		if ev, ok := s.DecideLease("a", "a", "00000000-0000-4000-8000-0000000000aa", 0); ok {
			t.Errorf("%s: a can still lease %s", what, ev.TaskID)
		}
		if ev, ok := s.DecideLease("b", "b", "00000000-0000-4000-8000-0000000000bb", 0); !ok || ev.TaskID != moved || ev.Attempt != 2 {
			t.Errorf("%s: b's next lease = %+v, want %s at attempt 2", what, ev, moved)
		}
		// p last acted when it sent its last task: the log says so, live,
		// replayed and restored alike.
		var pSent int64
		for _, ev := range b.log {
			if ev.Type == EventTaskSent && ev.Task.Sender == "p" {
				pSent = ev.AtMs
			}
		}
		want := []AgentInfo{{Agent: "b", Queued: 2}, {Agent: "p", LastSeenMs: pSent}}
		if got := s.Agents(b.now); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Agents = %+v, want %+v (a is named by no task any more)", what, got, want)
		}
	}
	check(b.s, "live")

	check(replayJSON(t, b.log), "replayed")
	restored := NewState()
	if err := restored.Restore(b.s.Snapshot(0)); err != nil {
		t.Fatal(err)
	}
	check(restored, "restored")
	if !reflect.DeepEqual(restored.Snapshot(0), b.s.Snapshot(0)) {
		t.Error("the restored state's snapshot differs from the live one")
	}

	// Leased by its new recipient, answered and drained, it is b's.
	tid, l2 := b.lease("b")
	if err := b.post(tid, l2.LeaseID); err != nil {
		t.Fatal(err)
	}
	if r, ok := b.s.PendingResult(moved); !ok || r.Recipient != "b" {
		t.Errorf("pending result = %+v, want one from b", r)
	}
}

// TestOldRequeueReplaysUnchanged: a task_requeued written before requeues
// could move a task (no recipient field) replays as it always did, and a
// requeue that moves nothing is written without the field.
func TestOldRequeueReplaysUnchanged(t *testing.T) {
	b := newBox(t)
	id := b.send("p", "a")
	_, l := b.lease("a")
	if _, err := b.repair(id, l.LeaseID, ActionRequeue); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(b.log[len(b.log)-1])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "recipient") {
		t.Errorf("a requeue that moves nothing is written as %s, with a recipient", raw)
	}

	s := NewState()
	for _, ev := range b.log[:2] {
		if err := s.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	old := `{"seq":3,"at_ms":1000020,"type":"task_requeued","task_id":"` + id + `","lease_id":"` + l.LeaseID +
		`","leased_to":"a","attempt":1,"principal":"oncall","reason":"stuck","duplicate_risk":"operator_accepted"}`
	var ev Event
	if err := json.Unmarshal([]byte(old), &ev); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ev); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.Task(id); rec.Task.Recipient != "a" || rec.State != TaskQueued {
		t.Errorf("after an old requeue the task is %s for %s, want queued for a", rec.State, rec.Task.Recipient)
	}
	if a := s.Audit(id, 1); len(a) != 1 || a[0].FromRecipient != "" || a[0].ToRecipient != "" {
		t.Errorf("audit of an old requeue = %+v, want no move", a)
	}
	if !reflect.DeepEqual(s.Snapshot(0), b.s.Snapshot(0)) {
		t.Error("the old event replays to another state than today's requeue")
	}
}

func TestRequeueToAnotherRecipientRefusals(t *testing.T) {
	b := newBox(t)
	id := b.send("p", "a")
	_, l := b.lease("a")
	req := func(action, recipient string) RepairRequest {
		r := RepairRequest{TaskID: id, Reason: "r", Command: RepairCommand{Action: action, LeaseID: l.LeaseID, Recipient: recipient}}
		if action == ActionRequeue {
			r.Command.DuplicateRisk = RiskOperatorAccepted
		} else {
			r.Command.Message = "m"
		}
		return r
	}
	for _, tc := range []struct {
		name string
		req  RepairRequest
		want string // in the message
	}{
		{"force_error with a recipient", req(ActionForceError, "b"), "not allowed with action \"force_error\""},
		{"capitals", req(ActionRequeue, "Bob"), "lowercase"},
		{"a space", req(ActionRequeue, "b b"), "is not allowed"},
		{"too long", req(ActionRequeue, strings.Repeat("b", MaxAgentIDBytes+1)), "at most 200 bytes"},
	} {
		_, err := NormalizeRepair(tc.req)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalid || e.Details == nil || e.Details.Field != "command.recipient" || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: NormalizeRepair = %v, want invalid command.recipient saying %q", tc.name, err, tc.want)
		}
	}

	// An idempotent task cannot join its live twin at the new recipient.
	k := &Idempotency{DuplicateSafety: DuplicateIdempotent, Key: "k"}
	send := func(to string) string {
		task, err := NormalizeTask(Task{ID: b.id(), Sender: "p", Recipient: to, IntentText: "same", Idempotency: k})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := b.s.DecideSend(task, b.now)
		if err != nil {
			t.Fatal(err)
		}
		b.apply(ev)
		return task.ID
	}
	twin := send("c")
	mine := send("d")
	ev, _ := b.s.DecideLease("d", "d", b.id(), b.now)
	b.apply(ev)
	before := b.s.Snapshot(0)
	_, err := b.requeueTo(mine, ev.LeaseID, "c")
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), twin) || !strings.Contains(err.Error(), "command.recipient") {
		t.Errorf("moving an idempotent task onto its twin = %v, want a conflict naming %s", err, twin)
	}
	if !reflect.DeepEqual(before, b.s.Snapshot(0)) {
		t.Error("the refused move changed the state")
	}
	// Elsewhere it may go, and its twin tracking follows it.
	if _, err := b.requeueTo(mine, ev.LeaseID, "e"); err != nil {
		t.Fatal(err)
	}
	moved := Task{Sender: "p", Recipient: "e", IntentText: "same", Idempotency: k}
	if got, ok := b.s.LiveDuplicate(moved); !ok || got != mine {
		t.Errorf("a twin sent to e after the move = %q, %v; want deduplicated to %s", got, ok, mine)
	}
	moved.Recipient = "d"
	if got, ok := b.s.LiveDuplicate(moved); ok {
		t.Errorf("a twin sent to d after the move is deduplicated to %s; d no longer has it", got)
	}

	// Apply refuses a logged move to something that is not an agent id,
	// changing nothing.
	id2 := b.send("p", "a")
	_, l2 := b.lease("a")
	before = b.s.Snapshot(0)
	bad := Event{Seq: b.s.Seq + 1, AtMs: b.now, Type: EventTaskRequeued, TaskID: id2, LeaseID: l2.LeaseID, Recipient: "Not An Agent"}
	if err := b.s.Apply(bad); err == nil {
		t.Error("Apply took a requeue to an invalid recipient")
	}
	if !reflect.DeepEqual(before, b.s.Snapshot(0)) {
		t.Error("the refused event changed the state")
	}
}
