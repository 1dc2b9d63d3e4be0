package engine

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

func a2aTask(sender, recipient, messageID, message string) mailbox.Task {
	return mailbox.Task{Sender: sender, Recipient: recipient, IntentText: "work",
		A2A: &mailbox.A2AOrigin{Version: "0.3", MessageID: messageID, ContextID: "ctx-1", Message: json.RawMessage(message)}}
}

func mustSendTask(t *testing.T, e *Engine, task mailbox.Task) string {
	t.Helper()
	out, err := e.Send(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	return out.TaskID
}

// TestRegistryCancelsAndDeliveriesSurviveRestartAndCompaction builds a
// state with every A2A change (a card registered, one replaced, one
// deregistered; tasks canceled from the queue and from a lease; a result
// delivered), watches the events go by, and checks that the state, and
// every answer that depends on it, is the same after a restart, a
// compaction, and a restart after the compaction.
func TestRegistryCancelsAndDeliveriesSurviveRestartAndCompaction(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir, Options{})
	ops := mailbox.WithPrincipal(context.Background(), "ops")
	caller := mailbox.WithPrincipal(context.Background(), "caller@a2a")
	from := e.Status().LastSeq
	sub, err := e.Subscribe(context.Background(), &from)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	fix := mailbox.AgentCard{Name: "Coder", Skills: []mailbox.AgentSkill{{ID: "fix", Name: "Fix", Tags: []string{"go"}}}, DefaultInputModes: []string{"text/plain"}}
	if _, err := e.RegisterAgent(ops, "coder@local", mailbox.AgentCard{Name: "Old coder"}); err != nil {
		t.Fatal(err)
	}
	reg, err := e.RegisterAgent(ops, "coder@local", fix)
	if err != nil {
		t.Fatal(err)
	}
	if reg.Agent != "coder@local" || reg.Card.Name != "Coder" || reg.Principal != "ops" || reg.RegisteredAtMs == 0 || reg.Card.Skills[0].Examples == nil || reg.Card.DefaultOutputModes == nil {
		t.Fatalf("registration answered %+v", reg)
	}
	if _, err := e.RegisterAgent(ops, "writer@local", mailbox.AgentCard{Name: "Writer"}); err != nil {
		t.Fatal(err)
	}
	if err := e.DeregisterAgent(ops, "writer@local"); err != nil {
		t.Fatal(err)
	}

	queued := mustSendTask(t, e, a2aTask("caller@a2a", "coder@local", "m1", `{"messageId":"m1"}`))
	leased := mustSendTask(t, e, a2aTask("caller@a2a", "coder@local", "m2", `{"messageId":"m2"}`))
	answered := mustSendTask(t, e, a2aTask("caller@a2a", "coder@local", "m3", `{"messageId":"m3"}`))
	waiting := mustSendTask(t, e, a2aTask("caller@a2a", "coder@local", "m4", `{"messageId":"m4"}`))
	rec, err := e.Cancel(caller, queued, "changed my mind")
	if err != nil || rec.State != mailbox.TaskCanceled || rec.Task.ID != queued {
		t.Fatalf("cancel of the queued task answered %+v, %v", rec, err)
	}
	task, lease := mustLease(t, e, "coder@local")
	if task.ID != leased {
		t.Fatalf("leased %s, want %s", task.ID, leased)
	}
	rec, err = e.Cancel(ops, leased, "")
	if err != nil || rec.State != mailbox.TaskCanceled || rec.LeaseID != "" || rec.Attempt != 1 {
		t.Fatalf("cancel of the leased task answered %+v, %v", rec, err)
	}
	task, l3 := mustLease(t, e, "coder@local")
	if task.ID != answered {
		t.Fatalf("leased %s, want %s", task.ID, answered)
	}
	if err := e.PostResult(ops, mailbox.Result{TaskID: answered, LeaseID: l3.LeaseID, Status: mailbox.StatusOK, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "done"}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Delivered(caller, answered); err != nil {
		t.Fatal(err)
	}
	// A second delivery, and one for a task without a result, change nothing.
	seq := e.Status().LastSeq
	if err := e.Delivered(caller, answered); err != nil {
		t.Fatal(err)
	}
	if err := e.Delivered(caller, waiting); err != nil {
		t.Fatal(err)
	}
	if got := e.Status().LastSeq; got != seq {
		t.Fatalf("deliveries with nothing to deliver appended events: seq %d, was %d", got, seq)
	}

	type step struct{ typ, agent, task, principal string }
	want := []step{
		{mailbox.EventAgentRegistered, "coder@local", "", "ops"},
		{mailbox.EventAgentRegistered, "coder@local", "", "ops"},
		{mailbox.EventAgentRegistered, "writer@local", "", "ops"},
		{mailbox.EventAgentDeregistered, "writer@local", "", "ops"},
		{mailbox.EventTaskSent, "", "", ""},
		{mailbox.EventTaskSent, "", "", ""},
		{mailbox.EventTaskSent, "", "", ""},
		{mailbox.EventTaskSent, "", "", ""},
		{mailbox.EventTaskCanceled, "", queued, "caller@a2a"},
		{mailbox.EventTaskLeased, "", leased, ""},
		{mailbox.EventTaskCanceled, "", leased, "ops"},
		{mailbox.EventTaskLeased, "", answered, ""},
		{mailbox.EventResultPosted, "", answered, ""},
		{mailbox.EventResultDrained, "", answered, "caller@a2a"},
	}
	evs := collect(t, sub, len(want))
	for i, ev := range evs {
		got := step{ev.Type, ev.Agent, ev.TaskID, ev.Principal}
		if got != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, got, want[i])
		}
		if ev.Seq != from+uint64(i)+1 {
			t.Errorf("event %d has seq %d, want %d", i, ev.Seq, from+uint64(i)+1)
		}
		// Subscribers get the bytes the log has; they decode to the event.
		var back mailbox.Event
		if err := json.Unmarshal(ev.Encoded, &back); err != nil || back.Type != ev.Type || back.Seq != ev.Seq {
			t.Errorf("event %d's bytes %s decode to %+v, %v", i, ev.Encoded, back, err)
		}
	}
	if ev := evs[1]; ev.Card == nil || !ev.Card.HasSkill("fix") {
		t.Errorf("the replacing registration carries card %+v", ev.Card)
	}
	if ev := evs[10]; ev.LeaseID != lease.LeaseID || ev.LeasedTo != "coder@local" || ev.Attempt != 1 {
		t.Errorf("the cancel of the lease carries %+v, want lease %s of coder@local, attempt 1", ev, lease.LeaseID)
	}
	if ev := evs[8]; ev.Reason != "changed my mind" || ev.LeaseID != "" {
		t.Errorf("the cancel of the queued task carries %+v", ev)
	}

	before := snapshotOf(e)
	check := func(stage string, e *Engine) {
		t.Helper()
		if got := snapshotOf(e); !reflect.DeepEqual(got, before) {
			t.Fatalf("%s: the state differs:\n got %+v\nwant %+v", stage, got, before)
		}
		bg := context.Background()
		if r, err := e.Registered(bg, "coder@local"); err != nil || !reflect.DeepEqual(r, reg) {
			t.Errorf("%s: coder@local's entry %+v, %v; want %+v", stage, r, err, reg)
		}
		if _, err := e.Registered(bg, "writer@local"); mailbox.ErrorCode(err) != mailbox.CodeNotFound {
			t.Errorf("%s: the deregistered writer@local: %v", stage, err)
		}
		if r, _ := e.Task(bg, queued); r.State != mailbox.TaskCanceled {
			t.Errorf("%s: the task canceled from the queue is %s", stage, r.State)
		}
		r, _ := e.Task(bg, answered)
		if r.State != mailbox.TaskDone || r.Result == nil || r.Result.Content[0].Text != "done" || r.History[len(r.History)-1].Principal != "caller@a2a" {
			t.Errorf("%s: the delivered task %+v", stage, r)
		}
		// The worker's late result for the canceled lease names the cancel.
		err := e.PostResult(bg, mailbox.Result{TaskID: leased, LeaseID: lease.LeaseID, Status: mailbox.StatusOK})
		if mailbox.ErrorCode(err) != mailbox.CodeConflict || !strings.Contains(err.Error(), "canceled by ops at ") {
			t.Errorf("%s: a late result for the canceled lease: %v", stage, err)
		}
		_, err = e.Cancel(bg, leased, "")
		if mailbox.ErrorCode(err) != mailbox.CodeConflict || !strings.Contains(err.Error(), "already canceled by ops") {
			t.Errorf("%s: canceling it again: %v", stage, err)
		}
		a, _ := e.Audit(bg, "", 10)
		if len(a) != 2 || a[0].TaskID != leased || a[0].Action != mailbox.OutcomeCanceled || a[0].LeaseID != lease.LeaseID ||
			a[1].TaskID != queued || a[1].Principal != "caller@a2a" || a[1].Reason != "changed my mind" {
			t.Errorf("%s: audit %+v", stage, a)
		}
		page, err := e.AgentTasks(bg, mailbox.AgentTasksQuery{Recipient: "coder@local", PageSize: 3})
		if err != nil || page.Total != 4 || len(page.Tasks) != 3 || page.Tasks[0].Task.ID != waiting || page.Tasks[2].Task.ID != leased || page.Next != page.Tasks[2].SendSeq {
			t.Errorf("%s: coder@local's first page %+v, %v", stage, page, err)
		}
		var info *mailbox.AgentInfo
		list, _ := e.Agents(bg)
		for i := range list {
			if list[i].Agent == "coder@local" {
				info = &list[i]
			}
			if list[i].Agent == "writer@local" {
				t.Errorf("%s: writer@local is listed after its deregistration: %+v", stage, list[i])
			}
		}
		if info == nil || info.Card == nil || info.Card.Name != "Coder" || info.RegisteredAtMs != reg.RegisteredAtMs || info.Queued != 1 || info.InFlight != 0 {
			t.Errorf("%s: coder@local listed as %+v", stage, info)
		}
	}
	check("before a restart", e)
	e.Close()
	e = open(t, dir, Options{})
	check("after a restart", e)
	if _, err := e.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("after a compaction", e)
	e.Close()
	e = open(t, dir, Options{})
	check("after a compaction and a restart", e)

	// A subscriber resuming from before the compaction gets the snapshot,
	// registry included.
	sub2, err := e.Subscribe(context.Background(), &from)
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Close()
	first := collect(t, sub2, 1)[0]
	if first.Type != mailbox.EventSnapshot || len(first.Snapshot.Registry) != 1 || first.Snapshot.Registry[0].Agent != "coder@local" {
		t.Fatalf("resuming from seq %d after the compaction: %s %+v", from, first.Type, first.Snapshot)
	}
}

// A canceled idempotent task frees its key, and a new send with it is a
// new task, which is then the live one across a restart.
func TestCancelFreesTheIdempotencyKeyAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir, Options{})
	ctx := context.Background()
	for _, leased := range []bool{false, true} {
		first, err := e.Send(ctx, idemTask("k"))
		if err != nil || first.Deduplicated {
			t.Fatalf("first send %+v, %v", first, err)
		}
		if dup, _ := e.Send(ctx, idemTask("k")); !dup.Deduplicated || dup.TaskID != first.TaskID {
			t.Fatalf("a twin of a live task: %+v", dup)
		}
		if leased {
			mustLease(t, e, "a")
		}
		if _, err := e.Cancel(ctx, first.TaskID, ""); err != nil {
			t.Fatal(err)
		}
		second, err := e.Send(ctx, idemTask("k"))
		if err != nil || second.Deduplicated || second.TaskID == first.TaskID {
			t.Fatalf("leased=%v: a send after the cancel: %+v, %v; want a new task", leased, second, err)
		}
		e.Close()
		e = open(t, dir, Options{})
		if dup, _ := e.Send(ctx, idemTask("k")); !dup.Deduplicated || dup.TaskID != second.TaskID {
			t.Fatalf("leased=%v: after a restart a twin answers %+v, want %s", leased, dup, second.TaskID)
		}
		if _, err := e.Cancel(ctx, second.TaskID, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// Canceled tasks are forgotten like drained ones under retain_done, in the
// daemon and after a restart.
func TestCanceledTasksForgottenUnderRetainDone(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir, Options{RetainDone: 2})
	ctx := context.Background()
	var ids []string
	for range 4 {
		id := mustSend(t, e, "p", "a")
		if _, err := e.Cancel(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	remembered := func(stage string, e *Engine) {
		t.Helper()
		for i, id := range ids {
			_, err := e.Task(ctx, id)
			if want := i >= 2; (err == nil) != want {
				t.Errorf("%s: canceled task %d remembered = %v, want %v", stage, i, err == nil, want)
			}
		}
	}
	remembered("running", e)
	_, err := e.Cancel(ctx, ids[0], "")
	if mailbox.ErrorCode(err) != mailbox.CodeNotFound {
		t.Errorf("cancel of a forgotten task: %v, want not_found", err)
	}
	e.Close()
	e = open(t, dir, Options{RetainDone: 2})
	remembered("after a restart", e)
	// After a compaction the remembered ones are still forgotten in turn:
	// two more cancels push both out.
	if _, err := e.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = open(t, dir, Options{RetainDone: 2})
	remembered("after a compaction", e)
	for range 2 {
		id := mustSend(t, e, "p", "a")
		if _, err := e.Cancel(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids[2:4] {
		if _, err := e.Task(ctx, id); mailbox.ErrorCode(err) != mailbox.CodeNotFound {
			t.Errorf("after two more cancels, %s restored from the snapshot is still remembered (%v)", id, err)
		}
	}
	// A restart with a smaller retain_done forgets one more.
	e.Close()
	e = open(t, dir, Options{RetainDone: 1})
	if _, err := e.Task(ctx, ids[4]); mailbox.ErrorCode(err) != mailbox.CodeNotFound {
		t.Errorf("after a restart with retain_done 1, %s is still remembered (%v)", ids[4], err)
	}
	if _, err := e.Task(ctx, ids[5]); err != nil {
		t.Errorf("after a restart with retain_done 1, the newest canceled task: %v", err)
	}
}

func TestEngineCancelRefusals(t *testing.T) {
	e := open(t, t.TempDir(), Options{})
	ctx := context.Background()
	id := mustSend(t, e, "p", "a")
	seq := e.Status().LastSeq
	for _, tc := range []struct {
		name, id, reason, code, field string
	}{
		{"a malformed id", "not-a-uuid", "", mailbox.CodeInvalid, "task_id"},
		{"an unknown id", "6f9619ff-8b86-4d11-b42d-00c04fc964ff", "", mailbox.CodeNotFound, "task_id"},
		{"an overlong reason", id, strings.Repeat("r", mailbox.MaxReasonBytes+1), mailbox.CodeInvalid, "reason"},
	} {
		_, err := e.Cancel(ctx, tc.id, tc.reason)
		var me *mailbox.Error
		if mailbox.ErrorCode(err) != tc.code || !errors.As(err, &me) || me.Details == nil || me.Details.Field != tc.field {
			t.Errorf("cancel with %s: %v, want %s naming %s", tc.name, err, tc.code, tc.field)
		}
	}
	if err := e.Delivered(ctx, "nope"); mailbox.ErrorCode(err) != mailbox.CodeInvalid {
		t.Errorf("delivery of a malformed id: %v", err)
	}
	if got := e.Status().LastSeq; got != seq {
		t.Errorf("refusals appended events: seq %d, was %d", got, seq)
	}
	// An id in another case is the same task.
	if rec, err := e.Cancel(ctx, strings.ToUpper(id), ""); err != nil || rec.Task.ID != id {
		t.Errorf("cancel by the upper-case id: %+v, %v", rec, err)
	}
}

func TestEngineRegistryRefusals(t *testing.T) {
	e := open(t, t.TempDir(), Options{})
	ctx := context.Background()
	seq := e.Status().LastSeq
	for _, tc := range []struct {
		name, agent string
		card        mailbox.AgentCard
		field       string
	}{
		{"a capitalised agent", "Coder", mailbox.AgentCard{Name: "C"}, "agent"},
		{"an empty agent", "", mailbox.AgentCard{Name: "C"}, "agent"},
		{"a card without a name", "coder@local", mailbox.AgentCard{}, "name"},
		{"a skill without an id", "coder@local", mailbox.AgentCard{Name: "C", Skills: []mailbox.AgentSkill{{Name: "S"}}}, "skills[0].id"},
	} {
		_, err := e.RegisterAgent(ctx, tc.agent, tc.card)
		var me *mailbox.Error
		if !errors.As(err, &me) || me.Code != mailbox.CodeInvalid || me.Details == nil || me.Details.Field != tc.field {
			t.Errorf("registering %s: %v, want invalid naming %s", tc.name, err, tc.field)
		}
	}
	if err := e.DeregisterAgent(ctx, "coder@local"); mailbox.ErrorCode(err) != mailbox.CodeNotFound {
		t.Errorf("deregistering an unregistered agent: %v", err)
	}
	if err := e.DeregisterAgent(ctx, "Coder"); mailbox.ErrorCode(err) != mailbox.CodeInvalid {
		t.Errorf("deregistering a malformed agent: %v", err)
	}
	if _, err := e.Registered(ctx, "Coder"); mailbox.ErrorCode(err) != mailbox.CodeInvalid {
		t.Errorf("reading a malformed agent's card: %v", err)
	}
	if got := e.Status().LastSeq; got != seq {
		t.Errorf("refusals appended events: seq %d, was %d", got, seq)
	}
}

// Whatever Cancel accepts is what the log replays: the reason read back
// after a restart is the reason the cancel recorded.
func TestCancelReasonReadsTheSameAfterRestart(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir, Options{})
	ctx := mailbox.WithPrincipal(context.Background(), "ops")
	id := mustSend(t, e, "p", "a")
	rec, err := e.Cancel(ctx, id, "bad byte \xff here")
	if err != nil {
		// Refusing it, naming the reason, keeps the invariant too.
		if mailbox.ErrorCode(err) != mailbox.CodeInvalid || !strings.HasPrefix(mailbox.ErrorMessage(err), "reason:") {
			t.Fatalf("cancel with a reason that is not UTF-8: %v, want it recorded or refused naming reason", err)
		}
		return
	}
	accepted := rec.History[len(rec.History)-1].Reason
	e.Close()
	e = open(t, dir, Options{})
	rec, err = e.Task(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.History[len(rec.History)-1].Reason; got != accepted {
		t.Fatalf("the cancel's reason was accepted as %q and reads %q after a restart", accepted, got)
	}
	if a, _ := e.Audit(context.Background(), id, 1); len(a) != 1 || a[0].Reason != accepted {
		t.Fatalf("the audit's reason after a restart: %+v, accepted as %q", a, accepted)
	}
}

// An A2A task holds the message "as sent, verbatim": it reads the same
// after a restart as before it.
func TestA2AMessageReadsTheSameAfterRestart(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir, Options{})
	msg := "{\"messageId\": \"m1\",\n \"parts\": [{\"kind\": \"text\", \"text\": \"<b>bold</b> & more\u2028\u2029\"}]}"
	id := mustSendTask(t, e, a2aTask("caller@a2a", "coder@local", "m1", msg))
	rec, err := e.Task(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	before := string(rec.Task.A2A.Message)
	e.Close()
	e = open(t, dir, Options{})
	rec, err = e.Task(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if after := string(rec.Task.A2A.Message); after != before {
		t.Fatalf("the task's A2A message reads\n%s\nbefore a restart and\n%s\nafter it", before, after)
	}
}

// The event stream carries a registration and a cancel within a bounded
// wait: the subscriber's channel, not a sleep, paces the test.
func TestSubscribersSeeRegistrationsAndCancels(t *testing.T) {
	e := open(t, t.TempDir(), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := e.Subscribe(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if ev := collect(t, sub, 1)[0]; ev.Type != mailbox.EventSnapshot {
		t.Fatalf("first event %s, want the snapshot", ev.Type)
	}
	if _, err := e.RegisterAgent(ctx, "coder@local", mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	id := mustSend(t, e, "p", "coder@local")
	if _, err := e.Cancel(ctx, id, "no"); err != nil {
		t.Fatal(err)
	}
	if err := e.DeregisterAgent(ctx, "coder@local"); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range collect(t, sub, 4) {
		types = append(types, ev.Type)
	}
	want := []string{mailbox.EventAgentRegistered, mailbox.EventTaskSent, mailbox.EventTaskCanceled, mailbox.EventAgentDeregistered}
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("stream carried %v, want %v", types, want)
	}
	// A console applying the stream to its own state agrees with the daemon.
	console := mailbox.NewState()
	sub2, err := e.Subscribe(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Close()
	snap := collect(t, sub2, 1)[0]
	if err := console.Apply(snap); err != nil {
		t.Fatal(err)
	}
	if got, want := console.Snapshot(0), snapshotOf(e); !reflect.DeepEqual(got, want) {
		t.Fatalf("a console's state from the stream:\n got %+v\nwant %+v", got, want)
	}
}
