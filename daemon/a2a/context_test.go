package a2a_test

import (
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
)

// A message's data part is the task's context for a native worker, in
// both generations; the message itself, with the part, is what the A2A
// side reads back.
func TestDataPartsAreTheTaskContext(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")

	sent := call03(t, base, "message/send", msg03("c1", `[{"kind":"text","text":"review"},{"kind":"data","data":{"repo":"mailroom","pr":42}},{"kind":"data","data":{"second":true}}]`, ``))
	task, _ := it.lease("coder@local")
	if task.ID != sent.ID || string(task.Context) != `{"repo":"mailroom","pr":42}` {
		t.Fatalf("the worker leased %s with context %s; want the first data part", task.ID, task.Context)
	}
	got := call03(t, base, "tasks/get", `{"id":"`+sent.ID+`"}`)
	if len(got.History) != 1 || !strings.Contains(string(got.History[0]), `{"data":{"repo":"mailroom","pr":42},"kind":"data"}`) {
		t.Fatalf("history %s, want the message with its data part", got.History)
	}

	// A message without a data part carries no context.
	call03(t, base, "message/send", msg03("c2", `[{"kind":"text","text":"plain"}]`, ``))
	task, _ = it.lease("coder@local")
	if task.Context != nil {
		t.Fatalf("a message without a data part gave context %s", task.Context)
	}
}
