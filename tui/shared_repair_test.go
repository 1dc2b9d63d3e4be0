package tui

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/mailbox"
)

// role is what an instance's /healthz says it is in a shared store.
func role(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h httpapi.HealthResponse
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || h.Store == nil {
		t.Fatalf("healthz of %s: %+v, %v", base, h, err)
	}
	return h.Store.Role
}

// Two operators, each with a console on a different instance of one
// shared mailbox, requeue the same lease at the same moment: the lease id
// guard is still a compare-and-set, so exactly one requeues it and the
// other is shown the conflict, and the mailbox holds one requeue.
func TestTwoConsolesOnTwoInstancesRepairTheSameLease(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	onPG := func(c *config.Config) {
		c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
		c.PostgresCampaignInterval = 20 * time.Millisecond
	}
	a := daemontest.Start(t, daemontest.Options{Config: onPG})
	waitUntil(t, "a to lead", func() bool { return role(t, a.URL()) == "leader" })
	b := daemontest.Start(t, daemontest.Options{Config: onPG})
	if got := role(t, b.URL()); got != "follower" {
		t.Fatalf("b is %s, want follower", got)
	}
	ca, cb := newClient(t, a.URL()), newClient(t, b.URL())
	api := agentAPI{t, ca}
	id := api.send("worker-a@local", "rebuild the search index")
	_, lease := api.lease("worker-a@local")

	consoles := []*running{runConsole(t, ca, Options{Addr: a.URL()}), runConsole(t, cb, Options{Addr: b.URL()})}
	// Each header says which instance the console is on and its part.
	if f := consoles[0].scr.waitForText(t, "leader (epoch"); !strings.Contains(f.lines[0], a.URL()) {
		t.Errorf("console 0's header: %q, want it on %s, leading", f.lines[0], a.URL())
	}
	if f := consoles[1].scr.waitForText(t, "follower of "+a.URL()); !strings.Contains(f.lines[0], b.URL()) {
		t.Errorf("console 1's header: %q, want it on %s, following %s", f.lines[0], b.URL(), a.URL())
	}
	for _, r := range consoles {
		r.scr.waitForText(t, "rebuild the search index")
		f := openRequeue(t, r, id)
		if !f.contains(mailbox.ShortID(lease.LeaseID)) && !f.contains(lease.LeaseID) {
			t.Fatalf("the requeue dialog does not show the lease %s:\n%s", lease.LeaseID, f)
		}
		r.scr.typeText("worker-a is wedged")
	}
	var wg sync.WaitGroup
	for _, r := range consoles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
		}()
	}
	wg.Wait()

	won, refused := 0, 0
	for i, r := range consoles {
		f := r.scr.waitFor(t, "the repair's outcome", func(f frame) bool {
			return f.contains("requeued "+short(id)+" (attempt 1)") || f.contains("Lease changed") || f.contains("The lease changed while this dialog was open")
		})
		switch {
		case f.contains("requeued " + short(id) + " (attempt 1)"):
			won++
		case f.contains("Lease changed"):
			// The daemon refused the repair: the lease it was guarded by
			// was gone.
			refused++
			for _, want := range []string{short(lease.LeaseID), "Nothing was changed", "queued"} {
				if !f.contains(want) {
					t.Errorf("console %d's conflict lacks %q:\n%s", i, want, f)
				}
			}
		default:
			// The winner's requeue reached this console's stream before
			// its keys did: the dialog says so and offers no confirm.
			refused++
			for _, want := range []string{short(lease.LeaseID), "now: no lease"} {
				if !f.contains(want) {
					t.Errorf("console %d's dialog lacks %q:\n%s", i, want, f)
				}
			}
		}
	}
	if won != 1 || refused != 1 {
		t.Fatalf("%d consoles requeued and %d were refused, want exactly one of each", won, refused)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs, err := ca.Audit(ctx, id, 10)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rec := range recs {
		if strings.Contains(rec.Action, "requeue") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the audit holds %d requeues of the task, want 1: %+v", n, recs)
	}
}
