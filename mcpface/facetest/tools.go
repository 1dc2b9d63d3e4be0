package facetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// The cases of the suite that call the tools.

// The tools' outputs as a model sees them (only what the suite reads).
type (
	sent struct {
		TaskID string `json:"task_id"`
	}
	task struct {
		TaskID    string `json:"task_id"`
		State     string `json:"state"`
		Sender    string `json:"sender"`
		Recipient string `json:"recipient"`
		Intent    string `json:"intent"`
		Context   string `json:"context_json"`
		LeaseID   string `json:"lease_id"`
		LeasedTo  string `json:"leased_to"`
		Attempt   int    `json:"attempt"`
	}
	leased struct {
		Tasks []task `json:"tasks"`
	}
	result struct {
		TaskID       string   `json:"task_id"`
		Status       string   `json:"status"`
		Text         string   `json:"text"`
		JSON         []string `json:"json"`
		ErrorMessage string   `json:"error_message"`
		Forced       bool     `json:"forced"`
	}
	drained struct {
		Results []result `json:"results"`
	}
)

// testCycle: one session sends, another leases and posts, the first
// drains; a question and its answer go round the same way.
func testCycle(t *testing.T, connect Connect, start Factory) {
	d := StartDaemon(t, start)
	planner := connect(t, d, d.Tokens[Planner], Session{})
	coder := connect(t, d, d.Tokens[Coder], Session{})

	var s sent
	Call(t, planner, "send_task", map[string]any{"to": Coder, "intent": "fix the flaky test", "kind": "code",
		"context": map[string]any{"repo": "mailroom", "pr": 42}, "deadline": "30m"}, &s)
	var l leased
	Call(t, coder, "lease_task", map[string]any{}, &l)
	if len(l.Tasks) != 1 || l.Tasks[0].TaskID != s.TaskID || l.Tasks[0].Sender != Planner || l.Tasks[0].Intent != "fix the flaky test" ||
		l.Tasks[0].LeaseID == "" || !strings.Contains(l.Tasks[0].Context, `"pr":42`) {
		t.Fatalf("lease_task = %+v, want task %s from %s with its lease and context", l, s.TaskID, Planner)
	}
	// The worker asks; the sender drains the question and answers it.
	Call(t, coder, "ask_input", map[string]any{"task_id": s.TaskID, "lease_id": l.Tasks[0].LeaseID, "question": "which branch?"}, nil)
	var q drained
	Call(t, planner, "drain_results", map[string]any{}, &q)
	if len(q.Results) != 1 || q.Results[0].Status != mailbox.StatusInputRequired || q.Results[0].Text != "which branch?" {
		t.Fatalf("drain_results = %+v, want the question", q)
	}
	Call(t, planner, "reply", map[string]any{"task_id": s.TaskID, "text": "main"}, nil)
	Call(t, coder, "lease_task", map[string]any{}, &l)
	if len(l.Tasks) != 1 || l.Tasks[0].Attempt != 2 {
		t.Fatalf("lease_task after the reply = %+v, want the task again, attempt 2", l)
	}
	Call(t, coder, "post_result", map[string]any{"task_id": s.TaskID, "lease_id": l.Tasks[0].LeaseID, "status": "ok",
		"text": "fixed in abc123", "json": map[string]any{"commit": "abc123"}}, nil)
	var r drained
	Call(t, planner, "drain_results", map[string]any{"max": 5}, &r)
	if len(r.Results) != 1 || r.Results[0].TaskID != s.TaskID || r.Results[0].Status != "ok" || r.Results[0].Text != "fixed in abc123" ||
		len(r.Results[0].JSON) != 1 || r.Results[0].JSON[0] != `{"commit":"abc123"}` {
		t.Fatalf("drain_results = %+v, want the result of %s", r, s.TaskID)
	}
	var got task
	Call(t, planner, "get_task", map[string]any{"task_id": s.TaskID}, &got)
	if got.State != mailbox.TaskDone {
		t.Errorf("get_task after the drain: state %q, want done", got.State)
	}
	// A task sent and canceled before anyone leased it.
	Call(t, planner, "send_task", map[string]any{"to": Coder, "intent": "never mind"}, &s)
	Call(t, planner, "cancel_task", map[string]any{"task_id": s.TaskID, "reason": "plans changed"}, &got)
	if got.State != mailbox.TaskCanceled {
		t.Errorf("cancel_task: state %q, want canceled", got.State)
	}
	Call(t, coder, "lease_task", map[string]any{}, &l)
	if len(l.Tasks) != 0 {
		t.Errorf("lease_task after the cancel = %+v, want nothing", l)
	}
}

// waitingPolls is the daemon's count of leases and drains waiting.
func waitingPolls(t *testing.T, c *client.Client) float64 {
	t.Helper()
	m, err := c.MetricsJSON(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	if err := json.Unmarshal(m["mailroom_long_polls_waiting"], &n); err != nil {
		t.Fatalf("mailroom_long_polls_waiting: %v", err)
	}
	return n
}

// testLongPoll: a lease_task and a drain_results with wait_seconds wait on
// the daemon and are answered by the send (the result) that comes while
// they wait.
func testLongPoll(t *testing.T, connect Connect, start Factory) {
	d := StartDaemon(t, start)
	planner := connect(t, d, d.Tokens[Planner], Session{})
	coder := connect(t, d, d.Tokens[Coder], Session{})
	oncall := d.Client(t, Oncall)

	// untilWaiting returns once the daemon holds one long poll: the
	// condition, not a clock, says the poll is waiting.
	untilWaiting := func() {
		t.Helper()
		for waitingPolls(t, oncall) < 1 {
			select {
			case <-t.Context().Done():
				t.Fatal("no long poll ever waited")
			default:
			}
		}
	}
	var l leased
	waitLease := inBackground(t, coder, "lease_task", map[string]any{"wait_seconds": 20})
	untilWaiting()
	var s sent
	Call(t, planner, "send_task", map[string]any{"to": Coder, "intent": "arrives while the worker waits"}, &s)
	waitLease(&l)
	if len(l.Tasks) != 1 || l.Tasks[0].TaskID != s.TaskID {
		t.Fatalf("waiting lease_task = %+v, want %s", l, s.TaskID)
	}

	var r drained
	waitDrain := inBackground(t, planner, "drain_results", map[string]any{"wait_seconds": 20})
	untilWaiting()
	Call(t, coder, "post_result", map[string]any{"task_id": s.TaskID, "lease_id": l.Tasks[0].LeaseID, "status": "ok", "text": "done"}, nil)
	waitDrain(&r)
	if len(r.Results) != 1 || r.Results[0].TaskID != s.TaskID || r.Results[0].Text != "done" {
		t.Fatalf("waiting drain_results = %+v, want the result of %s", r, s.TaskID)
	}
	wantIn(t, "drain_results with wait_seconds 21", Refused(t, planner, "drain_results", map[string]any{"wait_seconds": 21}), "wait_seconds", "21", "0 to 20")

	// wait_result waits for one task's result; another task's result,
	// there already, comes back beside it.
	var first, second sent
	Call(t, planner, "send_task", map[string]any{"to": Coder, "intent": "first"}, &first)
	Call(t, planner, "send_task", map[string]any{"to": Coder, "intent": "second"}, &second)
	Call(t, coder, "lease_task", map[string]any{"max": 2}, &l)
	if len(l.Tasks) != 2 {
		t.Fatalf("lease_task max 2 = %+v, want both tasks", l)
	}
	Call(t, coder, "post_result", map[string]any{"task_id": second.TaskID, "lease_id": l.Tasks[1].LeaseID, "status": "ok", "text": "second done"}, nil)
	var w struct {
		Found  bool     `json:"found"`
		Result *result  `json:"result"`
		Others []result `json:"others"`
	}
	waitFirst := inBackground(t, planner, "wait_result", map[string]any{"task_id": first.TaskID, "wait_seconds": 20})
	untilWaiting()
	Call(t, coder, "post_result", map[string]any{"task_id": first.TaskID, "lease_id": l.Tasks[0].LeaseID, "status": "ok", "text": "first done"}, nil)
	waitFirst(&w)
	if !w.Found || w.Result == nil || w.Result.TaskID != first.TaskID || w.Result.Text != "first done" ||
		len(w.Others) != 1 || w.Others[0].TaskID != second.TaskID {
		t.Fatalf("wait_result(first) = %+v, want the first task's result and the second's beside it", w)
	}
	wantIn(t, "wait_result for a task already drained",
		Refused(t, planner, "wait_result", map[string]any{"task_id": first.TaskID}), "task_id", "already taken")
}

// inBackground calls a tool on another goroutine; the function it returns
// waits for the answer, which must be a success, and decodes it into out.
func inBackground(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any) func(out any) {
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
		done <- answer{res, err}
	}()
	return func(out any) {
		t.Helper()
		a := <-done
		if a.err != nil || a.res.IsError {
			t.Fatalf("%s(%v): %v %v", tool, args, a.err, a.res)
		}
		b, _ := json.Marshal(a.res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured content %s does not decode: %v", tool, b, err)
		}
	}
}

// testGuardedRepair: an operator finds a lease and requeues it under the
// lease id it saw; a stale lease id is refused naming the current lease;
// the old holder's late result is refused; force_error ends the task with
// an error its sender drains.
func testGuardedRepair(t *testing.T, connect Connect, start Factory) {
	d := StartDaemon(t, start)
	planner := connect(t, d, d.Tokens[Planner], Session{})
	coder := connect(t, d, d.Tokens[Coder], Session{})
	oncall := connect(t, d, d.Tokens[Oncall], Session{})

	var s sent
	Call(t, planner, "send_task", map[string]any{"to": Coder, "intent": "stuck work"}, &s)
	var l leased
	Call(t, coder, "lease_task", map[string]any{}, &l)
	first := l.Tasks[0].LeaseID
	var stale struct {
		Leases []task `json:"leases"`
	}
	var other sent
	Call(t, planner, "send_task", map[string]any{"to": Coder, "intent": "still queued"}, &other)
	var status struct {
		Queued   int    `json:"queued"`
		InFlight int    `json:"in_flight"`
		Tasks    []task `json:"tasks"`
	}
	Call(t, oncall, "queue_status", map[string]any{}, &status)
	if status.Queued != 1 || status.InFlight != 1 || len(status.Tasks) != 2 || status.Tasks[0].TaskID != s.TaskID || status.Tasks[0].LeaseID != first ||
		status.Tasks[1].TaskID != other.TaskID {
		t.Fatalf("queue_status = %+v, want the lease first, then the queued task", status)
	}
	Call(t, oncall, "queue_status", map[string]any{"limit": 1}, &status)
	if len(status.Tasks) != 1 || status.Tasks[0].TaskID != s.TaskID {
		t.Fatalf("queue_status limit 1 = %+v, want the lease alone", status)
	}
	queuedRepairs(t, planner, oncall, other)
	Call(t, oncall, "stale_leases", map[string]any{"older_than_seconds": 0}, &stale)
	if len(stale.Leases) != 1 || stale.Leases[0].LeaseID != first || stale.Leases[0].LeasedTo != Coder {
		t.Fatalf("stale_leases = %+v, want %s's lease %s", stale, Coder, first)
	}
	wantIn(t, "requeue without a reason", Refused(t, oncall, "requeue", map[string]any{"task_id": s.TaskID, "lease_id": first, "duplicate_risk": "operator_accepted"}), "reason")
	wrong := "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	wantIn(t, "requeue under another lease id",
		Refused(t, oncall, "requeue", map[string]any{"task_id": s.TaskID, "lease_id": wrong, "reason": "worker crashed", "duplicate_risk": "operator_accepted"}),
		"conflict", wrong, first, Coder)
	var out struct {
		Action string `json:"action"`
		State  string `json:"state"`
	}
	Call(t, oncall, "requeue", map[string]any{"task_id": s.TaskID, "lease_id": first, "reason": "worker crashed", "duplicate_risk": "operator_accepted"}, &out)
	if out.Action != mailbox.OutcomeRequeued || out.State != mailbox.TaskQueued {
		t.Fatalf("requeue = %+v, want requeued, queued", out)
	}
	wantIn(t, "the old holder's late post_result",
		Refused(t, coder, "post_result", map[string]any{"task_id": s.TaskID, "lease_id": first, "status": "ok", "text": "late"}), "conflict")

	Call(t, coder, "lease_task", map[string]any{}, &l)
	Call(t, oncall, "force_error", map[string]any{"task_id": s.TaskID, "lease_id": l.Tasks[0].LeaseID, "reason": "agent gone", "message": "coder stopped answering"}, &out)
	if out.Action != mailbox.OutcomeForcedError {
		t.Fatalf("force_error = %+v, want forced_error", out)
	}
	var r drained
	Call(t, planner, "drain_results", map[string]any{}, &r)
	if len(r.Results) != 1 || r.Results[0].Status != "error" || !r.Results[0].Forced || r.Results[0].ErrorMessage != "coder stopped answering" {
		t.Fatalf("drain_results after force_error = %+v, want the forced error", r)
	}
}

// queuedRepairs: a queued task (other) is moved, guarded by the agent
// seen; another canceled, its sender getting the error; then other is
// canceled by its sender.
func queuedRepairs(t *testing.T, planner, oncall *mcp.ClientSession, other sent) {
	var moved struct {
		Action    string `json:"action"`
		Recipient string `json:"recipient"`
	}
	wantIn(t, "a move guarded by another agent",
		Refused(t, oncall, "move_queued", map[string]any{"task_id": other.TaskID, "queued_for": Planner, "to": Planner, "reason": "coder is gone"}), "conflict", "queued for "+Coder)
	wantIn(t, "a move without queued_for", Refused(t, oncall, "move_queued", map[string]any{"task_id": other.TaskID, "to": Planner, "reason": "r"}), "queued_for")
	Call(t, oncall, "move_queued", map[string]any{"task_id": other.TaskID, "queued_for": Coder, "to": Planner, "reason": "coder is gone"}, &moved)
	if moved.Action != mailbox.OutcomeMoved || moved.Recipient != Planner {
		t.Fatalf("move_queued = %+v, want moved to %s", moved, Planner)
	}
	var dropped sent
	Call(t, planner, "send_task", map[string]any{"to": Coder, "intent": "never mind"}, &dropped)
	Call(t, oncall, "cancel_queued", map[string]any{"task_id": dropped.TaskID, "queued_for": Coder, "reason": "coder is gone"}, &moved)
	if moved.Action != mailbox.OutcomeCanceled {
		t.Fatalf("cancel_queued = %+v, want canceled", moved)
	}
	var gone drained
	Call(t, planner, "drain_results", map[string]any{}, &gone)
	if len(gone.Results) != 1 || gone.Results[0].Status != "error" || !strings.Contains(gone.Results[0].ErrorMessage, "coder is gone") {
		t.Fatalf("drain_results after cancel_queued = %+v, want the error naming the reason", gone)
	}
	Call(t, planner, "cancel_task", map[string]any{"task_id": other.TaskID}, nil)
}

func toolNames(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	res, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// testRefusals: the daemon's refusals are tool errors naming the argument,
// the value and what was expected, or the capability a token lacks; the
// operator's tools are listed only for a token that may repair.
func testRefusals(t *testing.T, connect Connect, start Factory) {
	d := StartDaemon(t, start)
	intern := connect(t, d, d.Tokens[Intern], Session{})
	planner := connect(t, d, d.Tokens[Planner], Session{})
	oncall := connect(t, d, d.Tokens[Oncall], Session{})

	wantIn(t, "send_task by a token that may send to nobody",
		Refused(t, intern, "send_task", map[string]any{"to": Coder, "intent": "x"}), "forbidden", "a2a.send."+Coder)
	wantIn(t, "send_task to a malformed agent id",
		Refused(t, planner, "send_task", map[string]any{"to": "Coder@Local", "intent": "x"}), "to:", "Coder@Local", "coder@local")
	wantIn(t, "send_task with a bad deadline",
		Refused(t, planner, "send_task", map[string]any{"to": Coder, "intent": "x", "deadline": "soon"}), "deadline", `"soon"`, "30m")
	wantIn(t, "send_task without an intent",
		Refused(t, planner, "send_task", map[string]any{"to": Coder, "intent": ""}), "intent:")
	wantIn(t, "post_result with an unknown status",
		Refused(t, intern, "post_result", map[string]any{"task_id": "6f9619ff-8b86-4d11-b42d-00c04fc964ff", "lease_id": "x", "status": "done"}), "status", `"done"`, "ok, partial, error or rejected")
	wantIn(t, "list_agents without a2a.read", Refused(t, intern, "list_agents", map[string]any{}), "forbidden", "a2a.read")

	operator := []string{"cancel_queued", "force_error", "move_queued", "queue_status", "requeue", "stale_leases"}
	for _, s := range []*mcp.ClientSession{intern, planner} {
		for _, name := range toolNames(t, s) {
			if slices.Contains(operator, name) {
				t.Errorf("a token that may not repair is offered %s", name)
			}
		}
	}
	names := toolNames(t, oncall)
	for _, want := range append(operator, "send_task", "lease_task", "post_result", "drain_results", "wait_result", "get_task", "reply", "cancel_task", "ask_input", "list_agents", "find_agents_by_skill") {
		if !slices.Contains(names, want) {
			t.Errorf("the operator's tools %v lack %s", names, want)
		}
	}
}

// testSchemas: every tool has an input and an output schema, and no
// property's or item's schema is a bare boolean (the SDK writes `true` for
// a field typed any, and the TypeScript SDK's client then refuses the
// whole list). additionalProperties may be a boolean: that is what it is
// for.
func testSchemas(t *testing.T, connect Connect, start Factory) {
	d := StartDaemon(t, start)
	oncall := connect(t, d, d.Tokens[Oncall], Session{})
	res, err := oncall.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: input schema %v, output schema %v; want both", tool.Name, tool.InputSchema != nil, tool.OutputSchema != nil)
			continue
		}
		if tool.Description == "" || tool.Annotations == nil {
			t.Errorf("%s: no description or annotations", tool.Name)
		}
		for what, schema := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			b, _ := json.Marshal(schema)
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			if where := boolSchema(v, ""); where != "" {
				t.Errorf("%s's %s schema has a boolean schema at %s: %s", tool.Name, what, where, b)
			}
		}
	}
}

// boolSchema returns where a schema holds a property or item schema that
// is a boolean.
func boolSchema(v any, at string) string {
	m, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); isBool {
			return at
		}
		return ""
	}
	for _, key := range []string{"items"} {
		if sub, ok := m[key]; ok {
			if w := boolSchema(sub, at+"/"+key); w != "" {
				return w
			}
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, sub := range props {
			if w := boolSchema(sub, at+"/properties/"+name); w != "" {
				return w
			}
		}
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		if subs, ok := m[key].([]any); ok {
			for i, sub := range subs {
				if w := boolSchema(sub, fmt.Sprintf("%s/%s/%d", at, key, i)); w != "" {
					return w
				}
			}
		}
	}
	return ""
}
