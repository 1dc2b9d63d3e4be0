package tui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/mailbox"
)

// Finding 4 of issue 37: with every pane on screen (a question waiting, a
// dead letter in the outbox), the focused pane shows its rows at 80x24
// and up, the others folded to their title line when there is no room
// for them; the header counts the agents probably gone and the dead
// letters, so the first key of an incident is on any screen.
func TestTheFocusedPaneShowsRowsWithEveryPaneOnScreen(t *testing.T) {
	t.Parallel()
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "receiver down", http.StatusBadGateway)
	}))
	defer refusing.Close()
	d := daemontest.Start(t, daemontest.Options{
		Config: func(c *config.Config) { c.PushMaxAttempts = 1 },
		Daemon: []daemon.Option{daemon.WithNotifier(func(o *notify.Options) { o.RetryMin, o.RetryMax = time.Millisecond, 2*time.Millisecond })},
	})
	c := newClient(t, d.URL())
	api := agentAPI{t, c}
	ctx := context.Background()
	if _, err := c.RegisterAgent(ctx, "coder@local", mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	// A dead letter: a notification the refusing webhook never took.
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-1","parts":[{"kind":"text","text":"hi"}]},` +
		`"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + refusing.URL + `/hook"}}}}`
	resp, err := http.Post(d.URL()+"/agents/coder@local/", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// 24 queued for coder, never seen: probably gone.
	api.fill("coder@local", "queued work", 24)
	// 24 leases, 24 results, 24 questions, a repair.
	api.fill("worker-a@local", "leased work", 24)
	api.leaseAll("worker-a@local", 24)
	for i := range 24 {
		id := api.send("worker-b@local", fmt.Sprintf("failing work %04d", i))
		_, lease := api.lease("worker-b@local")
		api.post(id, lease.LeaseID, mailbox.StatusError, fmt.Sprintf("result message %04d", i))
	}
	var asked []string
	for i := range 24 {
		id := api.send("worker-c@local", fmt.Sprintf("asking work %04d", i))
		_, lease := api.lease("worker-c@local")
		api.ask(id, lease.LeaseID, mailbox.StatusInputRequired, "which schema first?")
		asked = append(asked, id)
	}
	repaired := api.send("worker-d@local", "repaired work")
	_, lease := api.lease("worker-d@local")
	api.repair(mailbox.RepairRequest{TaskID: repaired, Reason: "layout test reason",
		Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: lease.LeaseID, Message: "given up"}})

	// What the focused pane's first row shows, pane by pane.
	firstRow := map[byte]func(f frame) bool{
		'1': func(f frame) bool { return f.contains("(a2a) hi") }, // the A2A task, queued first
		'2': func(f frame) bool { return f.contains("leased work 0001") },
		'3': func(f frame) bool { return f.contains("result message 0000") },
		'4': func(f frame) bool { return f.contains("layout test reason") },
		'5': func(f frame) bool { return f.contains("coder@local") && f.contains("probably gone") },
		'6': func(f frame) bool { return waitingLine(f, asked[0]) != "" },
		'7': func(f frame) bool {
			return f.contains("push_config_set") && f.lineContainsAll(" dead ", "push_config_set")
		},
	}
	for _, size := range []struct{ w, h int }{{80, 24}, {100, 30}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			r := runConsoleSized(t, c, Options{Addr: d.URL()}, size.w, size.h)
			f := r.scr.waitFor(t, "the header's counts", func(f frame) bool {
				return f.contains("gone 1") && f.contains("dead letters 1") && f.contains("waiting 24")
			})
			if !strings.Contains(f.lines[1], "gone 1") || !strings.Contains(f.lines[1], "dead letters 1") {
				t.Errorf("the header's second line lacks gone 1 or dead letters 1:\n%s", f.lines[1])
			}
			for key := byte('1'); key <= '7'; key++ {
				r.scr.press(char(rune(key)))
				name := paneID(key - '1').String()
				f := r.scr.waitFor(t, "pane "+string(key)+" focused, with its first row", func(f frame) bool {
					return firstRow[key](f) && strings.Contains(f.lineWith("["+string(key)+"] "+name), "═")
				})
				// The title says which rows are shown; every pane but
				// the focused one shows rows or is folded, never a
				// heading with no row under a title that says it has.
				title := f.lineWith("[" + string(key) + "] " + name)
				if !strings.Contains(title, name+" 1") || strings.Contains(title, name+" 0") {
					t.Errorf("focused %s, its title does not say it shows rows from the first: %q", name, title)
				}
				for other := byte('1'); other <= '7'; other++ {
					if other == key {
						continue
					}
					l := f.lineWith("[" + string(other) + "] " + paneID(other-'1').String())
					if l == "" {
						continue // not on screen (the Agents pane, on a short one)
					}
					if strings.Contains(l, " 1 of ") && !firstRow[other](f) {
						t.Errorf("focused %s, the title %q says row 1 is shown, and it is not:\n%s", name, strings.TrimSpace(l), f)
					}
				}
			}
		})
	}
}
