package tui

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"
)

// A task sent through Covenant's dialect shows, in its detail view, the
// public keys its sender and recipient came with, each on its own labelled
// line, in full, on an 80-column screen; a native task shows none.
func TestDetailViewShowsCovenantKeys(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	const (
		id           = "c0ffee00-0000-4000-8000-000000000001"
		senderKey    = "4wBqpZM9xaSheZzJSMawUKKwhdpChKbZ5eu5ky4Vigw"
		recipientKey = "JEKNVnkbo3jma5nREBBJCDoXFVeKkD56V3xKrvRmWxFG" // 44 characters, the longest
	)
	body := `{"id":"` + id + `","sender":{"display":"alice@local","pubkey":"` + senderKey + `"},"recipient":{"display":"bob@local","pubkey":"` + recipientKey + `"},"intent_text":"fetch papers"}`
	resp, err := http.Post(d.URL()+"/compat/covenant/a2a/tasks", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the Covenant send answered %d", resp.StatusCode)
	}
	native := agentAPI{t, c}.send("bob@local", "a native task")

	r := runConsoleSized(t, c, Options{Addr: d.URL()}, 80, 40)
	r.scr.waitForText(t, "a native task")
	r.scr.press(char('1'), key(tcell.KeyEnter))
	f := r.scr.waitForText(t, "Task "+id)
	for _, want := range []string{"covenant sender key " + senderKey, "covenant recipient key " + recipientKey} {
		if l := f.lineWith(want); l == "" {
			t.Errorf("the detail view has no line %q:\n%s", want, f)
		}
	}
	if l := f.lineWith("sender alice@local"); !strings.Contains(l, "recipient bob@local") {
		t.Errorf("the detail view's sender line is %q:\n%s", l, f)
	}
	r.scr.press(key(tcell.KeyEscape))
	r.scr.waitForNoText(t, "Task "+id)

	r.scr.press(key(tcell.KeyDown), key(tcell.KeyEnter))
	f = r.scr.waitForText(t, "Task "+native)
	if f.contains("covenant") {
		t.Errorf("a native task's detail speaks of Covenant:\n%s", f)
	}
}
