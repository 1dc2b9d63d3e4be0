package covenant_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/covenant"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/mailbox"
)

// The tests speak to a real daemon exactly as Covenant's client does: the
// bodies its serde types write (AgentIds as objects, optional fields left
// out), and every answer read into Go mirrors of its types
// (covenant-a2a's A2ATask, A2ATaskResult, A2ATaskQueueEntry,
// A2ARepairOutcome; covenant-ipc's Response variants), refusing any field
// those types do not have, with each kind string checked exactly.

// Public keys: base58 of 32 bytes of 1 to 32, and of 32 bytes of 11.
const (
	alicePK = "4wBqpZM9xaSheZzJSMawUKKwhdpChKbZ5eu5ky4Vigw"
	bobPK   = "k7FaK87WHGVXzkaoHb7CdVPgkKDQhZ29VLDeBVbDfYn"
)

type cvAgentID struct {
	Display string `json:"display"`
	Pubkey  string `json:"pubkey"`
}

type cvIdempotency struct {
	DuplicateSafety string `json:"duplicate_safety"`
	Key             string `json:"key"`
}

type cvTask struct {
	ID          string         `json:"id"`
	Sender      cvAgentID      `json:"sender"`
	Recipient   cvAgentID      `json:"recipient"`
	IntentText  string         `json:"intent_text"`
	TaskKind    *string        `json:"task_kind"`
	Parent      *string        `json:"parent"`
	DeadlineMs  *uint64        `json:"deadline_ms"`
	Idempotency *cvIdempotency `json:"idempotency"`
}

type cvContent struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text"`
	Value json.RawMessage `json:"value"`
}

type cvResult struct {
	TaskID       string      `json:"task_id"`
	Status       string      `json:"status"`
	Content      []cvContent `json:"content"`
	ErrorMessage *string     `json:"error_message"`
}

type cvQueueEntry struct {
	State      string     `json:"state"`
	Task       cvTask     `json:"task"`
	LeaseID    *string    `json:"lease_id"`
	LeasedTo   *cvAgentID `json:"leased_to"`
	LeasedAtMs *uint64    `json:"leased_at_ms"`
	Attempt    uint32     `json:"attempt"`
}

type cvRepairOutcome struct {
	TaskID  string    `json:"task_id"`
	Action  string    `json:"action"`
	State   string    `json:"state"`
	Attempt uint32    `json:"attempt"`
	Result  *cvResult `json:"result"`
}

// The Response variants the a2a routes answer.
type (
	cvTaskQueued struct {
		Kind   string `json:"kind"`
		TaskID string `json:"task_id"`
	}
	cvTaskOpt struct {
		Kind string  `json:"kind"`
		Task *cvTask `json:"task"`
	}
	cvTasks struct {
		Kind  string   `json:"kind"`
		Tasks []cvTask `json:"tasks"`
	}
	cvResultPosted struct {
		Kind   string `json:"kind"`
		TaskID string `json:"task_id"`
	}
	cvResultOpt struct {
		Kind   string    `json:"kind"`
		Result *cvResult `json:"result"`
	}
	cvResults struct {
		Kind    string     `json:"kind"`
		Results []cvResult `json:"results"`
	}
	cvQueue struct {
		Kind    string         `json:"kind"`
		Tasks   []cvQueueEntry `json:"tasks"`
		Results []cvResult     `json:"results"`
	}
	cvRepaired struct {
		Kind    string          `json:"kind"`
		Outcome cvRepairOutcome `json:"outcome"`
	}
	cvError struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
)

// peer is a Covenant client: a daemon URL and, with tokens on, a bearer.
type peer struct {
	t     *testing.T
	base  string
	token string
}

func newPeer(t *testing.T, d *daemontest.Daemon, token string) *peer {
	return &peer{t: t, base: d.URL() + "/compat/covenant", token: token}
}

// do sends a request as Covenant's reqwest client does (JSON bodies with
// their content type, the bearer when there is one) and returns the
// status, the header and the body.
func (p *peer) do(method, path, body string) (int, http.Header, []byte) {
	p.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, p.base+path, rd)
	if err != nil {
		p.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// call sends a request that must succeed and reads its answer into out as
// serde would, refusing fields out's type does not have, and requires
// the answer's kind to be kind.
func call[T any](p *peer, method, path, body, kind string) T {
	p.t.Helper()
	status, _, b := p.do(method, path, body)
	if status != http.StatusOK {
		p.t.Fatalf("%s %s = %d %s", method, path, status, b)
	}
	var probe struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(b, &probe); err != nil || probe.Kind != kind {
		p.t.Fatalf("%s %s answered %s, want kind %q", method, path, b, kind)
	}
	return strict[T](p.t, b)
}

func strict[T any](t *testing.T, b []byte) T {
	t.Helper()
	var out T
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("the answer %s does not decode as Covenant's type %T: %v", b, out, err)
	}
	return out
}

// keys returns the keys of the JSON object at path (dot-separated) in b.
func keys(t *testing.T, b []byte, path ...string) []string {
	t.Helper()
	m := object(t, b, path...)
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// object returns the JSON object at path (dot-separated) in b.
func object(t *testing.T, b []byte, path ...string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	for _, p := range path {
		var inner map[string]json.RawMessage
		if err := json.Unmarshal(m[p], &inner); err != nil {
			t.Fatalf("%s at %s: %v", b, p, err)
		}
		m = inner
	}
	return m
}

// checkAgentID requires an AgentId Covenant's deserializer accepts: a
// display of <local>@<host> in [A-Za-z0-9_.-], and a key of 32 bytes.
func checkAgentID(t *testing.T, what string, a cvAgentID, display, pubkey string) {
	t.Helper()
	if a.Display != display || a.Pubkey != pubkey {
		t.Errorf("%s = %+v, want {%s %s}", what, a, display, pubkey)
	}
	if err := mailbox.ValidateCovenantPubkey(what+".pubkey", a.Pubkey); err != nil {
		t.Errorf("%s: Covenant would refuse it: %v", what, err)
	}
	local, host, ok := strings.Cut(a.Display, "@")
	valid := func(s string) bool {
		return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == ""
	}
	if !ok || !valid(local) || !valid(host) {
		t.Errorf("%s.display %q: Covenant would refuse it", what, a.Display)
	}
}

// covenantTask is the body Covenant's client posts for an A2ATask with no
// optional field set: serde leaves them out.
func covenantTask(id, text string) string {
	return `{"id":"` + id + `","sender":{"display":"alice@local","pubkey":"` + alicePK + `"},"recipient":{"display":"bob@local","pubkey":"` + bobPK + `"},"intent_text":"` + text + `"}`
}

func tokenFor(t *testing.T, principal string, caps ...string) (auth.Token, string) {
	t.Helper()
	secret, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	return auth.Token{Principal: principal, SHA256: hash, Caps: caps}, secret
}

// With tokens on, a task goes around the whole cycle through the dialect
// alone, each agent with its own token: alice sends, bob leases and posts
// the result, alice drains it. Leases and drains are the bearer's own.
func TestCycleWithTokens(t *testing.T) {
	aliceTok, aliceSecret := tokenFor(t, "alice@local", "a2a.send.bob@local", auth.CapDrain)
	bobTok, bobSecret := tokenFor(t, "bob@local", auth.CapRecv, "a2a.respond.alice@local")
	carolTok, carolSecret := tokenFor(t, "carol@local", auth.CapRecv, auth.CapDrain)
	readerTok, readerSecret := tokenFor(t, "reader", auth.CapRead)
	d := daemontest.Start(t, daemontest.Options{Tokens: []auth.Token{aliceTok, bobTok, carolTok, readerTok}})
	alice, bob, carol, reader := newPeer(t, d, aliceSecret), newPeer(t, d, bobSecret), newPeer(t, d, carolSecret), newPeer(t, d, readerSecret)

	const id = "a2a5eede-0000-4000-8000-00000000c0de"
	queued := call[cvTaskQueued](alice, "POST", "/a2a/tasks", covenantTask(id, "fetch papers"), "a2_a_task_queued")
	if queued.TaskID != id {
		t.Fatalf("a2_a_task_queued task_id = %q, want the client's %q", queued.TaskID, id)
	}

	// The queued task, read without taking it.
	tasks := call[cvTasks](reader, "GET", "/a2a/tasks/recent?limit=5", "", "a2_a_tasks")
	if len(tasks.Tasks) != 1 {
		t.Fatalf("recent tasks %+v", tasks)
	}
	checkAgentID(t, "recent sender", tasks.Tasks[0].Sender, "alice@local", alicePK)
	checkAgentID(t, "recent recipient", tasks.Tasks[0].Recipient, "bob@local", bobPK)

	// Carol's lease is hers: bob's task is not given to her.
	if got := call[cvTaskOpt](carol, "GET", "/a2a/tasks/next", "", "a2_a_task_opt"); got.Task != nil {
		t.Fatalf("carol leased %+v, which was sent to bob", got.Task)
	}
	_, _, raw := bob.do("GET", "/a2a/tasks/next", "")
	leased := strict[cvTaskOpt](t, raw)
	if leased.Task == nil || leased.Task.ID != id || leased.Task.IntentText != "fetch papers" {
		t.Fatalf("bob leased %s", raw)
	}
	checkAgentID(t, "task.sender", leased.Task.Sender, "alice@local", alicePK)
	checkAgentID(t, "task.recipient", leased.Task.Recipient, "bob@local", bobPK)
	if ks := keys(t, raw, "task"); !slices.Equal(ks, []string{"id", "intent_text", "recipient", "sender"}) {
		t.Errorf("the leased task has keys %v: optional fields that were never set must be left out, as serde leaves them", ks)
	}

	posted := call[cvResultPosted](bob, "POST", "/a2a/results", `{"task_id":"`+id+`","status":"ok","content":[{"type":"text","text":"3 papers"},{"type":"json","value":{"n":3}}]}`, "a2_a_result_posted")
	if posted.TaskID != id {
		t.Fatalf("a2_a_result_posted task_id = %q", posted.TaskID)
	}

	// The pending result, read without taking it.
	results := call[cvResults](reader, "GET", "/a2a/results/recent", "", "a2_a_results")
	if len(results.Results) != 1 || results.Results[0].TaskID != id {
		t.Fatalf("recent results %+v", results)
	}
	// Carol sent nothing: nothing of alice's is drained by her.
	if got := call[cvResultOpt](carol, "GET", "/a2a/results/next", "", "a2_a_result_opt"); got.Result != nil {
		t.Fatalf("carol drained %+v, a result for alice", got.Result)
	}
	_, _, raw = alice.do("GET", "/a2a/results/next", "")
	drained := strict[cvResultOpt](t, raw)
	if r := drained.Result; r == nil || r.TaskID != id || r.Status != "ok" || len(r.Content) != 2 || *r.Content[0].Text != "3 papers" || string(r.Content[1].Value) != `{"n":3}` {
		t.Fatalf("alice drained %s", raw)
	}
	if ks := keys(t, raw, "result"); !slices.Equal(ks, []string{"content", "status", "task_id"}) {
		t.Errorf("the drained result has keys %v: no error_message when there is none", ks)
	}
	if got := call[cvResultOpt](alice, "GET", "/a2a/results/next", "", "a2_a_result_opt"); got.Result != nil {
		t.Fatalf("a second drain gave %+v", got.Result)
	}

	// Without a token, Covenant's bearer refusal: 401, in its error shape.
	for _, path := range []string{"/a2a/tasks/next", "/a2a/queue"} {
		status, h, b := newPeer(t, d, "").do("GET", path, "")
		e := strict[cvError](t, b)
		if status != http.StatusUnauthorized || e.Kind != "error" || e.Message == "" || h.Get(covenant.HeaderErrorCode) != mailbox.CodeUnauthorized {
			t.Errorf("GET %s without a token = %d %s", path, status, b)
		}
	}
	// Alice may not send to carol, nor as bob: refused in the error shape,
	// as Covenant's capability checks are (200, kind error).
	for _, body := range []string{
		strings.Replace(covenantTask("a2a5eede-0000-4000-8000-00000000c0d1", "x"), `"bob@local"`, `"carol@local"`, 1),
		strings.Replace(covenantTask("a2a5eede-0000-4000-8000-00000000c0d2", "x"), `"alice@local"`, `"bob@local"`, 1),
	} {
		status, h, b := alice.do("POST", "/a2a/tasks", body)
		if e := strict[cvError](t, b); status != http.StatusOK || e.Kind != "error" || h.Get(covenant.HeaderErrorCode) != mailbox.CodeForbidden {
			t.Errorf("a send alice may not make = %d %s", status, b)
		}
	}
	// Health is open, as Covenant's is.
	if status, _, b := newPeer(t, d, "").do("GET", "/health", ""); status != 200 || string(b) != "{\"status\":\"ok\"}\n" {
		t.Errorf("GET /health = %d %s", status, b)
	}
	// So is the wire check, read as covenant-ipc's ProtocolInfo.
	_, _, b := newPeer(t, d, "").do("GET", "/version", "")
	v := strict[struct {
		Kind string `json:"kind"`
		Info struct {
			Protocol     string `json:"protocol"`
			Version      uint16 `json:"version"`
			MinSupported uint16 `json:"min_supported"`
			MaxSupported uint16 `json:"max_supported"`
		} `json:"info"`
	}](t, b)
	if v.Kind != "protocol_info" || v.Info.Protocol != "covenant.ipc" || v.Info.Version != 1 || v.Info.MinSupported > 1 || v.Info.MaxSupported < 1 {
		t.Errorf("GET /version = %s", b)
	}
}

// Without tokens the dialect serves everyone: a task with every optional
// field round-trips exactly through lease, queue and recent, survives a
// restart and a compaction, and its keys are in the event stream.
func TestOptionalFieldsRoundTripAndSurviveARestart(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	p := newPeer(t, d, "")
	const id, parent = "a2a5eede-0000-4000-8000-0000000000a1", "a2a5eede-0000-4000-8000-0000000000a0"
	body := `{"id":"` + id + `","sender":{"display":"alice@local","pubkey":"` + alicePK + `"},"recipient":{"display":"bob@local","pubkey":"` + bobPK + `"},` +
		`"intent_text":"fetch papers","task_kind":"search","parent":"` + parent + `","deadline_ms":4102444800000,"idempotency":{"duplicate_safety":"idempotent","key":"papers-1"}}`
	before := d.State(t).Seq
	call[cvTaskQueued](p, "POST", "/a2a/tasks", body, "a2_a_task_queued")

	// The event stream carries the keys with the task_sent event.
	if ev := streamedEvent(t, d, before); !strings.Contains(ev, `"covenant":{"sender_pubkey":"`+alicePK+`","recipient_pubkey":"`+bobPK+`"}`) {
		t.Fatalf("the task_sent event streamed is %s, without the task's keys", ev)
	}

	check := func(what string, raw []byte, path ...string) {
		t.Helper()
		got, sent := object(t, raw, path...), object(t, []byte(body))
		for k, v := range sent {
			// Compared as values: the daemon writes its own spacing.
			var a, b any
			_ = json.Unmarshal(v, &a)
			_ = json.Unmarshal(got[k], &b)
			if string(mustJSON(a)) != string(mustJSON(b)) {
				t.Errorf("%s: %s = %s, want %s as sent", what, k, got[k], v)
			}
		}
		if len(got) != len(sent) {
			t.Errorf("%s: keys %v, want exactly those sent", what, keys(t, raw, path...))
		}
	}
	_, _, raw := p.do("GET", "/a2a/tasks/recent", "")
	strict[cvTasks](t, raw)
	var recent struct{ Tasks []json.RawMessage }
	_ = json.Unmarshal(raw, &recent)
	check("recent", recent.Tasks[0])

	d.Restart()
	_, _, raw = p.do("GET", "/a2a/tasks/next", "")
	strict[cvTaskOpt](t, raw)
	check("leased after a restart", raw, "task")

	compact(t, d)
	d.Restart()
	_, _, raw = p.do("GET", "/a2a/queue?state_filter=in_flight&min_lease_age_ms=0", "")
	q := strict[cvQueue](t, raw)
	if len(q.Tasks) != 1 || q.Tasks[0].State != "in_flight" || q.Tasks[0].Attempt != 1 || q.Tasks[0].LeaseID == nil || q.Tasks[0].LeasedAtMs == nil || q.Tasks[0].LeasedTo == nil {
		t.Fatalf("queue after a compaction and a restart: %s", raw)
	}
	checkAgentID(t, "leased_to", *q.Tasks[0].LeasedTo, "bob@local", bobPK)
	var entry map[string]json.RawMessage
	_ = json.Unmarshal(raw, &entry)
	var entries []json.RawMessage
	_ = json.Unmarshal(entry["tasks"], &entries)
	check("queued after a compaction and a restart", entries[0], "task")
	if snap := d.State(t); snap.Tasks[0].Task.Covenant == nil || snap.Tasks[0].Task.Covenant.SenderPubkey != alicePK {
		t.Fatalf("the snapshot's task has covenant %+v", snap.Tasks[0].Task.Covenant)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// compact compacts the log through the native route.
func compact(t *testing.T, d *daemontest.Daemon) {
	t.Helper()
	resp, err := http.Post(d.URL()+"/a2a/compact", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("compact = %d", resp.StatusCode)
	}
}

// streamedEvent returns the data of the first event GET /a2a/events
// streams after seq.
func streamedEvent(t *testing.T, d *daemontest.Daemon, after uint64) string {
	t.Helper()
	req, err := http.NewRequest("GET", d.URL()+"/a2a/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Last-Event-ID", jsonUint(after))
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := ssetest.NewReader(resp.Body).NextEvent()
	if err != nil {
		t.Fatalf("the stream ended: %v", err)
	}
	return b.Data
}

func jsonUint(n uint64) string { return string(mustJSON(n)) }

// A Covenant peer keeps the bearer it has: Mailroom's token file takes
// the peer's base58 token as it is (or its sha256), naming the peer's
// display as the principal.
func TestCovenantPeerTokenAsItIs(t *testing.T) {
	const peerToken = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin" // base58, as Covenant's PeerToken writes it
	d := daemontest.Start(t, daemontest.Options{Tokens: []auth.Token{
		{Principal: "alice@local", Token: peerToken, Caps: []string{"a2a.send.bob@local"}},
	}})
	alice := newPeer(t, d, peerToken)
	call[cvTaskQueued](alice, "POST", "/a2a/tasks", covenantTask("a2a5eede-0000-4000-8000-0000000000e1", "with the peer's own token"), "a2_a_task_queued")
	status, _, b := newPeer(t, d, peerToken[1:]).do("POST", "/a2a/tasks", covenantTask("a2a5eede-0000-4000-8000-0000000000e2", "x"))
	if e := strict[cvError](t, b); status != http.StatusUnauthorized || e.Kind != "error" || !strings.Contains(e.Message, "unknown token") {
		t.Fatalf("another token = %d %s", status, b)
	}
}
