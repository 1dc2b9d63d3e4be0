package a2a_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// With tokens, every edge route but the card needs one; sending needs
// a2a.send.<agent>; reading, following and canceling reach only the tasks
// the caller sent, unless a2a.read (reads) or a2a.admin (everything).

var edgeTokens = []auth.Token{
	{Principal: "ops@local", Token: "tok-admin", Caps: []string{auth.CapAdmin}},
	{Principal: "alice@local", Token: "tok-alice", Caps: []string{auth.CapSendPrefix + "coder@local"}},
	{Principal: "bob@local", Token: "tok-bob", Caps: []string{auth.CapSendPrefix + "coder@local"}},
	{Principal: "eve@local", Token: "tok-eve", Caps: []string{auth.CapSendPrefix + "other@local"}},
	{Principal: "reader@local", Token: "tok-reader", Caps: []string{auth.CapRead}},
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// rpc posts a JSON-RPC request and returns the HTTP status and the reply.
func rpc(t *testing.T, base, tok, body string) (int, rpcReply) {
	t.Helper()
	var h map[string]string
	if tok != "" {
		h = bearer(tok)
	}
	r := post(t, base, h, body)
	var rep rpcReply
	if err := json.Unmarshal(r.body, &rep); err != nil {
		t.Fatalf("reply %d %s: %v", r.status, r.body, err)
	}
	return r.status, rep
}

func TestEdgeAccessWithTokens(t *testing.T) {
	it := newInterop(t, daemontest.Options{Tokens: edgeTokens})
	base := it.register("coder@local")

	// The card is public, and says how to authenticate.
	r := do(t, mustRequest(t, "GET", base+".well-known/agent-card.json"), nil)
	var card struct {
		SecuritySchemes map[string]map[string]any `json:"securitySchemes"`
		Security        []map[string][]string     `json:"security"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &card) != nil {
		t.Fatalf("card without a token: %d %s", r.status, r.body)
	}
	if s := card.SecuritySchemes["bearer"]; s["type"] != "http" || s["scheme"] != "bearer" || len(card.Security) != 1 {
		t.Fatalf("card security %+v %+v, want a bearer scheme required", card.SecuritySchemes, card.Security)
	}

	send := func(tok, msgID string) (int, rpcReply) {
		return rpc(t, base, tok, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"`+msgID+`","parts":[{"kind":"text","text":"hi"}],"metadata":{"mailroom.sender":"ops@local"}},"configuration":{"blocking":false}}}`)
	}
	// No token, or a bad one: 401 on both bindings.
	if st, rep := send("", "m0"); st != 401 || rep.Error == nil {
		t.Fatalf("send without a token: %d %+v", st, rep)
	}
	if st, _ := send("nope", "m0"); st != 401 {
		t.Fatalf("send with an unknown token: %d", st)
	}
	if r := do(t, mustRequest(t, "GET", base+"tasks"), nil); r.status != 401 || !strings.Contains(string(r.body), "UNAUTHENTICATED") {
		t.Fatalf("REST list without a token: %d %s", r.status, r.body)
	}
	// Sending needs a2a.send.<agent>.
	if st, rep := send("tok-eve", "m1"); st != 403 || rep.Error == nil || !strings.Contains(rep.Error.Message, "a2a.send.coder@local") {
		t.Fatalf("send without a2a.send.coder@local: %d %+v", st, rep.Error)
	}
	// The token's principal is the sender, whatever the metadata claims.
	st, rep := send("tok-alice", "m1")
	var task struct {
		ID string `json:"id"`
	}
	if st != 200 || rep.Error != nil || json.Unmarshal(rep.Result, &task) != nil {
		t.Fatalf("alice's send: %d %+v", st, rep.Error)
	}
	q, err := it.native.Queue(it.ctx, queueAll)
	if err != nil || len(q.Tasks) != 1 || q.Tasks[0].Task.Sender != "alice@local" {
		t.Fatalf("queue %+v %v: want alice's task sent as alice@local", q.Tasks, err)
	}

	get := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"` + task.ID + `"}}`
	cancel := `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":"` + task.ID + `"}}`
	for _, c := range []struct {
		tok, body string
		status    int
		want      string
	}{
		{"tok-alice", get, 200, ""},
		{"tok-reader", get, 200, ""},
		{"tok-admin", get, 200, ""},
		{"tok-bob", get, 403, "a2a.read"},
		{"tok-bob", cancel, 403, "a2a.admin"},
		{"tok-reader", cancel, 403, "a2a.admin"},
	} {
		st, rep := rpc(t, base, c.tok, c.body)
		if st != c.status || (c.want != "") != (rep.Error != nil) || (rep.Error != nil && !strings.Contains(rep.Error.Message, c.want)) {
			t.Errorf("%s %.40s: %d %+v, want %d naming %q", c.tok, c.body[30:], st, rep.Error, c.status, c.want)
		}
	}
	if q, _ := it.native.Queue(it.ctx, queueAll); len(q.Tasks) != 1 {
		t.Fatalf("a refused cancel changed the queue: %+v", q.Tasks)
	}

	// Listing: a sender sees its own tasks, a reader every task.
	if st, rep := send("tok-bob", "m2"); st != 200 || rep.Error != nil {
		t.Fatalf("bob's send: %d %+v", st, rep.Error)
	}
	count := func(tok string) int {
		req := mustRequest(t, "GET", base+"tasks")
		r := do(t, req, map[string]string{"Authorization": "Bearer " + tok, "A2A-Version": "1.0"})
		var list struct {
			Tasks []json.RawMessage `json:"tasks"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil {
			t.Fatalf("list as %s: %d %s", tok, r.status, r.body)
		}
		return len(list.Tasks)
	}
	if a, b, rd := count("tok-alice"), count("tok-bob"), count("tok-reader"); a != 1 || b != 1 || rd != 2 {
		t.Fatalf("listed tasks: alice %d, bob %d, reader %d; want 1, 1, 2", a, b, rd)
	}

	// The sender cancels its own task; the audit trail names it.
	if st, rep := rpc(t, base, "tok-alice", cancel); st != 200 || rep.Error != nil {
		t.Fatalf("alice cancels her task: %d %+v", st, rep.Error)
	}
	audit, err := it.native.Audit(it.ctx, task.ID, 0)
	if err != nil || len(audit) != 1 || audit[0].Principal != "alice@local" {
		t.Fatalf("audit %+v %v: want the cancel by alice@local", audit, err)
	}
}

var queueAll = mailbox.QueueFilter{}

// A task's push configs are its sender's (and an admin's): another caller
// can neither set, read nor delete them, and its refusals change nothing.
func TestPushConfigsAreTheSenders(t *testing.T) {
	it := newInterop(t, daemontest.Options{Tokens: edgeTokens})
	base := it.register("coder@local")
	_, rep := rpc(t, base, "tok-alice", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-push","parts":[{"kind":"text","text":"hi"}]},`+
		`"configuration":{"blocking":false,"pushNotificationConfig":{"url":"http://127.0.0.1:9/alice","token":"alice-secret"}}}}`)
	var task struct {
		ID string `json:"id"`
	}
	if rep.Error != nil || json.Unmarshal(rep.Result, &task) != nil || task.ID == "" {
		t.Fatalf("alice's send with a config: %+v", rep)
	}
	set := `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"` + task.ID + `","pushNotificationConfig":{"id":"b","url":"http://127.0.0.1:9/bob"}}}`
	list := `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/list","params":{"id":"` + task.ID + `"}}`
	del := `{"jsonrpc":"2.0","id":4,"method":"tasks/pushNotificationConfig/delete","params":{"id":"` + task.ID + `","pushNotificationConfigId":"` + task.ID + `"}}`
	before := it.seq()
	for _, body := range []string{set, list, del} {
		status, rep := rpc(t, base, "tok-bob", body)
		if rep.Error == nil || strings.Contains(string(rep.Result), "alice-secret") {
			t.Errorf("bob: %d %+v, want a refusal that shows nothing of alice's config", status, rep)
		}
	}
	if after := it.seq(); after != before {
		t.Errorf("bob's refused calls changed the mailbox: seq %d -> %d", before, after)
	}
	// The owner and an admin see the config, its token redacted: the
	// secret leaves the daemon only in the POST to the receiver.
	for _, tok := range []string{"tok-alice", "tok-admin"} {
		if _, rep := rpc(t, base, tok, list); rep.Error != nil || !strings.Contains(string(rep.Result), `"url":"http://127.0.0.1:9/alice"`) ||
			!strings.Contains(string(rep.Result), `"token":"***"`) || strings.Contains(string(rep.Result), "alice-secret") {
			t.Errorf("%s lists the configs: %s %+v, want alice's, its token shown as ***", tok, rep.Result, rep.Error)
		}
	}
}
