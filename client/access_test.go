package client_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// sendLeased sends a task (idempotent under key when key is not "") and
// leases it, returning the task id and the lease.
func sendLeased(t *testing.T, c *client.Client, to, key string) (string, *mailbox.Lease) {
	t.Helper()
	task := mailbox.Task{Sender: "planner@local", Recipient: to, IntentText: "work " + key}
	if key != "" {
		task.Idempotency = &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: key}
	}
	q, err := c.Send(t.Context(), task)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	got, l := lease(t, c, to)
	if got.ID != q.TaskID {
		t.Fatalf("leased %s, want %s", got.ID, q.TaskID)
	}
	return q.TaskID, l
}

func inFlight(t *testing.T, c *client.Client, taskID string) bool {
	t.Helper()
	v, err := c.Queue(t.Context(), mailbox.QueueFilter{State: mailbox.TaskInFlight})
	if err != nil {
		t.Fatalf("queue: %v", err)
	}
	return slices.ContainsFunc(v.Tasks, func(e mailbox.QueueEntry) bool { return e.Task.ID == taskID })
}

func TestRetryStaleDryRunThenEnabled(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	safe, l := sendLeased(t, c, "coder@local", "k1")
	unsafe, _ := sendLeased(t, c, "tester@local", "")

	// MinLeaseAgeMs 0: both leases are old enough, so only the postures decide.
	p := mailbox.RetryPolicy{MinLeaseAgeMs: 0, MaxAttempts: 3, MaxRequeues: 10, ScanLimit: 100}
	dry, err := c.RetryStale(t.Context(), p)
	if err != nil {
		t.Fatalf("RetryStale(dry run): %v", err)
	}
	if !dry.DryRun || dry.Policy != p || dry.Considered != 2 {
		t.Errorf("dry run report = %+v, want dry_run, the policy sent and 2 considered", dry)
	}
	want := []mailbox.RetryRequeued{{TaskID: safe, LeaseID: l.LeaseID, Attempt: 1, IdempotencyKey: "k1"}}
	if !slices.Equal(dry.Requeued, want) {
		t.Errorf("dry run requeued = %+v, want %+v", dry.Requeued, want)
	}
	if len(dry.Skipped) != 1 || dry.Skipped[0].TaskID != unsafe || dry.Skipped[0].Reason != mailbox.SkipMissingIdempotency {
		t.Errorf("dry run skipped = %+v, want %s as %s", dry.Skipped, unsafe, mailbox.SkipMissingIdempotency)
	}
	if !inFlight(t, c, safe) {
		t.Fatalf("a dry run requeued %s", safe)
	}

	p.Enabled = true
	rep, err := c.RetryStale(t.Context(), p)
	if err != nil {
		t.Fatalf("RetryStale(enabled): %v", err)
	}
	if rep.DryRun || !slices.Equal(rep.Requeued, want) {
		t.Errorf("enabled report = %+v, want %+v requeued", rep, want)
	}
	if inFlight(t, c, safe) || !inFlight(t, c, unsafe) {
		t.Errorf("after the scan: %s should be queued again and %s still in flight", safe, unsafe)
	}
}

func TestRetryStaleRefusesABadPolicy(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	p := mailbox.DefaultRetryPolicy()
	p.ScanLimit = 0
	_, err := c.RetryStale(t.Context(), p)
	if !errors.Is(err, mailbox.ErrInvalid) {
		t.Errorf("RetryStale(scan_limit 0) = %v, want invalid", err)
	}
}

func TestAuditNewestFirstAndByTask(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	first, l1 := sendLeased(t, c, "coder@local", "a")
	second, l2 := sendLeased(t, c, "coder@local", "b")
	if recs, err := c.Audit(t.Context(), "", 0); err != nil || len(recs) != 0 {
		t.Fatalf("Audit before any repair = %+v, %v; want none", recs, err)
	}
	for _, r := range []mailbox.RepairRequest{
		{TaskID: first, Reason: "worker crashed", Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: l1.LeaseID, DuplicateRisk: mailbox.RiskIdempotent}},
		{TaskID: second, Reason: "agent gone", Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: l2.LeaseID, Message: "gone"}},
	} {
		if _, err := c.Repair(t.Context(), r); err != nil {
			t.Fatalf("repair %s: %v", r.Command.Action, err)
		}
	}

	tests := []struct {
		task  string
		limit int
		want  []string // task ids, newest first
	}{
		{"", 0, []string{second, first}},
		{"", 1, []string{second}},
		{first, 0, []string{first}},
		{"00000000-0000-4000-8000-000000000000", 0, nil},
	}
	for _, tt := range tests {
		recs, err := c.Audit(t.Context(), tt.task, tt.limit)
		if err != nil {
			t.Errorf("Audit(%q, %d): %v", tt.task, tt.limit, err)
			continue
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.TaskID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Audit(%q, %d) = %v, want %v", tt.task, tt.limit, got, tt.want)
		}
	}
	recs, _ := c.Audit(t.Context(), first, 0)
	if len(recs) == 1 {
		r := recs[0]
		if r.Action != mailbox.OutcomeRequeued || r.LeaseID != l1.LeaseID || r.Reason != "worker crashed" ||
			r.DuplicateRisk != mailbox.RiskIdempotent || r.Auto || r.AtMs == 0 {
			t.Errorf("audit record = %+v", r)
		}
	}
	if _, err := c.Audit(t.Context(), "not-a-uuid", 0); !errors.Is(err, mailbox.ErrInvalid) {
		t.Errorf("Audit(bad task id) = %v, want invalid", err)
	}
}

func TestWhoAmI(t *testing.T) {
	t.Parallel()
	_, open := start(t)
	who, err := open.WhoAmI(t.Context())
	if err != nil || who.Auth || who.Principal != "" {
		t.Errorf("WhoAmI without tokens = %+v, %v; want auth false and no principal", who, err)
	}

	secret, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.Options{Tokens: []auth.Token{{Principal: "oncall", SHA256: hash, Caps: []string{auth.CapRead, auth.CapRequeue}}}})
	who, err = mustClient(t, d.Addr(), client.WithToken(secret)).WhoAmI(t.Context())
	if err != nil || !who.Auth || who.Principal != "oncall" ||
		!slices.Equal(slices.Sorted(slices.Values(who.Capabilities)), []string{auth.CapRead, auth.CapRequeue}) {
		t.Errorf("WhoAmI with a token = %+v, %v; want oncall with its two capabilities", who, err)
	}
	if _, err := mustClient(t, d.Addr(), client.WithToken("mr_unknown")).WhoAmI(t.Context()); !errors.Is(err, mailbox.ErrUnauthorized) {
		t.Errorf("WhoAmI with an unknown token = %v, want unauthorized", err)
	}
}
