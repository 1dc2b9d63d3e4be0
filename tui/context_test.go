package tui

import (
	"encoding/json"
	"testing"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/mailbox"
)

// A task's context is what the worker gets beside the intent; the
// operator reads it on one line of the detail view, escaped.
func TestDetailViewShowsTheTaskContext(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	out, err := c.Send(t.Context(), mailbox.Task{Sender: "planner@local", Recipient: "worker-a@local", IntentText: "summarize the diff",
		Context: json.RawMessage(`{ "repo": "mailroom",  "files": ["a.go", "[red]b.go"] }`)})
	if err != nil {
		t.Fatal(err)
	}
	r := runConsoleSized(t, c, Options{Addr: d.URL()}, 120, 40)
	r.scr.waitForText(t, "summarize the diff")
	r.scr.press(key(tcell.KeyEnter))
	f := r.scr.waitForText(t, "Task "+out.TaskID)
	if l := f.lineWith("task context"); l == "" || !f.contains(`task context {"repo":"mailroom","files":["a.go","[red]b.go"]}`) {
		t.Errorf("the detail view does not show the context on one line, tags escaped: %q\n%s", l, f)
	}
}
