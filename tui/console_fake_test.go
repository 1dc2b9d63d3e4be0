package tui

import (
	"testing"

	"github.com/gdamore/tcell/v2"
)

func TestDialogFlowOnFake(t *testing.T) {
	src := newSource(t)
	fb := newFakeBackend(src)
	src.send("worker-a@local", withKind("summarize"), withIntent("summarize the report"))
	src.lease("worker-a@local")
	r := runConsole(t, fb, Options{})
	r.scr.waitForText(t, "summarize the report")
	r.scr.press(char('2'), char('R'))
	f := r.scr.waitForText(t, "Requeue task")
	t.Logf("\n%s", f)
	r.scr.press(key(tcell.KeyEnter))
	f = r.scr.waitForNoText(t, "Requeue task")
	r.scr.press(char('R'), key(tcell.KeyBacktab))
	r.scr.typeText("worker crashed")
	r.scr.press(key(tcell.KeyTab), key(tcell.KeyTab), key(tcell.KeyEnter))
	f = r.scr.waitForText(t, "requeued")
	t.Logf("\n%s", f)
}
