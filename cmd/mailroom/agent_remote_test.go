package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// startRemoteReports runs a daemon behind the stand-in for its
// dispatcher's reports (daemontest.RemoteReports) and returns both; the
// CLI talks to the proxy's address.
func startRemoteReports(t *testing.T) *daemontest.RemoteReports {
	t.Helper()
	d := daemontest.Start(t, daemontest.Options{})
	return daemontest.StartRemoteReports(t, d.URL(), nil)
}

// TestAgentRegisterRemote registers remote agents with and without a
// card, and lists them as an operator would see them while one of them
// fails: where it is, how it is called, its state and since when, what
// is in flight against its limit, its deliveries and its last error,
// escaped for the terminal.
func TestAgentRegisterRemote(t *testing.T) {
	rr := startRemoteReports(t)
	addr := rr.Addr()

	out := mustCLI(t, addr, "agent", "register", "echo@remote", "--remote", "http://127.0.0.1:9999/", "--binding", "jsonrpc-0.3", "--concurrency", "2")
	wantContains(t, "register --remote", out,
		"registered echo@remote as a remote agent: the daemon delivers its tasks to http://127.0.0.1:9999/ (binding jsonrpc-0.3, at most 2 in flight)\n",
		"its name and skills are the remote's own",
		"A2A base URL: http://"+addr+"/agents/echo@remote/\n")
	// A card file and --remote together: the card's name and skills,
	// the flags' remote with its defaults.
	card := writeCard(t, "name: Summarizer\nskills:\n  - id: sum\n    name: Sum\n")
	out = mustCLI(t, addr, "agent", "register", "sum@remote", "--card", card, "--remote", "https://sum.example.com/.well-known/agent-card.json")
	wantContains(t, "register --card --remote", out, "binding auto, at most 4 in flight", "served as Summarizer with 1 skill\n")
	mustCLI(t, addr, "agent", "register", "coder@local", "--name", "Coder")

	// Before the dispatcher reports anything, the listing says so, and
	// counts the leases from the mailbox.
	table := mustCLI(t, addr, "agent", "list")
	wantContains(t, "agent list, nothing reported", table,
		"remote agents (the daemon delivers their tasks):\n",
		"AGENT        URL", "BINDING", "STATE", "IN FLIGHT", "DELIVERIES", "LAST ERROR",
		"echo@remote  http://127.0.0.1:9999/", "jsonrpc-0.3", "not reported  0/2")
	if i := strings.Index(table, "remote agents"); strings.Contains(table[i:], "coder@local") {
		t.Errorf("agent list:\n%s\nwant coder@local only in the first table", table)
	}

	// Two tasks for echo@remote, one leased on its behalf.
	first := sendTask(t, addr, "planner@local", "echo@remote", "echo this")
	sendTask(t, addr, "planner@local", "echo@remote", "and this")
	l := leaseTask(t, addr, "echo@remote")
	now := time.Now()
	rr.Set(func(agent string) *mailbox.RemoteStatus {
		if agent != "echo@remote" {
			return &mailbox.RemoteStatus{Binding: mailbox.BindingJSONRPC10, State: mailbox.RemoteHealthy, SinceMs: now.Add(-time.Hour).UnixMilli(), Limit: 4}
		}
		return &mailbox.RemoteStatus{
			Binding: mailbox.BindingJSONRPC03, Endpoint: "http://127.0.0.1:9999/", State: mailbox.RemoteCircuitOpen,
			SinceMs: now.Add(-95 * time.Second).UnixMilli(), NextProbeMs: now.Add(30 * time.Second).UnixMilli(),
			LastError: "dial tcp 127.0.0.1:9999: connection refused \x1b[31m", InFlight: 1, Limit: 2,
			Deliveries: []mailbox.DeliveryStatus{
				{TaskID: l.Task.ID, LeaseID: l.Lease.LeaseID, State: mailbox.DeliveryRetrying, LastError: "connection refused", Attempts: 3},
				{TaskID: first, LeaseID: "gone", State: mailbox.DeliveryLost, RemoteTaskID: "rt-1"},
			},
		}
	})
	table = mustCLI(t, addr, "agent", "list")
	wantContains(t, "agent list, a circuit open", table,
		"circuit open for 1m35s, probe in ", "1/2", "1 lost, 1 retrying",
		`"dial tcp 127.0.0.1:9999: connection refused \x1b[31m"`,
		// auto, resolved to the remote's v1.0 binding.
		"sum@remote   https://sum.example.com/.well-known/agent-card.json", "jsonrpc-1.0 (auto)", "healthy for 1h0m0s")
	if strings.Contains(table, "\x1b") {
		t.Errorf("agent list wrote an escape sequence to the terminal:\n%q", table)
	}

	var listed mailbox.AgentsResponse
	mustJSON(t, addr, &listed, "agent", "list", "--json")
	var echo *mailbox.AgentInfo
	for i := range listed.Agents {
		if listed.Agents[i].Agent == "echo@remote" {
			echo = &listed.Agents[i]
		}
	}
	if echo == nil || echo.Card.Remote == nil || *echo.Card.Remote != (mailbox.RemoteSpec{URL: "http://127.0.0.1:9999/", Binding: "jsonrpc-0.3", Concurrency: 2}) ||
		echo.Remote == nil || echo.Remote.State != mailbox.RemoteCircuitOpen || len(echo.Remote.Deliveries) != 2 || echo.Remote.Deliveries[0].Attempts != 3 {
		t.Fatalf("agent list --json: echo@remote is %+v; want its card's remote and the dispatcher's report", echo)
	}
}

func TestAgentRegisterRemoteRefusals(t *testing.T) {
	addr := startDaemon(t)
	url := "http://127.0.0.1:9999/"
	withRemote := writeCard(t, "remote:\n  url: "+url+"\n")
	for _, tc := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"--name", "X", "--binding", "jsonrpc-0.3"}, []string{"--binding: applies to a remote agent only; add --remote URL"}},
		{[]string{"--name", "X", "--concurrency", "3"}, []string{"--concurrency: applies to a remote agent only"}},
		{[]string{"--name", "X", "--require-signed-card"}, []string{"--require-signed-card: applies to a remote agent only"}},
		// Signed cards: the keys are required with the flag, and only with it.
		{[]string{"--remote", url, "--require-signed-card"}, []string{"--card-jwks-url: got \"\" and no card_jwks"}},
		{[]string{"--remote", url, "--card-jwks-url", "https://keys.example.com/jwks.json"}, []string{"--require-signed-card: got false with the card's keys given"}},
		{[]string{"--remote", url, "--require-signed-card", "--card-jwks-url", "http://keys.example.com/jwks.json"}, []string{"--card-jwks-url: got"}},
		{[]string{"--remote", url, "--require-signed-card", "--card-jwks-file", filepath.Join(t.TempDir(), "none.json")}, []string{"--card-jwks-file: open", "none.json", "expected a JSON file holding the JWKS"}},
		{[]string{"--remote", url, "--require-signed-card", "--card-jwks-file", writeCard(t, "not json")}, []string{"--card-jwks-file: is not a JWKS with keys"}},
		{[]string{"--remote", " "}, []string{`--remote: got " ", expected the agent's base URL or card URL`}},
		{[]string{"--remote", url, "--binding", "grpc"}, []string{`--binding: got "grpc", expected auto, jsonrpc-0.3, jsonrpc-1.0, http+json-1.0, legacy`}},
		{[]string{"--remote", url, "--concurrency", "0"}, []string{"--concurrency: got 0, expected 1 to 64"}},
		{[]string{"--remote", url, "--concurrency", "65"}, []string{"--concurrency: got 65, expected 1 to 64"}},
		{[]string{"--remote", url, "--concurrency", "many"}, []string{`--concurrency: got "many", expected a whole number`}},
		// The daemon's refusals, named by the flag they were typed into.
		{[]string{"--remote", "ftp://127.0.0.1/"}, []string{`mailroom agent register: --remote: got scheme "ftp", expected http or https`}},
		{[]string{"--remote", "http://me:secret@127.0.0.1/"}, []string{"--remote: holds credentials", "daemon's configuration"}},
		{[]string{"--remote", "127.0.0.1:9999"}, []string{"--remote: got", "expected an absolute http or https URL"}},
		{[]string{"--card", writeCard(t, "name: X\n"), "--remote", "ftp://x/"}, []string{`--remote: got scheme "ftp"`}},
		// A remote in the card file is the file's.
		{[]string{"--card", withRemote, "--remote", url}, []string{"--remote: the card " + withRemote + " has a remote already", "not both"}},
		{[]string{"--card", writeCard(t, "remote:\n  url: "+url+"\n  token: s3cret\n")}, []string{`line 3: unknown key "token" in remote, expected url, binding, concurrency`}},
		{[]string{"--card", writeCard(t, "remote:\n  url: "+url+"\n  binding: grpc\n")}, []string{`remote.binding: got "grpc"`}},
		{[]string{"--card", writeCard(t, "remote:\n  url: "+url+"\n  concurrency: 0\n")}, []string{"remote.concurrency: got 0, expected 1 to 64", "leave it out for the default, 4"}},
	} {
		wantUsage(t, addr, append([]string{"agent", "register", "x@remote"}, tc.args...), tc.wants...)
	}
	var listed mailbox.AgentsResponse
	mustJSON(t, addr, &listed, "agent", "list", "--all", "--json")
	if len(listed.Agents) != 0 {
		t.Fatalf("refused registrations registered %+v", listed.Agents)
	}
	// The keys from a file are kept in the registration.
	jwks := writeCard(t, `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`)
	mustCLI(t, addr, "agent", "register", "signed@remote", "--remote", url, "--require-signed-card", "--card-jwks-file", jwks)
	mustJSON(t, addr, &listed, "agent", "list", "--all", "--json")
	if len(listed.Agents) != 1 || listed.Agents[0].Card == nil || listed.Agents[0].Card.Remote == nil ||
		!listed.Agents[0].Card.Remote.RequireSignedCard || !strings.Contains(listed.Agents[0].Card.Remote.CardJWKS, `"kid":"k1"`) {
		t.Fatalf("registered with --require-signed-card --card-jwks-file: %+v", listed.Agents)
	}
	// A remote card file alone needs no name.
	out := mustCLI(t, addr, "agent", "register", "x@remote", "--card", withRemote)
	wantContains(t, "register --card with a remote", out, "registered x@remote as a remote agent", "binding auto, at most 4 in flight")
}
