package tui

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/mailbox"
)

// shownRange reads "[n] Name a-b of N" from a pane's title.
func shownRange(f frame, pane string) (first, last, total int, ok bool) {
	re := regexp.MustCompile(regexp.QuoteMeta(pane) + ` (\d[\d,]*)(?:-(\d[\d,]*))? of ([\d,]+)`)
	for _, l := range f.lines {
		if m := re.FindStringSubmatch(l); m != nil {
			num := func(s string) int {
				n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
				return n
			}
			first, last = num(m[1]), num(m[1])
			if m[2] != "" {
				last = num(m[2])
			}
			return first, last, num(m[3]), true
		}
	}
	return 0, 0, 0, false
}

// A console opened on a mailbox that already holds work opens every pane
// on its first row, selected and visible: the Leases pane, oldest first,
// shows the oldest lease. The selected row stays on screen and highlighted
// after a filter is cleared, the sort changes and rows arrive, and each
// title says which rows are shown.
func TestPanesOpenOnTheirFirstRowSelected(t *testing.T) {
	t.Parallel()
	d, api := startMailbox(t)
	leased := api.fill("worker-a@local", "lease", 30)
	api.leaseAll("worker-a@local", 30)
	queued := api.fill("worker-b@local", "queued", 6)
	for range 3 {
		task, lease := api.lease("worker-b@local")
		api.post(task.ID, lease.LeaseID, mailbox.StatusError, "failed "+task.IntentText)
	}
	var results []string
	view, err := api.c.Queue(t.Context(), mailbox.QueueFilter{Limit: mailbox.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range view.Results {
		results = append(results, r.TaskID)
	}

	forSizes(t, func(t *testing.T, w, h int) {
		r := runConsoleSized(t, api.c, Options{Addr: d.URL()}, w, h)
		f := r.scr.waitForText(t, "[3] Results 1")
		// Queue has the focus: its first row inverted; the others underlined.
		if !inverted(f, short(queued[3])) {
			t.Errorf("the Queue's first row %s is not selected:\n%s", short(queued[3]), f)
		}
		for _, id := range []string{leased[0], results[0]} {
			if !highlighted(f, short(id)) {
				t.Errorf("the first row %s is not on screen, selected:\n%s", short(id), f)
			}
		}
		first, last, total, ok := shownRange(f, "[2] Leases")
		if !ok || first != 1 || last < 2 || total != 30 {
			t.Errorf("Leases title says %d-%d of %d, want 1-(rows shown) of 30:\n%s", first, last, total, f)
		}
		if _, _, n, _ := shownRange(f, "[1] Queue"); n != 3 {
			t.Errorf("Queue title counts %d, want 3:\n%s", n, f)
		}

		// The oldest lease is where the selection is.
		r.scr.press(char('2'))
		r.scr.waitFor(t, "the oldest lease selected", func(f frame) bool { return inverted(f, short(leased[0])) })

		// G: the last lease, on screen, and the title follows.
		r.scr.press(char('G'))
		f = r.scr.waitFor(t, "the newest lease selected", func(f frame) bool { return inverted(f, short(leased[29])) })
		if first, last, _, _ := shownRange(f, "[2] Leases"); last != 30 || first > 29 {
			t.Errorf("after G the title says %d-%d, want it to end at 30:\n%s", first, last, f)
		}

		// Select lease 17 through a filter, then clear it: 17 stays
		// selected and on screen among all 30.
		r.scr.press(char('/'))
		r.scr.typeText("lease 0017")
		r.scr.waitForText(t, "filter:/lease 0017")
		r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEscape))
		f = r.scr.waitFor(t, "lease 17 selected among all", func(f frame) bool {
			return !f.contains("filter:/") && inverted(f, short(leased[16]))
		})
		if first, last, _, _ := shownRange(f, "[2] Leases"); first > 17 || last < 17 {
			t.Errorf("with lease 17 selected the title says %d-%d:\n%s", first, last, f)
		}

		// The sort changes (intent, then reversed): still on screen.
		r.scr.press(char('I'))
		r.scr.waitFor(t, "lease 17 selected, by intent", func(f frame) bool {
			return f.contains("sort:intent↑") && inverted(f, short(leased[16]))
		})
		r.scr.press(char('I'))
		f = r.scr.waitFor(t, "lease 17 selected, by intent reversed", func(f frame) bool {
			return f.contains("sort:intent↓") && inverted(f, short(leased[16]))
		})
		if first, last, _, _ := shownRange(f, "[2] Leases"); first > 14 || last < 14 {
			t.Errorf("lease 17 is 14th by intent reversed, the title says %d-%d:\n%s", first, last, f)
		}
		r.scr.press(char('I')) // back to the oldest first

		// Rows arrive above and below: still on screen, still selected.
		ids := api.fill("worker-a@local", "late", 2)
		api.leaseAll("worker-a@local", 2)
		f = r.scr.waitFor(t, "the new leases", func(f frame) bool {
			_, _, n, _ := shownRange(f, "[2] Leases")
			return n == 32 && f.contains("sort:age↓")
		})
		if !inverted(f, short(leased[16])) {
			t.Errorf("after new leases arrived lease 17 is not selected on screen:\n%s", f)
		}
		// Return the mailbox as the other size found it.
		for _, id := range ids {
			e, _ := api.entry(id)
			api.repair(mailbox.RepairRequest{TaskID: id, Reason: "test cleanup",
				Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: e.LeaseID, Message: "cleanup"}})
		}
		if l := f.lineWith(short(leased[16])); strings.Contains(l, "…") && w >= 200 {
			t.Errorf("a 200-column pane cuts a row: %q", l)
		}
	})
}

// The title counts with thousands separators, and says how many rows a
// filter left of how many.
func TestTitleSaysWhereYouAreInALargePane(t *testing.T) {
	src := newSource(t)
	for i := range 5000 {
		src.send(fmt.Sprintf("worker-%d@local", i%3))
	}
	for i := range 5000 {
		src.lease(fmt.Sprintf("worker-%d@local", i%3))
	}
	fb := newFakeBackend(src)
	forSizes(t, func(t *testing.T, w, h int) {
		r := runConsoleSized(t, fb, Options{}, w, h)
		r.scr.waitForText(t, "of 5,000")
		r.scr.press(char('2'), key(tcell.KeyPgDn), key(tcell.KeyPgDn))
		f := r.scr.waitFor(t, "two pages down", func(f frame) bool {
			first, _, _, _ := shownRange(f, "[2] Leases")
			return first > 1
		})
		first, last, total, _ := shownRange(f, "[2] Leases")
		if total != 5000 || last <= first || !f.contains(fmt.Sprintf("[2] Leases %d-%d of 5,000", first, last)) {
			t.Errorf("the Leases title after two pages down says %d-%d of %d:\n%s", first, last, total, f)
		}
		r.scr.press(char('/'))
		r.scr.typeText("worker-1@")
		f = r.scr.waitForText(t, "of 1,667 filtered from 5,000")
		if first, _, _, _ := shownRange(f, "[2] Leases"); first < 1 {
			t.Errorf("a filtered title lacks the rows shown:\n%s", f)
		}
	})
}
