package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/mailbox"
)

// Three tasks whose ids share their first 8 characters, two of them 13.
const (
	idA = "6f9619ff-8b86-4d11-b42d-00c04fc96401"
	idB = "6f9619ff-8b86-4d11-b42d-00c04fc96402"
	idC = "6f9619ff-0000-4000-8000-000000000003"
)

// TestIDPrefixes: task and lease ids may be shortened to a unique prefix of
// 6 or more characters wherever the CLI takes one.
func TestIDPrefixes(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	sendTask(t, addr, "planner@local", "coder@local", "first", "--id", idA)
	sendTask(t, addr, "planner@local", "reviewer@local", "second", "--id", idB)
	sendTask(t, addr, "planner@local", "tester@local", "third", "--id", idC)
	a := leaseTask(t, addr, "coder@local")
	c := leaseTask(t, addr, "tester@local")

	// An ambiguous prefix lists the candidates with state and recipient.
	o := cli(t, addr, "result", "post", "6F9619FF", "--status", "ok")
	if o.code != 2 {
		t.Fatalf("result post with an ambiguous prefix: exit %d, want 2 (stderr %q)", o.code, o.stderr)
	}
	wantContains(t, "ambiguous prefix", o.stderr, `mailroom result post: TASK_ID: "6F9619FF" is ambiguous: 3 tasks have an id starting with it; give more characters`,
		"run 'mailroom result post --help'")
	for _, row := range []string{idA + "  in_flight  coder@local", idB + "  queued     reviewer@local", idC + "  in_flight  tester@local"} {
		if !strings.Contains(o.stderr, "\n  "+row+"\n") {
			t.Errorf("ambiguous prefix: stderr %q lacks the candidate row %q", o.stderr, row)
		}
	}

	// A unique prefix stands for its id, for the task and for the lease.
	out := mustCLI(t, addr, "result", "post", "6f9619ff-0", "--status", "ok", "--lease-id", c.Lease.LeaseID[:8])
	wantContains(t, "result post by prefix", out, "posted ok result for task "+idC)
	// ...and the result keeps it findable while it waits for its sender.
	child := sendTask(t, addr, "planner@local", "coder@local", "follow-up", "--parent", "6f9619ff-0000")
	var st statusReport
	mustJSON(t, addr, &st, "status", "--json", "--state", "queued")
	if last := st.Tasks[len(st.Tasks)-1].Task; last.ID != child || last.Parent != idC {
		t.Errorf("send --parent 6f9619ff-0000: the newest task is %s with parent %q, want %s with parent %s", last.ID, last.Parent, child, idC)
	}

	tests := []struct {
		args []string
		want string
	}{
		{[]string{"result", "post", "6f961", "--status", "ok"}, `TASK_ID: got "6f961" (5 characters), expected a task id (a UUID such as 6f9619ff-8b86-4d11-b42d-00c04fc964ff) or a unique prefix of at least 6 characters`},
		{[]string{"result", "post", "coder@local", "--status", "ok"}, `TASK_ID: got "coder@local", expected a task id`},
		{[]string{"result", "post", "0123456", "--status", "ok"}, `TASK_ID: no task id starts with "0123456"; expected the id of a queued or in-flight task or a pending result, or a unique prefix of it of at least 6 characters`},
		{[]string{"result", "post", "6f9619ff-8b86-4d11-b42d-00c04fc964", "--status", "ok"}, `TASK_ID: "6f9619ff-8b86-4d11-b42d-00c04fc964" is ambiguous: 2 tasks`},
		{[]string{"result", "post", "6f9619ff-8b86-4d11-b42d-00c04fc96401", "--status", "ok", "--lease-id", "ffffff"}, `--lease-id: no lease id starts with "ffffff"; expected the id of an in-flight task's current lease`},
		{[]string{"result", "post", idA, "--status", "ok", "--lease-id", "abc"}, `--lease-id: got "abc" (3 characters), expected a lease id`},
		{[]string{"send", "--from", "a@x", "--to", "b@x", "--intent", "i", "--parent", "6f9619"}, `--parent: "6f9619" is ambiguous`},
		{[]string{"audit", "--task", "abcdefab"}, `--task: no task id starts with "abcdefab"; expected the id of a queued, in-flight or repaired task or a pending result`},
	}
	for _, tt := range tests {
		wantUsage(t, addr, tt.args, tt.want)
	}

	// Ids that differ only in their last character are given in full; the
	// lease may still be shortened, in either case.
	out = mustCLI(t, addr, "result", "post", idA, "--status", "ok", "--lease-id", strings.ToUpper(a.Lease.LeaseID[:6]))
	wantContains(t, "result post with a lease prefix", out, "posted ok result for task "+idA)
}

// TestAuditTaskPrefixFindsDrainedTasks: a repaired task that has since
// been drained is in no queue, but its repairs are still listed by prefix.
func TestAuditTaskPrefixFindsDrainedTasks(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	id := sendTask(t, addr, "planner@local", "coder@local", "hangs")
	leaseTask(t, addr, "coder@local")
	mustCLI(t, addr, "force-error", id, "--reason", "agent gone", "--message", "no answer")
	mustCLI(t, addr, "result", "next", "--sender", "planner@local")
	out := mustCLI(t, addr, "audit", "--task", id[:8])
	wantContains(t, "audit --task prefix", out, "forced_error", id, "agent gone")
}

// TestFullIDsNeedNoLookup: a full id goes to the daemon as it is, so
// agents whose tokens may not read the queue are not slowed or refused.
func TestFullIDsNeedNoLookup(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		mu.Unlock()
		var res mailbox.Result
		json.NewDecoder(r.Body).Decode(&res)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(mailbox.ResultPostedResponse{Kind: mailbox.KindResultPosted, TaskID: res.TaskID})
	}))
	defer srv.Close()
	mustCLI(t, srv.URL, "result", "post", idA, "--status", "ok", "--lease-id", idB)
	if got := strings.Join(calls, ", "); got != "POST /a2a/results" {
		t.Errorf("result post with full ids made the requests %s, want only POST /a2a/results", got)
	}
}

// TestIDPrefixLookupRefused: a token that may not read the queue cannot
// look a prefix up; the message says so and that a full id needs no lookup.
func TestIDPrefixLookupRefused(t *testing.T) {
	t.Parallel()
	addr, secret := startDaemonWithToken(t, "coder@local", auth.CapRecv, auth.CapRespondPrefix+"*")
	o := cliEnv(t, map[string]string{"MAILROOM_ADDR": addr, "MAILROOM_TOKEN": secret}, "result", "post", "6f9619ff", "--status", "ok")
	if o.code != 1 {
		t.Fatalf("prefix lookup without a2a.read: exit %d, want 1 (stderr %q)", o.code, o.stderr)
	}
	wantContains(t, "refused lookup", o.stderr, `mailroom result post: TASK_ID: looking up the task id prefix "6f9619ff": `, "a2a.read", "(a full id needs no lookup)")
}

func TestCandidateTable(t *testing.T) {
	var cands []idCandidate
	for i := range 12 {
		cands = append(cands, idCandidate{id: "0b5c7e21-0000-4000-8000-00000000000" + string(rune('a'+i)), state: mailbox.TaskInFlight, recipient: "coder@local", task: idA})
	}
	cands = append(cands, cands[0]) // listed twice by two sources
	got := matchPrefix(cands, "0b5c7e")
	if len(got) != 12 {
		t.Fatalf("matchPrefix kept %d candidates, want the 12 distinct ones", len(got))
	}
	table := candidateTable(got)
	lines := strings.Split(table, "\n")
	if len(lines) != maxCandidatesShown+1 || lines[maxCandidatesShown] != "  ... and 2 more" {
		t.Errorf("candidate table has %d lines ending %q, want %d rows and '... and 2 more'", len(lines), lines[len(lines)-1], maxCandidatesShown)
	}
	if want := "  0b5c7e21-0000-4000-8000-00000000000a  in_flight  coder@local  task " + idA; lines[0] != want {
		t.Errorf("lease candidate row = %q, want %q", lines[0], want)
	}
	if got := matchPrefix(cands, "0b5c7e21-0000-4000-8000-00000000000b"); len(got) != 1 {
		t.Errorf("a prefix matching one id matched %d", len(got))
	}
}
