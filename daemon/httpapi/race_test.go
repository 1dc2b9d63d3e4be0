package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// TestRepairRacesResult runs 1,000 races over HTTP, each between a worker
// posting the result of a lease and an operator repairing the same lease
// (requeue or force_error, alternately). Exactly one may win each race; the
// loser gets 409; and the sender ends up with at most one result per task.
func TestRepairRacesResult(t *testing.T) {
	t.Parallel()
	races := 1000
	if testing.Short() {
		races = 100
	}
	d := daemontest.Start(t, daemontest.Options{})
	c, err := client.New(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const workers = 16
	type outcome struct{ resultWon, repairWon bool }
	outcomes := make([]outcome, races)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < races; i += workers {
				// One recipient per race: a requeued task goes back to the
				// head of its recipient's queue and would be leased next.
				o, err := race(ctx, c, fmt.Sprintf("w%d@x", i), i%2 == 0)
				if err != nil {
					t.Errorf("race %d: %v", i, err)
					return
				}
				outcomes[i] = o
			}
		})
	}
	wg.Wait()
	var results, repairs int
	for i, o := range outcomes {
		if o.resultWon == o.repairWon {
			t.Errorf("race %d: result won %v, repair won %v; want exactly one winner", i, o.resultWon, o.repairWon)
		}
		if o.resultWon {
			results++
		} else {
			repairs++
		}
	}
	t.Logf("%d races: result won %d, repair won %d", races, results, repairs)

	// Every task that got a result (posted or forced) has exactly one; the
	// requeued ones have none and are queued again.
	want := map[string]bool{}
	q, err := c.Queue(ctx, mailbox.QueueFilter{Limit: mailbox.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range q.Results {
		if want[r.TaskID] {
			t.Errorf("task %s has two pending results", r.TaskID)
		}
		want[r.TaskID] = true
	}
	requeued := 0
	for i := range outcomes {
		if i%2 == 0 && outcomes[i].repairWon {
			requeued++
		}
	}
	if got := len(q.Tasks); got != requeued {
		t.Errorf("%d tasks in the queue, want the %d requeued ones", got, requeued)
	}
	if got, wantN := len(q.Results), races-requeued; got != wantN {
		t.Errorf("%d pending results, want %d", got, wantN)
	}
}

// race sends a task, leases it, and lets a result and a repair of that
// lease race. It reports which won, or an error if anything but a 409
// came back.
func race(ctx context.Context, c *client.Client, recipient string, requeue bool) (o struct{ resultWon, repairWon bool }, err error) {
	q, err := c.Send(ctx, mailbox.Task{Sender: "p@x", Recipient: recipient, IntentText: "race"})
	if err != nil {
		return o, err
	}
	task, lease, err := c.Lease(ctx, recipient)
	if err != nil || task == nil || task.ID != q.TaskID {
		return o, fmt.Errorf("lease: %v %v", task, err)
	}
	cmd := mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: lease.LeaseID, Message: "operator gave up"}
	if requeue {
		cmd = mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: lease.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}
	}
	var resultErr, repairErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		resultErr = c.PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: lease.LeaseID})
	})
	wg.Go(func() {
		_, repairErr = c.Repair(ctx, mailbox.RepairRequest{TaskID: task.ID, Reason: "stuck", Command: cmd})
	})
	wg.Wait()
	for _, err := range []error{resultErr, repairErr} {
		if err != nil && !errors.Is(err, mailbox.ErrConflict) {
			return o, err
		}
	}
	o.resultWon, o.repairWon = resultErr == nil, repairErr == nil
	return o, nil
}
