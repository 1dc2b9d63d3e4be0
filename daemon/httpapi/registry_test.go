package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// registryDaemon runs a daemon with a token per role of the registry:
// registrar (a2a.register), reader (a2a.read) and root (a2a.admin).
func registryDaemon(t *testing.T, clock *testclock.Clock) (*daemontest.Daemon, func(who, method, path, body string) reply) {
	t.Helper()
	d := daemontest.Start(t, daemontest.Options{Now: clock.Now, Tokens: []auth.Token{
		{Principal: "registrar", Token: "t-registrar", Caps: []string{auth.CapRegister}},
		{Principal: "reader", Token: "t-reader", Caps: []string{auth.CapRead}},
		{Principal: "root", Token: "t-root", Caps: []string{auth.CapAdmin}},
	}})
	do := func(who, method, path, body string) reply {
		t.Helper()
		ctype := ""
		if body != "" {
			ctype = "application/json"
		}
		return request(t, d, method, path, ctype, body, map[string]string{"Authorization": "Bearer t-" + who})
	}
	return d, do
}

// strictDecode decodes an answer into out, refusing fields out does not
// have: the answer's shape is exactly the documented one.
func strictDecode(t *testing.T, r reply, out any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("answer %s does not decode into %T: %v", r.body, out, err)
	}
}

// cardJSON is a registered card as the wire has it: every list present.
func cardJSON(name string, skills ...string) string {
	var s []string
	for _, id := range skills {
		s = append(s, fmt.Sprintf(`{"id":%q,"name":%q,"description":"","tags":[],"examples":[]}`, id, strings.ToUpper(id)))
	}
	return fmt.Sprintf(`{"name":%q,"description":"","version":"","skills":[%s],"default_input_modes":[],"default_output_modes":[]}`, name, strings.Join(s, ","))
}

// registeredAgentJSON is one registered agent without tasks in GET /a2a/agents.
func registeredAgentJSON(agent, card string, atMs int64) string {
	return fmt.Sprintf(`{"agent":%q,"queued":0,"in_flight":0,"oldest_lease_age_ms":0,"results_pending":0,"results_ok_5m":0,"results_error_5m":0,"last_seen_ms":0,"card":%s,"registered_at_ms":%d}`,
		agent, card, atMs)
}

func TestRegistryRoutes(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_767_225_600_000)
	clock := testclock.New(t0)
	d, do := registryDaemon(t, clock)
	listing := func(path string) string {
		t.Helper()
		r := do("reader", "GET", path, "")
		if r.status != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, r.status, r.body)
		}
		return strings.TrimSpace(string(r.body))
	}
	lastSeq := func() uint64 {
		t.Helper()
		var h struct {
			LastSeq uint64 `json:"last_seq"`
		}
		if err := json.Unmarshal(request(t, d, "GET", "/healthz", "", "", nil).body, &h); err != nil {
			t.Fatal(err)
		}
		return h.LastSeq
	}
	agents := func(list ...string) string {
		return `{"kind":"a2a_agents","agents":[` + strings.Join(list, ",") + `]}`
	}
	if got := listing("/a2a/agents"); got != agents() {
		t.Fatalf("a new daemon lists %s", got)
	}

	// Refusals: each changes nothing, neither the listing nor the log.
	before, seq := listing("/a2a/agents"), lastSeq()
	for _, r := range []struct {
		name, who, method, path, body string
		status                        int
		field, capability, text       string
	}{
		{"a registration with a2a.read", "reader", "PUT", "/a2a/agents/coder@local", `{"name":"Coder"}`, 403, "", auth.CapRegister, "may not register agents"},
		{"duplicate skill ids", "registrar", "PUT", "/a2a/agents/coder@local", `{"name":"Coder","skills":[{"id":"fix","name":"A"},{"id":"fix","name":"B"}]}`, 400, "skills[1].id", "", "skills[0] already has"},
		{"a blank name", "registrar", "PUT", "/a2a/agents/coder@local", `{"name":" "}`, 400, "name", "", "name: got"},
		{"a blank tag", "registrar", "PUT", "/a2a/agents/coder@local", `{"name":"C","skills":[{"id":"fix","name":"F","tags":[""]}]}`, 400, "skills[0].tags[0]", "", ""},
		{"a null card", "registrar", "PUT", "/a2a/agents/coder@local", `null`, 400, "", "", ""},
		{"no body", "registrar", "PUT", "/a2a/agents/coder@local", ``, 400, "", "", ""},
		{"a query parameter", "registrar", "PUT", "/a2a/agents/coder@local?skill=fix", `{"name":"C"}`, 400, "skill", "", "unknown query parameter"},
		{"an empty agent", "registrar", "PUT", "/a2a/agents/", `{"name":"C"}`, 400, "agent", "", ""},
		{"a deregistration with a2a.read", "reader", "DELETE", "/a2a/agents/coder@local", ``, 403, "", auth.CapRegister, ""},
		{"a deregistration of an unregistered agent", "registrar", "DELETE", "/a2a/agents/coder@local", ``, 404, "agent", "", "coder@local is not registered"},
		{"a listing with a2a.register", "registrar", "GET", "/a2a/agents", ``, 403, "", auth.CapRead, ""},
		{"a skill listing with a2a.register", "registrar", "GET", "/a2a/agents?skill=fix", ``, 403, "", auth.CapRead, ""},
	} {
		got := do(r.who, r.method, r.path, r.body)
		if got.status != r.status {
			t.Errorf("%s: %d %s, want %d", r.name, got.status, got.body, r.status)
			continue
		}
		e := errorBody(t, got)
		if r.field != "" && (e.Details == nil || e.Details.Field != r.field) {
			t.Errorf("%s: %s does not name field %s", r.name, got.body, r.field)
		}
		if r.capability != "" && (e.Details == nil || e.Details.Capability != r.capability) {
			t.Errorf("%s: %s does not name capability %s", r.name, got.body, r.capability)
		}
		if !strings.Contains(e.Message, r.text) {
			t.Errorf("%s: %q does not say %q", r.name, e.Message, r.text)
		}
		if after := listing("/a2a/agents"); after != before {
			t.Errorf("%s changed the listing:\n%s\n%s", r.name, before, after)
		}
		if s := lastSeq(); s != seq {
			t.Errorf("%s appended to the log: seq %d, was %d", r.name, s, seq)
		}
	}

	// A registration answers the entry as the registry holds it.
	clock.Set(t0.Add(time.Second))
	coderAt := clock.Now().UnixMilli()
	r := do("registrar", "PUT", "/a2a/agents/coder@local", `{"name":"Coder","skills":[{"id":"fix","name":"FIX"}]}`)
	if r.status != http.StatusOK {
		t.Fatalf("registration = %d %s", r.status, r.body)
	}
	want := fmt.Sprintf(`{"kind":"a2a_agent_registered","agent":{"agent":"coder@local","card":%s,"registered_at_ms":%d,"principal":"registrar"}}`, cardJSON("Coder", "fix"), coderAt)
	if got := strings.TrimSpace(string(r.body)); got != want {
		t.Errorf("registration answered\n%s\nwant\n%s", got, want)
	}
	var reg mailbox.AgentRegisteredResponse
	strictDecode(t, r, &reg)
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("registration answered Content-Type %q", ct)
	}

	clock.Set(t0.Add(2 * time.Second))
	writerAt := clock.Now().UnixMilli()
	if r := do("root", "PUT", "/a2a/agents/writer@local", `{"name":"Writer","skills":[{"id":"write","name":"WRITE"},{"id":"fix","name":"FIX"}]}`); r.status != http.StatusOK {
		t.Fatalf("registration by a2a.admin = %d %s", r.status, r.body)
	}
	// An agent with a task and no card is listed, but never for a skill.
	if r := do("root", "POST", "/a2a/tasks", `{"sender":"planner@local","recipient":"idle@local","intent_text":"x"}`); r.status != http.StatusOK {
		t.Fatalf("send = %d %s", r.status, r.body)
	}
	coder := registeredAgentJSON("coder@local", cardJSON("Coder", "fix"), coderAt)
	writer := registeredAgentJSON("writer@local", cardJSON("Writer", "write", "fix"), writerAt)
	for _, tc := range []struct{ skill, want string }{
		{"fix", agents(coder, writer)},
		{"write", agents(writer)},
		{"review", agents()},
		{"FIX", agents()}, // skill ids match exactly
	} {
		if got := listing("/a2a/agents?skill=" + tc.skill); got != tc.want {
			t.Errorf("?skill=%s lists\n%s\nwant\n%s", tc.skill, got, tc.want)
		}
	}
	var all mailbox.AgentsResponse
	strictDecode(t, do("reader", "GET", "/a2a/agents", ""), &all)
	var names []string
	for _, a := range all.Agents {
		names = append(names, a.Agent)
		if (a.Card != nil) != (a.Agent == "coder@local" || a.Agent == "writer@local") {
			t.Errorf("%s listed with card %+v", a.Agent, a.Card)
		}
	}
	if got := strings.Join(names, " "); got != "coder@local idle@local planner@local writer@local" {
		t.Errorf("the full listing holds %s", got)
	}

	// Replacing a card: the skill listing follows, and the time is the
	// replacement's.
	clock.Set(t0.Add(3 * time.Second))
	replacedAt := clock.Now().UnixMilli()
	if r := do("registrar", "PUT", "/a2a/agents/coder@local", `{"name":"Coder","skills":[{"id":"review","name":"REVIEW"}]}`); r.status != http.StatusOK {
		t.Fatalf("replacement = %d %s", r.status, r.body)
	}
	coder = registeredAgentJSON("coder@local", cardJSON("Coder", "review"), replacedAt)
	if got := listing("/a2a/agents?skill=fix"); got != agents(writer) {
		t.Errorf("?skill=fix after coder@local dropped it: %s", got)
	}
	if got := listing("/a2a/agents?skill=review"); got != agents(coder) {
		t.Errorf("?skill=review after coder@local took it: %s", got)
	}

	// Agent ids may hold / : + ~: the path's rest is the agent.
	odd := "team/coder:1+x~y"
	if r := do("registrar", "PUT", "/a2a/agents/"+odd, `{"name":"Odd","skills":[{"id":"odd","name":"ODD"}]}`); r.status != http.StatusOK {
		t.Fatalf("registering %s = %d %s", odd, r.status, r.body)
	}
	if got := listing("/a2a/agents?skill=odd"); !strings.Contains(got, `"agent":"`+odd+`"`) {
		t.Errorf("?skill=odd lists %s, want %s", got, odd)
	}

	// The registry survives a restart.
	d.Restart()
	if got := listing("/a2a/agents?skill=fix"); got != agents(writer) {
		t.Errorf("?skill=fix after a restart: %s", got)
	}
	if got := listing("/a2a/agents?skill=review"); got != agents(coder) {
		t.Errorf("?skill=review after a restart: %s", got)
	}

	// Deregistration answers the agent, and it is gone from every listing.
	seq = lastSeq()
	for _, agent := range []string{"coder@local", odd} {
		r := do("registrar", "DELETE", "/a2a/agents/"+agent, "")
		if want := `{"kind":"a2a_agent_deregistered","agent":"` + agent + `"}`; r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != want {
			t.Errorf("deregistering %s = %d %s, want 200 %s", agent, r.status, r.body, want)
		}
		var out mailbox.AgentDeregisteredResponse
		strictDecode(t, r, &out)
	}
	if s := lastSeq(); s != seq+2 {
		t.Errorf("two deregistrations moved the log from %d to %d", seq, s)
	}
	if got := listing("/a2a/agents?skill=review"); got != agents() {
		t.Errorf("?skill=review after the deregistration: %s", got)
	}
	if got := listing("/a2a/agents"); strings.Contains(got, "coder@local") || strings.Contains(got, odd) {
		t.Errorf("the deregistered agents (no tasks) are still listed: %s", got)
	}
	r = do("registrar", "DELETE", "/a2a/agents/coder@local", "")
	if r.status != http.StatusNotFound || errorBody(t, r).Details.Field != "agent" {
		t.Errorf("deregistering twice = %d %s, want 404 naming agent", r.status, r.body)
	}
}

// Without tokens (loopback, trusted) the registry routes need nothing, and
// the registry shows in the snapshot every stream opens with.
func TestRegistryWithoutTokensAndInTheSnapshot(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})
	var reg mailbox.AgentRegisteredResponse
	call(t, d, "PUT", "/a2a/agents/coder@local", mailbox.AgentCard{Name: "Coder", Skills: []mailbox.AgentSkill{{ID: "fix", Name: "Fix"}}}, &reg)
	if reg.Kind != mailbox.KindAgentRegistered || reg.Agent.Agent != "coder@local" || reg.Agent.Principal != "" || reg.Agent.RegisteredAtMs == 0 {
		t.Fatalf("registration answered %+v", reg)
	}
	snap := d.State(t)
	if len(snap.Registry) != 1 || snap.Registry[0].Agent != "coder@local" || !snap.Registry[0].Card.HasSkill("fix") || snap.Registry[0].RegisteredAtMs != reg.Agent.RegisteredAtMs {
		t.Fatalf("the stream's snapshot holds registry %+v", snap.Registry)
	}
	call(t, d, "DELETE", "/a2a/agents/coder@local", nil, nil)
	if snap := d.State(t); len(snap.Registry) != 0 {
		t.Fatalf("after the deregistration the snapshot holds %+v", snap.Registry)
	}
}
