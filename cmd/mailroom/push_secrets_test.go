package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	pushnotify "github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/mailbox"
)

// A push config's token and credentials, and a native sender's webhook's,
// leave the daemon only in the POST to the receiver: the event stream
// (events, snapshot, agents listing), GET /a2a/push, task and agent reads,
// the served card, the audit, the CLI's JSON and the A2A owner's own get
// and list show each as *** and never its value.
func TestPushSecretsStayInTheDaemon(t *testing.T) {
	const (
		a2aToken   = "a2a-token-0f3c9d"
		a2aCred    = "a2a-credentials-7b21e4"
		hookToken  = "webhook-token-5a8e10"
		hookCred   = "webhook-credentials-c4d7a2"
		sseTimeout = 30 * time.Second
	)
	secrets := []string{a2aToken, a2aCred, hookToken, hookCred}
	type call struct{ path, token, auth string }
	var mu sync.Mutex
	var calls []call
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, call{r.URL.Path, r.Header.Get(pushnotify.HeaderToken), r.Header.Get("Authorization")})
		mu.Unlock()
	}))
	defer rcv.Close()
	d := daemontest.Start(t, daemontest.Options{})
	addr := d.Addr()
	ctx, cancel := context.WithTimeout(t.Context(), sseTimeout) // a watchdog
	defer cancel()
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterAgent(ctx, "coder@local", mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	reg, err := c.RegisterAgent(ctx, "planner@local", mailbox.AgentCard{Name: "Planner", Webhook: &mailbox.Webhook{URL: rcv.URL + "/results", Token: hookToken,
		Authentication: &mailbox.PushAuth{Schemes: []string{"Bearer"}, Credentials: hookCred}}})
	if err != nil {
		t.Fatal(err)
	}
	if w := reg.Card.Webhook; w == nil || w.Token != mailbox.RedactedSecret || w.Authentication == nil || w.Authentication.Credentials != mailbox.RedactedSecret {
		t.Errorf("the registration's answer shows the webhook %+v; want its token and credentials as ***", w)
	}

	// An A2A task with a config, and a native task of planner's; both
	// worked to a result, so both receivers are told.
	rpc := func(body string) string {
		t.Helper()
		resp, err := http.Post(d.URL()+"/agents/coder@local/", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	sent := rpc(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-1","parts":[{"kind":"text","text":"hi"}]},` +
		`"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + rcv.URL + `/hook","token":"` + a2aToken + `","authentication":{"schemes":["Bearer"],"credentials":"` + a2aCred + `"}}}}}`)
	a2aTask := leaseTask(t, addr, "coder@local")
	if !strings.Contains(sent, a2aTask.Task.ID) {
		t.Fatalf("the A2A send answered %s; want task %s", sent, a2aTask.Task.ID)
	}
	mustCLI(t, addr, "result", "post", a2aTask.Task.ID, "--status", "ok", "--text", "done", "--lease-id", a2aTask.Lease.LeaseID)
	native := sendTask(t, addr, "planner@local", "coder@local", "work")
	l := leaseTask(t, addr, "coder@local")
	mustCLI(t, addr, "result", "post", native, "--status", "ok", "--text", "done", "--lease-id", l.Lease.LeaseID)

	// The receivers get the secrets.
	waitDeliveries(t, ctx, c, func(l mailbox.PushListing) bool { return len(l.Notifications) == 0 })
	mu.Lock()
	var hook, results int
	for _, x := range calls {
		switch {
		case x.path == "/hook" && x.token == a2aToken && x.auth == "Bearer "+a2aCred:
			hook++
		case x.path == "/results" && x.token == hookToken && x.auth == "Bearer "+hookCred:
			results++
		default:
			t.Errorf("a notification to %s with token %q and Authorization %q; want the config's", x.path, x.token, x.auth)
		}
	}
	mu.Unlock()
	if hook < 3 || results != 1 {
		t.Errorf("the receivers were told %d times (the A2A config) and %d (planner's webhook); want the set, lease and result, and the result", hook, results)
	}

	// Everything a reader is given.
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(d.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	last := d.State(t).Seq
	reads := map[string]string{
		"GET /a2a/tasks/{a2a task}":         get("/a2a/tasks/" + a2aTask.Task.ID),
		"GET /a2a/agents":                   get("/a2a/agents"),
		"GET /a2a/push":                     get("/a2a/push"),
		"GET /a2a/audit":                    get("/a2a/audit"),
		"GET /a2a/queue":                    get("/a2a/queue"),
		"planner's card":                    get("/agents/planner@local/.well-known/agent-card.json"),
		"the stream from seq 0":             readStream(t, ctx, d.URL()+"/a2a/events?last_event_id=0", last, false),
		"the stream's snapshot":             readStream(t, ctx, d.URL()+"/a2a/events?agents=true", last, true),
		"mailroom push list --json":         mustCLI(t, addr, "push", "list", "--json"),
		"mailroom agent list --json":        mustCLI(t, addr, "agent", "list", "--json"),
		"mailroom status --json":            mustCLI(t, addr, "status", "--json"),
		"tasks/pushNotificationConfig/list": rpc(`{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/list","params":{"id":"` + a2aTask.Task.ID + `"}}`),
		"tasks/pushNotificationConfig/get":  rpc(`{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/get","params":{"id":"` + a2aTask.Task.ID + `","pushNotificationConfigId":"` + a2aTask.Task.ID + `"}}`),
	}
	for what, body := range reads {
		for _, s := range secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s shows the secret %s: %.600s", what, s, body)
			}
		}
	}
	// What holds a config or a webhook says its secrets are set.
	for _, what := range []string{"GET /a2a/tasks/{a2a task}", "GET /a2a/agents", "the stream from seq 0", "the stream's snapshot", "mailroom agent list --json",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/get"} {
		body := strings.ReplaceAll(reads[what], `": "`, `":"`) // the CLI's JSON is indented
		if !strings.Contains(body, `"token":"***"`) || !strings.Contains(body, `"credentials":"***"`) {
			t.Errorf("%s does not show the secrets as set (\"***\"): %.600s", what, reads[what])
		}
	}
}

// readStream reads the event stream at url up to the event with id last
// (and, with agents, until an agents listing came too) and returns its
// blocks' bytes.
func readStream(t *testing.T, ctx context.Context, url string, last uint64, agents bool) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := ssetest.NewReader(resp.Body)
	var out strings.Builder
	upTo, listing := false, !agents
	for !upTo || !listing {
		b, err := rd.Next()
		if err != nil {
			t.Fatalf("%s: %v after %.300s", url, err, out.String())
		}
		out.WriteString(b.Raw)
		switch {
		case b.Event == mailbox.EventAgents:
			listing = true
		case b.ID != "":
			if seq, _ := strconv.ParseUint(b.ID, 10, 64); seq >= last {
				upTo = true
			}
		}
	}
	return out.String()
}
