package facetest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/mailbox"
)

// testResources: registered agents' cards are resources; a task is a
// resource whose subscribers hear of every change of its state, in the
// protocol hosts speak today (a subscription is a request) and in
// 2026-07-28's (a subscriptions/listen stream).
func testResources(t *testing.T, connect Connect, start Factory, protocol string) {
	d := StartDaemon(t, start)
	if _, err := d.Client(t, Oncall).RegisterAgent(t.Context(), Coder, mailbox.AgentCard{Name: "Coder", Description: "writes Go",
		Skills: []mailbox.AgentSkill{{ID: "code", Name: "Code"}}}); err != nil {
		t.Fatal(err)
	}
	updates := make(chan string, 16)
	acks := make(chan struct{}, 16)
	planner := connect(t, d, d.Tokens[Planner], Session{Protocol: protocol, Updated: func(uri string) { updates <- uri }, Acked: func() { acks <- struct{}{} }})
	coder := connect(t, d, d.Tokens[Coder], Session{Protocol: Legacy})

	cardResources(t, d, planner)
	taskResources(t, connect, d, planner, coder, updates, acks)
}

// cardResources: the registered agents' cards are listed as resources,
// as they stand each time the host asks, and read.
func cardResources(t *testing.T, d *Daemon, planner *mcp.ClientSession) {
	res, err := planner.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cardURI := "mailroom://agents/" + Coder + "/card"
	if !slices.ContainsFunc(res.Resources, func(r *mcp.Resource) bool { return r.URI == cardURI }) {
		t.Fatalf("resources %v lack %s", res.Resources, cardURI)
	}
	// A card registered during the session is listed the next time the
	// host asks; one deregistered is not.
	oncall := d.Client(t, Oncall)
	if _, err := oncall.RegisterAgent(t.Context(), "reviewer@local", mailbox.AgentCard{Name: "Reviewer"}); err != nil {
		t.Fatal(err)
	}
	if err := oncall.DeregisterAgent(t.Context(), Coder); err != nil {
		t.Fatal(err)
	}
	res, err = planner.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	if want := []string{"mailroom://agents/reviewer@local/card"}; !slices.Equal(uris, want) {
		t.Errorf("resources after a registration and a deregistration: %v, want %v", uris, want)
	}
	if _, err := oncall.RegisterAgent(t.Context(), Coder, mailbox.AgentCard{Name: "Coder", Description: "writes Go",
		Skills: []mailbox.AgentSkill{{ID: "code", Name: "Code"}}}); err != nil {
		t.Fatal(err)
	}
	card, err := planner.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: cardURI})
	if err != nil {
		t.Fatal(err)
	}
	wantIn(t, "the card", card.Contents[0].Text, `"name":"Coder"`, `"code"`)
	var found struct {
		Agents []struct {
			Agent  string `json:"agent"`
			Skills []struct {
				ID string `json:"id"`
			} `json:"skills"`
		} `json:"agents"`
	}
	Call(t, planner, "find_agents_by_skill", map[string]any{"skill": "code"}, &found)
	if len(found.Agents) != 1 || found.Agents[0].Agent != Coder {
		t.Errorf("find_agents_by_skill(code) = %+v, want %s", found, Coder)
	}
}

// taskResources: a task's subscribers hear of every change of its state;
// a session that may not read the mailbox cannot subscribe.
func taskResources(t *testing.T, connect Connect, d *Daemon, planner, coder *mcp.ClientSession, updates <-chan string, acks <-chan struct{}) {
	var s sent
	Call(t, planner, "send_task", map[string]any{"to": Coder, "intent": "watch me"}, &s)
	uri := "mailroom://tasks/" + s.TaskID
	if err := planner.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
	if v := planner.InitializeResult().ProtocolVersion; v >= "2026-07-28" {
		// The listen stream is not waited for: its acknowledgement says
		// the server holds the subscription. (A transport may settle on
		// an older version, where Subscribe's answer says it.)
		<-acks
	}
	readState := func() string {
		t.Helper()
		r, err := planner.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatal(err)
		}
		var v task
		if err := json.Unmarshal([]byte(r.Contents[0].Text), &v); err != nil {
			t.Fatal(err)
		}
		return v.State
	}
	if got := readState(); got != mailbox.TaskQueued {
		t.Fatalf("the task resource's state = %q, want queued", got)
	}
	var l leased
	Call(t, coder, "lease_task", map[string]any{}, &l)
	select {
	case got := <-updates:
		if got != uri {
			t.Fatalf("updated %s, want %s", got, uri)
		}
	case <-t.Context().Done():
		t.Fatal("no update after the lease")
	}
	if got := readState(); got != mailbox.TaskInFlight {
		t.Errorf("after the update the task's state = %q, want in_flight", got)
	}
	Call(t, coder, "post_result", map[string]any{"task_id": s.TaskID, "lease_id": l.Tasks[0].LeaseID, "status": "ok", "text": "seen"}, nil)
	if got := <-updates; got != uri {
		t.Fatalf("updated %s, want %s", got, uri)
	}
	if got := readState(); got != mailbox.TaskResultPending {
		t.Errorf("after the result the task's state = %q, want result_pending", got)
	}
	// The coder did not send the task and may not read the mailbox (its
	// session speaks the protocol whose subscription is answered).
	if err := coder.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "a2a.read") {
		t.Errorf("the coder's subscription: err %v, want a refusal naming a2a.read", err)
	}
	// The mailer reads the task it sent, but may not follow the event
	// stream the updates come from.
	mailer := connect(t, d, d.Tokens[Mailer], Session{Protocol: Legacy})
	Call(t, mailer, "send_task", map[string]any{"to": Coder, "intent": "unwatched"}, &s)
	if err := mailer.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "mailroom://tasks/" + s.TaskID}); err == nil ||
		!strings.Contains(err.Error(), "a2a.read") || !strings.Contains(err.Error(), "get_task") {
		t.Errorf("the mailer's subscription: err %v, want a refusal naming a2a.read and get_task", err)
	}
}
