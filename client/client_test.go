package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

func start(t *testing.T) (*daemontest.Daemon, *client.Client) {
	t.Helper()
	d := daemontest.Start(t, daemontest.Options{})
	return d, mustClient(t, d.Addr())
}

func mustClient(t *testing.T, addr string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func send(t *testing.T, c *client.Client, from, to, intent string) string {
	t.Helper()
	q, err := c.Send(t.Context(), mailbox.Task{Sender: from, Recipient: to, IntentText: intent})
	if err != nil {
		t.Fatalf("send %q: %v", intent, err)
	}
	return q.TaskID
}

func lease(t *testing.T, c *client.Client, recipient string) (*mailbox.Task, *mailbox.Lease) {
	t.Helper()
	task, l, err := c.Lease(t.Context(), recipient)
	if err != nil {
		t.Fatalf("lease for %q: %v", recipient, err)
	}
	if task == nil || l == nil {
		t.Fatalf("lease for %q: nothing queued", recipient)
	}
	return task, l
}

func TestNewAddress(t *testing.T) {
	tests := []struct {
		addr, want, err string
	}{
		{"127.0.0.1:7717", "http://127.0.0.1:7717", ""},
		{"localhost:80", "http://localhost:80", ""},
		{":7717", "http://127.0.0.1:7717", ""},
		{"0.0.0.0:7717", "http://127.0.0.1:7717", ""},
		{"[::]:7717", "http://[::1]:7717", ""},
		{"http://127.0.0.1:7717", "http://127.0.0.1:7717", ""},
		{"https://mail.example/mailroom/", "https://mail.example/mailroom", ""},
		{"", "", `bad daemon address "": empty`},
		{"localhost", "", `bad daemon address "localhost"`},
		{"host:port", "", `port "port" is not a number`},
		{"host:0", "", `port "0"`},
		{"ftp://host:1", "", `scheme "ftp" is not http or https`},
		{"http://", "", "no host"},
		{"http://h:1/?x=1", "", "no query"},
	}
	for _, tt := range tests {
		c, err := client.New(tt.addr)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "expected host:port") {
				t.Errorf("New(%q) = %v, want an error saying %q and what is expected", tt.addr, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("New(%q): %v", tt.addr, err)
		} else if got := c.BaseURL(); got != tt.want {
			t.Errorf("New(%q).BaseURL() = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := mustClient(t, addr)
	err = c.Health(t.Context())
	if !errors.Is(err, client.ErrUnreachable) {
		t.Fatalf("Health against a closed port = %v, want ErrUnreachable", err)
	}
	if want := "cannot reach mailroom daemon at " + addr + ": "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to start %q", err, want)
	}
	var ue *client.UnreachableError
	if !errors.As(err, &ue) || ue.Addr != addr {
		t.Errorf("errors.As UnreachableError = %+v", ue)
	}
	if _, err := c.Send(t.Context(), mailbox.Task{}); !errors.Is(err, client.ErrUnreachable) {
		t.Errorf("Send = %v, want ErrUnreachable", err)
	}

	// A caller's own cancellation is not the daemon's fault.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.Health(ctx); !errors.Is(err, context.Canceled) || errors.Is(err, client.ErrUnreachable) {
		t.Errorf("Health with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestTimeout checks WithTimeout against a listener that accepts and never
// answers.
func TestTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	c := mustClient(t, ln.Addr().String(), client.WithTimeout(50*time.Millisecond))
	err = c.Health(t.Context())
	if !errors.Is(err, client.ErrUnreachable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Health against a silent listener = %v, want ErrUnreachable wrapping DeadlineExceeded", err)
	}
}

// TestEveryRoute exercises each client method against a real daemon.
func TestEveryRoute(t *testing.T) {
	t.Parallel()
	d, c := start(t)
	ctx := t.Context()
	if err := c.Health(ctx); err != nil {
		t.Fatalf("Health: %v", err)
	}
	if task, l, err := c.Lease(ctx, "w@x"); err != nil || task != nil || l != nil {
		t.Fatalf("Lease on an empty queue = %v %v %v, want nothing", task, l, err)
	}
	if r, err := c.Drain(ctx, "p@x"); err != nil || r != nil {
		t.Fatalf("Drain with nothing pending = %v %v", r, err)
	}
	const given = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	q, err := c.Send(ctx, mailbox.Task{ID: given, Sender: "p@x", Recipient: "w@x", IntentText: "one"})
	if err != nil || q.TaskID != given || q.Kind != mailbox.KindTaskQueued {
		t.Fatalf("Send with an id = %+v %v", q, err)
	}
	other := send(t, c, "p@x", "w@x", "two")
	tasks, err := c.RecentTasks(ctx, 0)
	if err != nil || len(tasks) != 2 || tasks[0].ID != given || tasks[1].ID != other {
		t.Fatalf("RecentTasks = %v %v", tasks, err)
	}
	task, l := lease(t, c, "w@x")
	if task.ID != given || l.Attempt != 1 {
		t.Fatalf("Lease = %s attempt %d", task.ID, l.Attempt)
	}
	if err := c.PostResult(ctx, mailbox.Result{TaskID: given, Status: mailbox.StatusPartial, LeaseID: l.LeaseID}); err != nil {
		t.Fatalf("PostResult: %v", err)
	}
	results, err := c.RecentResults(ctx, 10)
	if err != nil || len(results) != 1 || results[0].TaskID != given || results[0].Status != mailbox.StatusPartial {
		t.Fatalf("RecentResults = %v %v", results, err)
	}
	_, l2 := lease(t, c, "")
	view, err := c.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskInFlight})
	if err != nil || len(view.Tasks) != 1 || view.Tasks[0].LeaseID != l2.LeaseID || len(view.Results) != 1 {
		t.Fatalf("Queue = %+v %v", view, err)
	}
	out, err := c.Repair(ctx, mailbox.RepairRequest{TaskID: other, Reason: "stuck",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: l2.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}})
	if err != nil || out.Action != mailbox.OutcomeRequeued || out.State != mailbox.TaskQueued || out.Attempt != 1 {
		t.Fatalf("Repair = %+v %v", out, err)
	}
	r, err := c.Drain(ctx, "p@x")
	if err != nil || r == nil || r.TaskID != given {
		t.Fatalf("Drain = %+v %v", r, err)
	}
	co, err := c.Compact(ctx)
	if err != nil || co.Seq != d.State(t).Seq {
		t.Fatalf("Compact = %+v %v", co, err)
	}
	m, err := c.Metrics(ctx)
	if err != nil || !strings.Contains(m, "mailroom_tasks_queued 1\n") {
		t.Fatalf("Metrics = %v, want mailroom_tasks_queued 1 in:\n%s", err, m)
	}
}

// TestErrorsReachTheCaller checks that refusals come back as *mailbox.Error
// with their code and field, through every method that can be refused.
func TestErrorsReachTheCaller(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	ctx := t.Context()
	dup := send(t, c, "p@x", "w@x", "first")
	unknown := "0b7a5c1e-3d2f-4a6b-9c8d-7e6f5a4b3c2d"
	tests := []struct {
		name  string
		call  func() error
		is    error
		field string
	}{
		{"send without sender", func() error {
			_, err := c.Send(ctx, mailbox.Task{Recipient: "w@x", IntentText: "x"})
			return err
		}, mailbox.ErrInvalid, "sender"},
		{"send duplicate id", func() error {
			_, err := c.Send(ctx, mailbox.Task{ID: dup, Sender: "p@x", Recipient: "w@x", IntentText: "again"})
			return err
		}, mailbox.ErrConflict, "id"},
		{"send over 1 MiB", func() error {
			_, err := c.Send(ctx, mailbox.Task{Sender: "p@x", Recipient: "w@x", IntentText: strings.Repeat("x", mailbox.MaxBodyBytes)})
			return err
		}, mailbox.ErrTooLarge, ""},
		{"lease for a bad recipient", func() error { _, _, err := c.Lease(ctx, "a b"); return err }, mailbox.ErrInvalid, "recipient"},
		{"drain for a bad sender", func() error { _, err := c.Drain(ctx, "a\tb"); return err }, mailbox.ErrInvalid, "sender"},
		{"result with a bad status", func() error {
			return c.PostResult(ctx, mailbox.Result{TaskID: dup, Status: "fine"})
		}, mailbox.ErrInvalid, "status"},
		{"result for an unknown task", func() error {
			return c.PostResult(ctx, mailbox.Result{TaskID: unknown, Status: mailbox.StatusOK})
		}, mailbox.ErrNotFound, "task_id"},
		{"guarded result for a queued task", func() error {
			return c.PostResult(ctx, mailbox.Result{TaskID: dup, Status: mailbox.StatusOK, LeaseID: "6f9619ff-8b86-4d11-b42d-00c04fc964ff"})
		}, mailbox.ErrConflict, ""},
		{"recent tasks over the cap", func() error { _, err := c.RecentTasks(ctx, 10001); return err }, mailbox.ErrInvalid, "limit"},
		{"recent results with a negative limit", func() error { _, err := c.RecentResults(ctx, -1); return err }, mailbox.ErrInvalid, "limit"},
		{"queue over the cap", func() error { _, err := c.Queue(ctx, mailbox.QueueFilter{Limit: 10001}); return err }, mailbox.ErrInvalid, "limit"},
		{"queue with a bad state", func() error { _, err := c.Queue(ctx, mailbox.QueueFilter{State: "done"}); return err }, mailbox.ErrInvalid, "state"},
		{"queue with a negative age", func() error {
			age := int64(-1)
			_, err := c.Queue(ctx, mailbox.QueueFilter{MinLeaseAgeMs: &age})
			return err
		}, mailbox.ErrInvalid, "min_lease_age_ms"},
		{"repair without reason", func() error {
			_, err := c.Repair(ctx, mailbox.RepairRequest{TaskID: dup, Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, Message: "m"}})
			return err
		}, mailbox.ErrInvalid, "reason"},
		{"repair of a queued task", func() error {
			_, err := c.Repair(ctx, mailbox.RepairRequest{TaskID: dup, Reason: "r", Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, Message: "m"}})
			return err
		}, mailbox.ErrConflict, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !errors.Is(err, tt.is) {
				t.Fatalf("error = %v, want %v", err, tt.is)
			}
			e, ok := errors.AsType[*mailbox.Error](err)
			if !ok || e.Message == "" {
				t.Fatalf("error %v is not a *mailbox.Error with a message", err)
			}
			if tt.field != "" && (e.Details == nil || e.Details.Field != tt.field || !strings.Contains(e.Message, tt.field)) {
				t.Errorf("error %q details %+v, want field %q named", e.Message, e.Details, tt.field)
			}
		})
	}
}

// TestLeaseGuard posts results and repairs with the current lease, a stale
// one, and none, and checks the conflict details the client decodes.
func TestLeaseGuard(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	ctx := t.Context()
	const stale = "0b7a5c1e-3d2f-4a6b-9c8d-7e6f5a4b3c2d"
	tests := []struct {
		name     string
		leaseID  func(current string) string
		repair   bool
		conflict bool
	}{
		{"result, current lease", func(cur string) string { return cur }, false, false},
		{"result, stale lease", func(string) string { return stale }, false, true},
		{"result, no lease", func(string) string { return "" }, false, false},
		{"repair, current lease", func(cur string) string { return cur }, true, false},
		{"repair, stale lease", func(string) string { return stale }, true, true},
		{"repair, no lease", func(string) string { return "" }, true, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			worker := fmt.Sprintf("w%d@x", i)
			id := send(t, c, "p@x", worker, tt.name)
			_, l := lease(t, c, worker)
			var err error
			if tt.repair {
				_, err = c.Repair(ctx, mailbox.RepairRequest{TaskID: id, Reason: "test",
					Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: tt.leaseID(l.LeaseID), Message: "m"}})
			} else {
				err = c.PostResult(ctx, mailbox.Result{TaskID: id, Status: mailbox.StatusOK, LeaseID: tt.leaseID(l.LeaseID)})
			}
			if !tt.conflict {
				if err != nil {
					t.Fatalf("want success, got %v", err)
				}
				return
			}
			e, ok := errors.AsType[*mailbox.Error](err)
			if !ok || !errors.Is(err, mailbox.ErrConflict) || e.Details == nil {
				t.Fatalf("error = %v, want a conflict with details", err)
			}
			field := "lease_id"
			if tt.repair {
				field = "command.lease_id"
			}
			want := mailbox.ErrorDetails{Field: field, ExpectedLeaseID: stale, ActualLeaseID: l.LeaseID, LeasedTo: worker,
				LeasedAtMs: l.LeasedAtMs, Attempt: 1, TaskState: mailbox.TaskInFlight}
			if *e.Details != want {
				t.Errorf("details = %+v, want %+v", *e.Details, want)
			}
			// The refused request changed nothing: the lease still stands.
			view, err := c.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskInFlight})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, en := range view.Tasks {
				found = found || (en.Task.ID == id && en.LeaseID == l.LeaseID)
			}
			if !found {
				t.Errorf("after the refused request task %s is no longer in flight under %s", id, l.LeaseID)
			}
		})
	}
}

// Status reads the totals every caller may see, through the client's own
// transport, timeout and error mapping.
func TestStatusCountsTheMailbox(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	ctx := t.Context()
	for _, intent := range []string{"one", "two", "three"} {
		if _, err := c.Send(ctx, mailbox.Task{Sender: "p@x", Recipient: "w@x", IntentText: intent}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.Lease(ctx, "w@x"); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx)
	if err != nil || st.Queued != 2 || st.InFlight != 1 || st.ResultsPending != 0 || st.LastSeq != 4 {
		t.Fatalf("status = %+v, %v; want 2 queued, 1 in flight, last seq 4", st, err)
	}
}

// A long poll through the client: it waits past its own timeout for as
// long as it asked, and is answered by a task sent meanwhile.
func TestLeaseNWaitsForASend(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	c, err := client.New(d.URL(), client.WithTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []mailbox.LeasedTask, 1)
	errc := make(chan error, 1)
	go func() {
		l, err := c.LeaseN(t.Context(), "coder@local", 3, 5*time.Second)
		got <- l
		errc <- err
	}()
	for d.Metric(t, "mailroom_long_polls_waiting") != 1 {
		time.Sleep(2 * time.Millisecond)
	}
	// Past the client's own timeout: the wait is added to it. The send
	// and the drain go through a client of their own, whose timeout a
	// loaded machine cannot outrun: only the long poll is under test.
	time.Sleep(100 * time.Millisecond)
	other, err := client.New(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	res, err := other.Send(t.Context(), mailbox.Task{Sender: "planner@local", Recipient: "coder@local", IntentText: "late"})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("LeaseN: %v", err)
	}
	if l := <-got; len(l) != 1 || l[0].Task.ID != res.TaskID {
		t.Fatalf("LeaseN got %+v, want the task sent while it waited", l)
	}
	if r, err := other.DrainN(t.Context(), "planner@local", 5, 0); err != nil || len(r) != 0 {
		t.Fatalf("DrainN with nothing pending: %+v, %v", r, err)
	}
}
