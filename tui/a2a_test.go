package tui

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/mailbox"
)

// a2aSend sends a v0.3 message through the daemon's A2A edge (non-blocking)
// and returns the task id.
func a2aSend(t *testing.T, url, agent, messageID, parts string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"` + messageID + `","contextId":"ctx-` + messageID + `","parts":` + parts + `},"configuration":{"blocking":false}}}`
	return a2aCall(t, url, agent, body)
}

func a2aCall(t *testing.T, url, agent, body string) string {
	t.Helper()
	resp, err := http.Post(url+"/agents/"+agent+"/", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep struct {
		Result struct {
			ID string `json:"id"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil || rep.Error != nil {
		t.Fatalf("A2A call %s: %v %s", body, err, rep.Error)
	}
	return rep.Result.ID
}

// What came through the A2A edge is marked in the panes; its detail view
// shows the message's parts and ids; a canceled task leaves the panes and
// its detail says who canceled it; the Agents pane names the registered
// agents and their skills; the repair dialogs work on A2A tasks as on any.
func TestConsoleShowsA2ATasksAndRegisteredAgents(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	if _, err := c.RegisterAgent(t.Context(), "coder@local", mailbox.AgentCard{Name: "Coder", Skills: []mailbox.AgentSkill{{ID: "fix", Name: "Fix"}, {ID: "review", Name: "Review"}}}); err != nil {
		t.Fatal(err)
	}
	queued := a2aSend(t, d.URL(), "coder@local", "m1", `[{"kind":"text","text":"fix the flaky test"},{"kind":"data","data":{"ticket":42}},{"kind":"file","file":{"name":"log.txt","mimeType":"text/plain","uri":"https://example.com/log.txt"}}]`)
	native := api.send("coder@local", "a native task")
	leased := a2aSend(t, d.URL(), "coder@local", "m2", `[{"kind":"text","text":"review the PR"}]`)
	canceled := a2aSend(t, d.URL(), "coder@local", "m3", `[{"kind":"text","text":"never mind this"}]`)
	a2aCall(t, d.URL(), "coder@local", `{"jsonrpc":"2.0","id":2,"method":"tasks/cancel","params":{"id":"`+canceled+`"}}`)
	// coder@local leases the first three, in send order; the fourth waits.
	for _, want := range []string{queued, native, leased} {
		if task, _ := api.lease("coder@local"); task.ID != want {
			t.Fatalf("leased %s, want %s", task.ID, want)
		}
	}
	waiting := a2aSend(t, d.URL(), "coder@local", "m4", `[{"kind":"text","text":"waits in the queue"}]`)

	r := runConsoleSized(t, c, Options{Addr: d.URL()}, 120, 40)
	f := r.scr.waitForText(t, "review the PR")
	if l := f.lineWith("review the PR"); !strings.Contains(l, "(a2a) review the PR") {
		t.Errorf("the leased A2A task is not marked: %q\n%s", l, f)
	}
	if l := f.lineWith("a native task"); l == "" || strings.Contains(l, "(a2a)") {
		t.Errorf("the native task is missing or marked as A2A: %q\n%s", l, f)
	}
	if l := f.lineWith(short(waiting)); !strings.Contains(l, "(a2a) waits in the queue") {
		t.Errorf("the queued A2A task is not marked in the Queue pane: %q\n%s", l, f)
	}
	if f.contains("never mind this") {
		t.Errorf("the canceled task is still in a pane:\n%s", f)
	}

	// The Agents pane: the registered agent, its card's name and skills.
	r.scr.press(char('5'))
	r.scr.waitFor(t, "the registered agent", func(f frame) bool {
		return strings.Contains(agentLine(f, "coder@local"), `A2A "Coder" skills fix,review`)
	})

	// The detail of the leased A2A task: ids and parts.
	r.scr.press(char('2'), key(tcell.KeyDown), key(tcell.KeyDown), key(tcell.KeyEnter))
	f = r.scr.waitForText(t, "Task "+leased)
	for _, want := range []string{"a2a v0.3 message m2", "context ctx-m2", "parts text: review the PR"} {
		if !f.contains(want) {
			t.Errorf("the A2A task's detail lacks %q:\n%s", want, f)
		}
	}
	r.scr.press(key(tcell.KeyEscape))

	// A repair works on an A2A lease as on any: force an error, and the
	// A2A caller reads the task failed.
	r.scr.press(char('E'))
	r.scr.waitForText(t, "Force an error result")
	r.scr.typeText("worker gone")
	r.scr.press(key(tcell.KeyEnter))
	r.scr.typeText("the worker died")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "forced error on "+short(leased))
	f = r.scr.waitFor(t, "the forced result", func(f frame) bool { return f.contains("error (forced)") })
	if l := f.lineWith("error (forced)"); !strings.Contains(l, "(a2a) the worker died") {
		t.Errorf("the A2A task's forced result is not marked in the Results pane: %q\n%s", l, f)
	}
	resp, err := http.Post(d.URL()+"/agents/coder@local/", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"`+leased+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Result struct {
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got.Result.Status.State != "failed" {
		t.Fatalf("the A2A caller reads the force-errored task as %+v, %v; want failed", got, err)
	}
}

// The detail view of an A2A message with every kind of part, and of a
// canceled task, as the operator reads them.
func TestA2ADetailRendersPartsAndCancel(t *testing.T) {
	rec := mailbox.TaskRecord{
		Task: mailbox.Task{ID: "6f9619ff-8b86-4d11-b42d-00c04fc964ff", Sender: "caller@a2a", Recipient: "coder@local", IntentText: "check",
			A2A: &mailbox.A2AOrigin{Version: "1.0", MessageID: "m9", ContextID: "ctx-9",
				Message: json.RawMessage(`{"role":"ROLE_USER","messageId":"m9","parts":[{"text":"check the migration"},{"data":{"rows":3}},{"url":"https://example.com/m.sql","mediaType":"application/sql","filename":"m.sql"},{"raw":"aGVsbG8=","filename":"h.txt"}]}`)}},
		State:   mailbox.TaskCanceled,
		History: []mailbox.HistoryEntry{{Seq: 1, Type: mailbox.EventTaskSent}, {Seq: 2, AtMs: 1735689600000, Type: mailbox.EventTaskCanceled, Principal: "alice@local", Reason: "superseded"}},
	}
	text := renderDetail(rec.Task.ID, detail{record: rec, known: true}, 1735689600000)
	for _, want := range []string{"a2a[::-] v1.0 message m9", "context[::-] ctx-9", "parts[::-] text: check the migration", "data: {\"rows\":3}",
		"file: m.sql (application/sql) https://example.com/m.sql", "file: h.txt (-) 6 bytes inline", "canceled[-] by alice@local", ": superseded"} {
		if !strings.Contains(text, want) {
			t.Errorf("detail lacks %q:\n%s", want, text)
		}
	}
}
