package demo

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// TestAgentsExerciseEveryPath runs the agents fast against a real daemon and
// watches its event stream until everything the console is meant to show
// has happened: varied tasks, leases, every result status, drains, and a
// crashed worker's lease left hanging. Then the agents stop on cancel.
func TestAgentsExerciseEveryPath(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})
	c, err := client.New(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Addr: d.URL(), Seed: 7, Rate: 60, MaxQueued: 8, CrashRate: 0.25,
			WorkMin: 5 * time.Millisecond, WorkMax: 40 * time.Millisecond, Poll: 20 * time.Millisecond, DrainEvery: 50 * time.Millisecond,
			A2AEvery: 30 * time.Millisecond})
	}()

	watch, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	events := c.Subscribe(watch, 0, nil)
	state := mailbox.NewState()
	seen := map[string]bool{}
	kinds := map[string]bool{}
	recipients := map[string]bool{}
	want := func() []string {
		var missing []string
		for _, w := range []string{"leased", "drained", mailbox.StatusOK, mailbox.StatusError, mailbox.StatusPartial,
			"idempotent", "unsafe", "deadline", "no deadline", "parent", "abandoned lease", "a2a sent", "a2a delivered",
			mailbox.StatusRejected, mailbox.StatusInputRequired, mailbox.StatusAuthRequired, "replied", "finished after a reply"} {
			if !seen[w] {
				missing = append(missing, w)
			}
		}
		if len(kinds) < 4 {
			missing = append(missing, "4 kinds")
		}
		if len(recipients) < len(Workers) {
			missing = append(missing, "every worker")
		}
		if len(state.Registry()) < len(Workers) {
			missing = append(missing, "every worker's card")
		}
		return missing
	}
	deadline := time.After(30 * time.Second)
	for len(want()) > 0 {
		select {
		case ev := <-events:
			if err := state.Apply(ev); err != nil {
				t.Fatalf("the daemon's stream does not apply: %v", err)
			}
			switch ev.Type {
			case mailbox.EventTaskSent:
				kinds[ev.Task.Kind()] = true
				recipients[ev.Task.Recipient] = true
				seen[ev.Task.DuplicateSafety()] = true
				seen[map[bool]string{true: "deadline", false: "no deadline"}[ev.Task.DeadlineMs != nil]] = true
				if ev.Task.Parent != "" {
					seen["parent"] = true
				}
				switch {
				case ev.Task.A2A != nil && ev.Task.Sender == A2ACaller:
					seen["a2a sent"] = true
				case ev.Task.Sender != Planner:
					t.Errorf("task sent by %s (a2a %v), want %s, or %s through the A2A edge", ev.Task.Sender, ev.Task.A2A != nil, Planner, A2ACaller)
				}
			case mailbox.EventTaskLeased:
				seen["leased"] = true
			case mailbox.EventResultPosted:
				seen[ev.Result.Status] = true
				if rec, ok := state.Task(ev.TaskID); ok && len(rec.Task.Turns) > 1 && ev.Result.Status == mailbox.StatusOK {
					seen["finished after a reply"] = true
				}
			case mailbox.EventTaskReplied:
				seen["replied"] = true
			case mailbox.EventResultDrained:
				seen["drained"] = true
				// The A2A caller read its finished task: its result was
				// delivered under the caller's name, not drained by an agent.
				if ev.Principal == "anonymous@a2a" {
					seen["a2a delivered"] = true
				}
			}
			// A lease older than any worker takes was abandoned by a crash.
			for _, e := range state.InFlightTasks() {
				if ev.AtMs-e.LeasedAtMs > 2000 {
					seen["abandoned lease"] = true
				}
			}
		case <-deadline:
			t.Fatalf("after 30s the agents have not shown: %v", want())
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agents did not stop within 10s of cancel")
	}
}

func TestRunRefusesABadAddress(t *testing.T) {
	if err := Run(context.Background(), Options{Addr: "not an address"}); err == nil {
		t.Error("Run with a bad address returned nil")
	}
}
