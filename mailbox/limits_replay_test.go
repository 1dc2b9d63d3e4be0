package mailbox_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/mailbox"
)

// randomLimits are small enough to bite within a few hundred events.
func randomLimits(rng *rand.Rand) mailbox.Limits {
	return mailbox.Limits{RetainDone: rng.IntN(12), ResultCacheMax: rng.IntN(40), ResultCacheAgeMs: rng.Int64N(120_000), AuditMax: 1 + rng.IntN(12)}
}

// limitedLog plays n events of realistic traffic under random limits that
// change now and then, as a daemon restarted with other limits would, and
// sends ids of forgotten tasks again, some as twins of a task whose result
// is cached (answered with result_replayed). recorded says whether the limits are
// in the log (limits_set events, as this version writes it) or only in
// force while it was written (as an older version did). It returns the log
// and the state that wrote it.
func limitedLog(t *testing.T, seed uint64, n int, recorded bool) ([]mailbox.Event, *mailbox.State) {
	t.Helper()
	w := storetest.NewWorkload(seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	var (
		log     []mailbox.Event
		drained []string
		sent    = map[string]mailbox.Task{}
		atMs    int64
	)
	apply := func(ev mailbox.Event) {
		t.Helper()
		ev.Seq = w.State.Seq + 1
		if err := w.State.Apply(ev); err != nil {
			t.Fatalf("the writer refuses its own %s: %v", ev.Type, err)
		}
		log = append(log, ev)
	}
	setLimits := func() {
		l := randomLimits(rng)
		if !recorded {
			w.State.Limits = l
		} else if ev, ok := w.State.DecideLimits(l, atMs); ok {
			apply(ev)
		}
	}
	resend := func() {
		for _, i := range rng.Perm(len(drained)) {
			if _, remembered := w.State.Task(drained[i]); remembered {
				continue
			}
			task := mailbox.Task{Sender: "planner@local", Recipient: "coder@local", IntentText: "once more"}
			if cached := w.State.CachedResults(); len(cached) > 0 && rng.IntN(2) == 0 {
				task = sent[cached[rng.IntN(len(cached))].TaskID]
				if _, live := w.State.LiveDuplicate(task); live {
					return
				}
			}
			task.ID = drained[i]
			ev, err := w.State.DecideSend(task, atMs)
			if err != nil {
				t.Fatalf("sending forgotten task %s again: %v", task.ID, err)
			}
			apply(ev)
			return
		}
	}
	setLimits()
	for len(log) < n {
		switch r := rng.IntN(100); {
		case r < 2:
			setLimits()
		case r < 5:
			resend()
		default:
			ev := w.Next(t)
			log, atMs = append(log, ev), ev.AtMs
			switch ev.Type {
			case mailbox.EventTaskSent:
				sent[ev.Task.ID] = *ev.Task
			case mailbox.EventResultDrained:
				drained = append(drained, ev.TaskID)
			}
		}
	}
	return log, w.State
}

// replay applies evs to s, which may already hold a prefix of the log.
func replay(t *testing.T, s *mailbox.State, evs []mailbox.Event) *mailbox.State {
	t.Helper()
	for _, ev := range evs {
		if err := s.Apply(ev); err != nil {
			t.Fatalf("replay with limits starting as %v: %v", s.Limits, err)
		}
	}
	return s
}

// stateWith is a new state configured with l, as a daemon or console
// configured with l made it before limits were logged.
func stateWith(l mailbox.Limits) *mailbox.State {
	s := mailbox.NewState()
	s.Limits = l
	return s
}

func snapshotJSON(t *testing.T, s *mailbox.State) string {
	t.Helper()
	b, err := json.Marshal(s.Snapshot(0))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRandomLogReplaysTheSameUnderAnyLimits(t *testing.T) {
	for seed := range uint64(8) {
		log, writer := limitedLog(t, seed, 800, true)
		want := snapshotJSON(t, writer)
		rng := rand.New(rand.NewPCG(seed, 10))
		for _, initial := range []mailbox.Limits{mailbox.DefaultLimits(), randomLimits(rng), randomLimits(rng)} {
			if got := snapshotJSON(t, replay(t, stateWith(initial), log)); got != want {
				t.Fatalf("seed %d: replay with limits starting as %v =\n%s\nwant\n%s", seed, initial, got, want)
			}

			// A snapshot at a random point, through JSON as on disk, restored
			// into a state configured otherwise, and the rest of the log.
			k := rng.IntN(len(log) + 1)
			data, err := json.Marshal(replay(t, stateWith(randomLimits(rng)), log[:k]).Snapshot(0))
			if err != nil {
				t.Fatal(err)
			}
			var snap mailbox.Snapshot
			if err := json.Unmarshal(data, &snap); err != nil {
				t.Fatal(err)
			}
			restored := stateWith(initial)
			if err := restored.Apply(mailbox.Event{Seq: snap.Seq, Type: mailbox.EventSnapshot, Snapshot: &snap}); err != nil {
				t.Fatal(err)
			}
			if got := snapshotJSON(t, replay(t, restored, log[k:])); got != want {
				t.Fatalf("seed %d: snapshot at seq %d, restored with limits %v, then the rest =\n%s\nwant\n%s", seed, k, initial, got, want)
			}
		}
	}
}

// A log that does not record its limits (an older version wrote it) and
// sends forgotten ids again replays under any limits without an error.
func TestUnrecordedLimitsNeverMakeALogUnreplayable(t *testing.T) {
	for seed := range uint64(8) {
		log, _ := limitedLog(t, seed, 800, false)
		rng := rand.New(rand.NewPCG(seed, 11))
		for _, initial := range []mailbox.Limits{mailbox.DefaultLimits(), randomLimits(rng), randomLimits(rng)} {
			replay(t, stateWith(initial), log)
		}
	}
}
