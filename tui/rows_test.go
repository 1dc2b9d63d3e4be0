package tui

import (
	"fmt"
	"testing"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

func TestSelectRowsFiltersAndSorts(t *testing.T) {
	src := newSource(t)
	m := newModel()
	m.receive(src.snapshot())
	for _, ev := range []mailbox.Event{
		src.send("worker-b@local", withKind("translate"), withIntent("translate the notes")),
		src.send("worker-a@local", withKind("summarize"), withIntent("summarize the INCIDENT")),
		src.send("worker-c@local", withKind("fetch"), withSender("auditor@local")),
	} {
		m.receive(ev)
	}
	r := m.rows()
	ids := func(idx []int32) []string {
		var out []string
		for _, i := range idx {
			out = append(out, r.queued[i].Task.Recipient)
		}
		return out
	}
	tests := []struct {
		name string
		vp   viewParams
		want []string
	}{
		{"age order is queue order", viewParams{}, []string{"worker-b@local", "worker-a@local", "worker-c@local"}},
		{"recipient", viewParams{sort: sortSpec{key: 'C'}}, []string{"worker-a@local", "worker-b@local", "worker-c@local"}},
		{"filter by kind", viewParams{filter: "fetch"}, []string{"worker-c@local"}},
		{"filter by intent, any case", viewParams{filter: "incident"}, []string{"worker-a@local"}},
		{"filter by sender", viewParams{filter: "auditor"}, []string{"worker-c@local"}},
		{"filter by recipient", viewParams{filter: "WORKER-B"}, []string{"worker-b@local"}},
		{"filter by id", viewParams{filter: "00002222"}, []string{"worker-a@local"}},
		{"filter matching nothing", viewParams{filter: "nope"}, nil},
	}
	for _, tt := range tests {
		got := ids(selectRows(r, paneQueue, tt.vp, staleness{}))
		if len(got) != len(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
				break
			}
		}
	}
}

func TestStaleOnlyAndAttemptSort(t *testing.T) {
	src := newSource(t)
	m := newModel()
	m.receive(src.snapshot())
	first := src.send("worker-a@local")
	m.receive(first)
	m.receive(src.lease("worker-a@local")) // leased at t0
	// Requeue and re-lease it so it is on attempt 2.
	m.receive(src.emit(src.s.DecideRepair(mailbox.RepairRequest{TaskID: first.Task.ID, Reason: "r",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, DuplicateRisk: mailbox.RiskOperatorAccepted}}, "ops", src.nowMs)))
	m.receive(src.lease("worker-a@local"))
	src.nowMs += 60_000
	m.receive(src.send("worker-b@local"))
	m.receive(src.lease("worker-b@local")) // leased a minute later
	r := m.rows()

	st := staleness{nowMs: src.nowMs + 30_000, afterMs: 45_000}
	stale := selectRows(r, paneLeases, viewParams{staleOnly: true}, st)
	if len(stale) != 1 || r.leases[stale[0]].Task.ID != first.Task.ID {
		t.Fatalf("stale only = %v, want just the lease held 90s", stale)
	}
	if n := r.countStale(st); n != 1 {
		t.Errorf("countStale = %d, want 1", n)
	}
	byAttempt := selectRows(r, paneLeases, viewParams{sort: sortSpec{key: 'N', desc: true}}, st)
	if r.leases[byAttempt[0]].Attempt != 2 {
		t.Errorf("attempt sort put attempt %d first, want the retried task", r.leases[byAttempt[0]].Attempt)
	}
}

func TestFormatAge(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{0, "0s"},
		{59 * time.Second, "59s"},
		{61 * time.Second, "1m01s"},
		{2*time.Hour + 3*time.Minute, "2h03m"},
		{50 * time.Hour, "2d02h"},
	}
	for _, tt := range tests {
		if got := formatAge(tt.in); got != tt.want {
			t.Errorf("formatAge(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormatDeadline(t *testing.T) {
	now := int64(1_000_000)
	past, future := now-12_000, now+42_000
	tests := []struct {
		in      *int64
		want    string
		pastDue bool
	}{
		{nil, "-", false},
		{&future, "in 42s", false},
		{&past, "! overdue 12s", true},
	}
	for _, tt := range tests {
		got, pastDue := formatDeadline(tt.in, now)
		if got != tt.want || pastDue != tt.pastDue {
			t.Errorf("formatDeadline(%v) = %q, %v; want %q, %v", tt.in, got, pastDue, tt.want, tt.pastDue)
		}
	}
}

func TestContainsFold(t *testing.T) {
	tests := []struct {
		s, sub string
		want   bool
	}{
		{"worker-a@local", "A@LOC", true},
		{"worker-a@local", "", true},
		{"", "x", false},
		{"übersetzen", "SETZ", true},
		{"short", "longer than s", false},
	}
	for _, tt := range tests {
		if got := containsFold(tt.s, tt.sub); got != tt.want {
			t.Errorf("containsFold(%q, %q) = %v, want %v", tt.s, tt.sub, got, tt.want)
		}
	}
}

// The Waiting pane's rows: the filter finds a question by its text, as
// well as by the task's ids and agents; stale-only keeps the questions
// unanswered past the limit; Shift-A puts the freshest first.
func TestWaitingRowsFilterByQuestionAndStaleness(t *testing.T) {
	src := newSource(t)
	m := newModel()
	m.receive(src.snapshot())
	ask := func(recipient, question string) string {
		sent := src.send(recipient)
		m.receive(sent)
		m.receive(src.lease(recipient))
		m.receive(src.emit(src.s.DecidePostResult(mailbox.Result{TaskID: sent.Task.ID, Status: mailbox.StatusInputRequired,
			Content: []mailbox.Content{{Type: mailbox.ContentText, Text: question}}}, src.nowMs)))
		return sent.Task.ID
	}
	old := ask("worker-a@local", "Which DATABASE first?")
	src.nowMs += 90_000
	fresh := ask("worker-b@local", "may I restart the cache?")
	r := m.rows()
	ids := func(idx []int32) []string {
		var out []string
		for _, i := range idx {
			out = append(out, r.waiting[i].Task.ID)
		}
		return out
	}
	st := staleness{nowMs: src.nowMs, afterMs: 60_000}
	tests := []struct {
		name string
		vp   viewParams
		want []string
	}{
		{"longest waiting first", viewParams{sort: naturalSort(paneWaiting)}, []string{old, fresh}},
		{"freshest first", viewParams{sort: sortSpec{key: 'A'}}, []string{fresh, old}},
		{"filter by question, any case", viewParams{sort: naturalSort(paneWaiting), filter: "database"}, []string{old}},
		{"filter by the worker that asked", viewParams{sort: naturalSort(paneWaiting), filter: "worker-b"}, []string{fresh}},
		{"stale only", viewParams{sort: naturalSort(paneWaiting), staleOnly: true}, []string{old}},
	}
	for _, tt := range tests {
		if got := ids(selectRows(r, paneWaiting, tt.vp, st)); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
	if n := r.countStaleWaiting(st); n != 1 {
		t.Errorf("countStaleWaiting = %d, want 1", n)
	}
}
