package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

// The principals of the matrix, each holding exactly what its name says.
var matrixTokens = map[string]auth.Token{
	"root":          {Principal: "root", Caps: []string{auth.CapAdmin}},
	"planner@local": {Principal: "planner@local", Caps: []string{"a2a.send.worker@local", auth.CapDrain}},
	"worker@local":  {Principal: "worker@local", Caps: []string{auth.CapRecv, "a2a.respond.planner@local"}},
	"reader":        {Principal: "reader", Caps: []string{auth.CapRead}},
	"operator":      {Principal: "operator", Caps: []string{auth.CapRequeue, auth.CapForceError}},
	"compactor":     {Principal: "compactor", Caps: []string{auth.CapCompact}},
}

type authed struct {
	d      *daemontest.Daemon
	tokens map[string]string // principal -> secret
	logs   *testlog.Buffer
}

func startAuthed(t *testing.T) *authed {
	t.Helper()
	return startWithTokens(t, matrixTokens)
}

// startWithTokens starts a daemon requiring tokens, one for each of
// tokens' principals, and returns it with their secrets.
func startWithTokens(t *testing.T, tokens map[string]auth.Token) *authed {
	t.Helper()
	a := &authed{tokens: map[string]string{}, logs: &testlog.Buffer{}}
	var cfg []auth.Token
	for p, tok := range tokens {
		secret, hash, err := auth.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		tok.SHA256 = hash
		cfg = append(cfg, tok)
		a.tokens[p] = secret
	}
	a.d = daemontest.Start(t, daemontest.Options{Tokens: cfg, Logger: a.logs.Logger()})
	return a
}

func (a *authed) client(t *testing.T, principal string) *client.Client {
	t.Helper()
	c, err := client.New(a.d.URL(), client.WithToken(a.tokens[principal]))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// do sends one request with the given Authorization header and returns
// the status and body; event streams are cut after their headers.
func (a *authed) do(t *testing.T, method, path, body, authz string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, a.d.URL()+path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// leased sends a task from planner to worker and leases it as worker.
func (a *authed) leased(t *testing.T) (string, string) {
	t.Helper()
	ctx := context.Background()
	out, err := a.client(t, "planner@local").Send(ctx, mailbox.Task{Sender: "planner@local", Recipient: "worker@local", IntentText: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		task, lease, err := a.client(t, "worker@local").Lease(ctx, "")
		if err != nil || task == nil {
			t.Fatalf("lease: %v %v", task, err)
		}
		if task.ID == out.TaskID {
			return task.ID, lease.LeaseID
		}
		// An older task from an earlier case: resolve it and go on.
		a.client(t, "worker@local").PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK})
	}
}

func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	a := startAuthed(t)
	type req struct{ method, path, body string }
	send := func(as string) req {
		return req{"POST", "/a2a/tasks", fmt.Sprintf(`{"sender":%q,"recipient":"worker@local","intent_text":"x"}`, as)}
	}
	fixed := func(method, path, body string) func(*testing.T, string) req {
		return func(*testing.T, string) req { return req{method, path, body} }
	}
	cases := []struct {
		route      string
		build      func(t *testing.T, as string) req
		with, lack string // a principal holding the capability, one lacking it ("" = every token may)
		capability string // named in the 403
	}{
		{httpapi.RouteSendTask, func(_ *testing.T, as string) req { return send(as) }, "planner@local", "worker@local", "a2a.send.worker@local"},
		{httpapi.RouteLeaseTask, fixed("POST", "/a2a/tasks/next", ""), "worker@local", "planner@local", auth.CapRecv},
		{httpapi.RouteLeaseTaskGet, fixed("GET", "/a2a/tasks/next", ""), "worker@local", "planner@local", auth.CapRecv},
		{httpapi.RouteRecentTasks, fixed("GET", "/a2a/tasks/recent", ""), "reader", "planner@local", auth.CapRead},
		{httpapi.RoutePostResult, func(t *testing.T, as string) req {
			id, lease := a.leased(t)
			return req{"POST", "/a2a/results", fmt.Sprintf(`{"task_id":%q,"status":"ok","content":[],"lease_id":%q}`, id, lease)}
		}, "worker@local", "reader", "a2a.respond.planner@local"},
		{httpapi.RouteDrain, fixed("POST", "/a2a/results/next", ""), "planner@local", "worker@local", auth.CapDrain},
		{httpapi.RouteDrainGet, fixed("GET", "/a2a/results/next", ""), "planner@local", "worker@local", auth.CapDrain},
		{httpapi.RouteRecentResults, fixed("GET", "/a2a/results/recent", ""), "reader", "planner@local", auth.CapRead},
		{httpapi.RouteQueue, fixed("GET", "/a2a/queue", ""), "reader", "planner@local", auth.CapRead},
		{httpapi.RouteRepair + " requeue", func(t *testing.T, _ string) req {
			id, lease := a.leased(t)
			return req{"POST", "/a2a/repair", fmt.Sprintf(`{"task_id":%q,"reason":"stuck","command":{"action":"requeue","lease_id":%q,"duplicate_risk":"operator_accepted"}}`, id, lease)}
		}, "operator", "reader", auth.CapRequeue},
		{httpapi.RouteRepair + " force_error", func(t *testing.T, _ string) req {
			id, lease := a.leased(t)
			return req{"POST", "/a2a/repair", fmt.Sprintf(`{"task_id":%q,"reason":"stuck","command":{"action":"force_error","lease_id":%q,"message":"gone"}}`, id, lease)}
		}, "operator", "reader", auth.CapForceError},
		{httpapi.RouteCompact, fixed("POST", "/a2a/compact", ""), "compactor", "reader", auth.CapCompact},
		{httpapi.RouteEvents, fixed("GET", "/a2a/events", ""), "reader", "planner@local", auth.CapRead},
		{httpapi.RouteRetryStale + " dry run", fixed("POST", "/a2a/retry-stale", `{}`), "reader", "planner@local", auth.CapRead},
		{httpapi.RouteRetryStale + " enabled", fixed("POST", "/a2a/retry-stale", `{"enabled":true}`), "operator", "reader", auth.CapRequeue},
		{httpapi.RouteAudit, fixed("GET", "/a2a/audit", ""), "reader", "planner@local", auth.CapRead},
		{httpapi.RouteAgents, fixed("GET", "/a2a/agents", ""), "reader", "planner@local", auth.CapRead},
		{httpapi.RouteWhoAmI, fixed("GET", "/a2a/whoami", ""), "reader", "", ""},
		{httpapi.RouteMetrics, fixed("GET", "/metrics", ""), "reader", "planner@local", auth.CapRead},
	}
	for _, tc := range cases {
		t.Run(tc.route, func(t *testing.T) {
			check := func(who, authz string, as string, want int, wantText string) {
				t.Helper()
				r := tc.build(t, as)
				status, body := a.do(t, r.method, r.path, r.body, authz)
				if status != want || !strings.Contains(body, wantText) {
					t.Errorf("%s: %s %s = %d %s; want %d containing %q", who, r.method, r.path, status, body, want, wantText)
				}
			}
			check("no token", "", tc.with, http.StatusUnauthorized, `"code":"unauthorized"`)
			check("malformed", "Basic cm9vdDpyb290", tc.with, http.StatusUnauthorized, "malformed")
			check("unknown token", "Bearer mr_not-a-token", tc.with, http.StatusUnauthorized, "unknown token")
			if tc.lack != "" {
				check("without "+tc.capability, "Bearer "+a.tokens[tc.lack], tc.lack, http.StatusForbidden, tc.capability)
			}
			check("with "+tc.capability, "Bearer "+a.tokens[tc.with], tc.with, http.StatusOK, "")
			check("admin", "Bearer "+a.tokens["root"], "root", http.StatusOK, "")
		})
	}
	t.Run("healthz needs no token", func(t *testing.T) {
		if status, _ := a.do(t, "GET", "/healthz", "", ""); status != http.StatusOK {
			t.Errorf("healthz without a token = %d", status)
		}
	})

	// Denials are counted in metrics, and no token ever reaches the log.
	_, metrics := a.do(t, "GET", "/metrics", "", "Bearer "+a.tokens["reader"])
	if !strings.Contains(metrics, `mailroom_auth_denied_total{route="POST /a2a/tasks",code="401"} 3`) ||
		!strings.Contains(metrics, `mailroom_auth_denied_total{route="POST /a2a/tasks",code="403"} 1`) {
		t.Errorf("denials not counted:\n%s", grep(metrics, "denied"))
	}
	logs := a.logs.String()
	if !strings.Contains(logs, "request denied") || !strings.Contains(logs, "principal=reader") {
		t.Errorf("denials not logged with their principal")
	}
	for p, secret := range a.tokens {
		if strings.Contains(logs, secret) || strings.Contains(metrics, secret) {
			t.Errorf("the token of %s appears in the logs or metrics", p)
		}
	}
}

func grep(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestAuthBindsCallsToTheirPrincipal(t *testing.T) {
	t.Parallel()
	a := startAuthed(t)
	ctx := context.Background()
	planner, worker, root := a.client(t, "planner@local"), a.client(t, "worker@local"), a.client(t, "root")

	// Sender spoofing is refused; admin may send on another's behalf.
	_, err := planner.Send(ctx, mailbox.Task{Sender: "boss@local", Recipient: "worker@local", IntentText: "x"})
	if !errorsIsCode(err, mailbox.CodeForbidden) || !strings.Contains(err.Error(), "sender") {
		t.Fatalf("spoofed sender = %v, want 403 naming sender", err)
	}
	other, err := root.Send(ctx, mailbox.Task{Sender: "boss@local", Recipient: "other@local", IntentText: "not yours"})
	if err != nil {
		t.Fatal(err)
	}

	// Peer-scoped lease: worker asks for other@local's queue and gets only its own.
	task, _, err := worker.Lease(ctx, "other@local")
	if err != nil || task != nil {
		t.Fatalf("worker leasing other@local's task = %v, %v; want nothing", task, err)
	}
	mine, _ := planner.Send(ctx, mailbox.Task{Sender: "planner@local", Recipient: "worker@local", IntentText: "yours"})
	task, lease, err := worker.Lease(ctx, "other@local")
	if err != nil || task == nil || task.ID != mine.TaskID {
		t.Fatalf("worker lease = %v, %v; want its own task %s", task, err, mine.TaskID)
	}
	if err := worker.PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: lease.LeaseID}); err != nil {
		t.Fatal(err)
	}

	// Peer-scoped drain: a result for boss@local never reaches planner.
	t2, l2, err := root.Lease(ctx, "other@local")
	if err != nil || t2 == nil || t2.ID != other.TaskID {
		t.Fatalf("admin lease on other's behalf = %v, %v", t2, err)
	}
	if err := root.PostResult(ctx, mailbox.Result{TaskID: t2.ID, Status: mailbox.StatusOK, LeaseID: l2.LeaseID}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r, err := planner.Drain(ctx, "boss@local")
		if err != nil {
			t.Fatal(err)
		}
		if r != nil && r.Sender != "planner@local" {
			t.Fatalf("planner drained %s's result", r.Sender)
		}
	}
	if r, _ := root.Drain(ctx, "boss@local"); r == nil || r.TaskID != other.TaskID {
		t.Fatalf("boss's result was lost: %+v", r)
	}

	// A made-up task id is 404 before any capability check.
	reader := a.client(t, "reader")
	err = reader.PostResult(ctx, mailbox.Result{TaskID: "6f9619ff-8b86-4d11-b42d-00c04fc964ff", Status: mailbox.StatusOK})
	if !errorsIsCode(err, mailbox.CodeNotFound) {
		t.Fatalf("result for an unknown task by a token without respond = %v, want 404", err)
	}

	// whoami says whom the token speaks for.
	status, body := a.do(t, "GET", "/a2a/whoami", "", "Bearer "+a.tokens["worker@local"])
	var who mailbox.WhoAmI
	if json.Unmarshal([]byte(body), &who); status != 200 || who.Principal != "worker@local" || !who.Auth || len(who.Capabilities) != 2 {
		t.Fatalf("whoami = %d %s", status, body)
	}

	// The repair's principal is recorded in the audit trail.
	id, l := a.leased(t)
	if _, err := a.client(t, "operator").Repair(ctx, mailbox.RepairRequest{TaskID: id, Reason: "worker hung",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: l, DuplicateRisk: mailbox.RiskOperatorAccepted}}); err != nil {
		t.Fatal(err)
	}
	_, body = a.do(t, "GET", "/a2a/audit?task_id="+id, "", "Bearer "+a.tokens["reader"])
	var audit mailbox.AuditResponse
	if err := json.Unmarshal([]byte(body), &audit); err != nil || len(audit.Repairs) != 1 || audit.Repairs[0].Principal != "operator" || audit.Repairs[0].Reason != "worker hung" {
		t.Fatalf("audit = %s", body)
	}
}

func errorsIsCode(err error, code string) bool { return err != nil && mailbox.ErrorCode(err) == code }
