package tui

import (
	"strings"
	"testing"
)

// z zooms the focused pane to the whole screen below the header, showing
// more of its rows, and back.
func TestZoomTheFocusedPane(t *testing.T) {
	t.Parallel()
	d, api := startMailbox(t)
	api.fill("worker-a@local", "lease", 70)
	api.leaseAll("worker-a@local", 70)
	api.send("worker-b@local", "not yet leased")
	forSizes(t, func(t *testing.T, w, h int) {
		r := runConsoleSized(t, api.c, Options{Addr: d.URL()}, w, h)
		r.scr.waitForText(t, "not yet leased")
		r.scr.press(char('2'))
		f := r.scr.waitForText(t, "<R> requeue")
		_, before, _, _ := shownRange(f, "[2] Leases")

		r.scr.press(char('z'))
		f = r.scr.waitForText(t, "zoomed")
		_, after, _, _ := shownRange(f, "[2] Leases")
		for _, other := range []string{"[1] Queue", "[3] Results", "[4] Audit"} {
			if f.contains(other) {
				t.Errorf("zoomed, the screen still shows %s:\n%s", other, f)
			}
		}
		// Everything but the header, the outcome line and the hint bar:
		// the border and the headings take three rows.
		if want := min(70, h-4-3); after != want {
			t.Errorf("zoomed, the Leases pane shows rows 1-%d, want 1-%d:\n%s", after, want, f)
		}
		if after <= before {
			t.Errorf("zoomed the pane shows %d rows, before %d", after, before)
		}
		if !f.contains("mailroom ") || !f.contains("<q> quit") {
			t.Errorf("zoomed, the header or the hint bar went:\n%s", f)
		}

		// Another pane, zoomed in its turn; z again: all four back.
		r.scr.press(char('1'))
		f = r.scr.waitForText(t, "[1] Queue")
		if f.contains("[2] Leases") {
			t.Errorf("the zoom did not follow the focus:\n%s", f)
		}
		r.scr.press(char('z'))
		f = r.scr.waitForNoText(t, "zoomed")
		for _, pane := range []string{"[1] Queue", "[2] Leases", "[3] Results", "[4] Audit"} {
			if !f.contains(pane) {
				t.Errorf("unzoomed, the screen lacks %s:\n%s", pane, f)
			}
		}
	})
}

// Columns are capped: a 90-character agent id is cut with …, and the
// other columns stay on screen; the intent takes the rest.
func TestLongAgentIDsAreCut(t *testing.T) {
	t.Parallel()
	d, api := startMailbox(t)
	agent := "build-agent-" + strings.Repeat("x", 69) + "@ci.local"
	if len(agent) != 90 {
		t.Fatalf("agent id is %d characters", len(agent))
	}
	id := api.send(agent, "compile the release")
	_, lease := api.lease(agent)
	queued := api.send(agent, "compile the docs")
	forSizes(t, func(t *testing.T, w, h int) {
		r := runConsoleSized(t, api.c, Options{Addr: d.URL()}, w, h)
		f := r.scr.waitForText(t, "[2] Leases 1 of 1")
		lease, row := short(lease.LeaseID), f.lineWith(short(id))
		cut := agent[:agentCap(w-2)-1] + "…"
		for _, want := range []string{cut, " 1 ", lease, "compile the release"} {
			if !strings.Contains(row, want) {
				t.Errorf("the lease row lacks %q: %q", want, row)
			}
		}
		if strings.Contains(row, agent) {
			t.Errorf("the lease row shows the 90-character id whole: %q", row)
		}
		if q := f.lineWith(short(queued)); !strings.Contains(q, "compile the docs") {
			t.Errorf("the queue row lost its intent: %q", q)
		}
		if w >= 200 && !strings.Contains(row, "planner@local") {
			t.Errorf("at %d columns the sender should be on screen too: %q", w, row)
		}
	})
}
