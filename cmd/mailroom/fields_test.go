package main

import (
	"strings"
	"testing"
)

// TestDaemonRefusalsNameTheFlag: a value the daemon refuses is a usage
// error (exit 2) naming the flag it was typed into, not the daemon's field
// (--intent, not intent_text), followed by the daemon's words about it.
func TestDaemonRefusalsNameTheFlag(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	const id = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	deep := strings.Repeat("[", 40) + strings.Repeat("]", 40)
	send := []string{"send", "--from", "a@x", "--to", "b@x", "--intent", "i"}
	tests := []struct {
		args []string
		verb string
		want string
	}{
		{[]string{"send", "--from", "a b", "--to", "b@x", "--intent", "i"}, "send", `--from: got "a b", whose character`},
		{[]string{"send", "--from", "a@x", "--to", "Coder@x", "--intent", "i"}, "send", `--to: got "Coder@x", expected lowercase`},
		{[]string{"send", "--from", "a@x", "--to", "b@x", "--intent", "  "}, "send", `--intent: got "  ", expected a non-empty description of the work`},
		{append(send, "--kind", " "), "send", `--kind: got " ", expected a non-empty kind`},
		{append(send, "--id", "not-a-uuid"), "send", `--id: got "not-a-uuid", expected a UUID`},
		{append(send, "--idempotency-key", " "), "send", `--idempotency-key: got " ", expected a non-empty key`},
		{append(send, "--deadline", "9999-12-31T23:59:59+00:00", "--id", id, "--parent", id), "send", "--parent: got"},
		{[]string{"lease", "--recipient", "Coder@x"}, "lease", "--recipient: got"},
		{[]string{"result", "next", "--sender", "Planner@x"}, "result next", "--sender: got"},
		{[]string{"result", "post", "not-a-uuid-but-36-characters-long!!!", "--status", "ok"}, "result post", `TASK_ID: got "not-a-uuid-but-36-characters-long!!!", expected a UUID`},
		{[]string{"result", "post", id, "--status", "ok", "--lease-id", "not-a-uuid-but-36-characters-long!!!"}, "result post", `--lease-id: got "not-a-uuid-but-36-characters-long!!!", expected a UUID`},
		{[]string{"result", "post", id, "--status", "ok", "--json-value", deep}, "result post", "--json-value: nested more than 32 levels"},
		{[]string{"status", "--deadline-within-ms", "-5"}, "status", `--deadline-within-ms: got "-5", expected milliseconds`},
		{[]string{"retry-stale", "--max-attempts", "1000001"}, "retry-stale", "--max-attempts: got 1000001"},
		{[]string{"requeue", "not-a-uuid-but-36-characters-long!!!", "--reason", "r", "--duplicate-risk", "idempotent"}, "requeue", "TASK_ID: got"},
		{[]string{"force-error", id, "--reason", strings.Repeat("r", 5000), "--message", "m"}, "force-error", "--reason: got 5000 bytes"},
	}
	for _, tt := range tests {
		wantUsage(t, addr, tt.args, "mailroom "+tt.verb+": "+tt.want, "run 'mailroom "+tt.verb+" --help'")
	}

	// What the user could not have typed wrong is still the daemon's
	// refusal, exit 1, but in the CLI's names: a task that does not exist,
	// an id already used, a lease that moved on.
	sendTask(t, addr, "a@x", "b@x", "i", "--id", id)
	l := leaseTask(t, addr, "b@x")
	const other = "00000000-0000-4000-8000-000000000000"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"result", "post", other, "--status", "ok"}, "mailroom result post: TASK_ID: task " + other + " was never sent"},
		{append(send, "--id", id), "mailroom send: --id: task " + id + " was already sent (it is in_flight)"},
		{[]string{"result", "post", id, "--status", "ok", "--lease-id", other}, "mailroom result post: --lease-id: cannot post a result for task " + id + " under lease " + other +
			": the current lease is " + l.Lease.LeaseID + " (held by b@x, attempt 1)\n  expected lease: " + other},
	} {
		name := strings.Join(tt.args, " ")
		o := cli(t, addr, tt.args...)
		if o.code != 1 || !strings.HasPrefix(o.stderr, tt.want) {
			t.Errorf("mailroom %s: exit %d, stderr %q; want exit 1 and %q", name, o.code, o.stderr, tt.want)
		}
	}
}

func TestArgForField(t *testing.T) {
	tests := []struct {
		verb  string
		field string // as the daemon names it in details.field
		want  string // "" when the user cannot have typed it
	}{
		{"send", "intent_text", "--intent"},
		{"send", "recipient", "--to"},
		{"send", "sender", "--from"},
		{"send", "task_kind", "--kind"},
		{"send", "idempotency.key", "--idempotency-key"},
		{"lease", "recipient", "--recipient"},
		{"result post", "content[3].text", "--text"},
		{"result post", "content[0].value", "--json-value"},
		{"result post", "content[0].value.a[2].b", "--json-value"},
		{"result post", "content[0].value[7]", "--json-value"},
		{"requeue", "command.lease_id", "--lease-id"},
		{"force-error", "command.message", "--message"},
		{"audit", "task_id", "--task"},
		{"status", "limit", "-n"},
		{"send", "Content-Type", ""},
		{"result post", "content[0].type", ""},
		{"compact", "task_id", ""},
	}
	for _, tt := range tests {
		got, ok := argFor(tt.verb, tt.field)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("argFor(%q, %q) = %q, %v; want %q", tt.verb, tt.field, got, ok, tt.want)
		}
	}
}

// TestFlagValuesSayWhatIsExpected: a flag value that does not parse says
// which flag, what it got and what it takes, as every other usage error.
func TestFlagValuesSayWhatIsExpected(t *testing.T) {
	addr := closedAddr(t) // every one is refused before any request
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"console", "--stale-after", "abc"}, `mailroom console: --stale-after: got "abc", expected a duration such as 90s, 5m or 1h30m`},
		{[]string{"demo", "--stale-after", "5"}, `mailroom demo: --stale-after: got "5", expected a duration such as 90s, 5m or 1h30m`},
		{[]string{"status", "--timeout", "soon"}, `mailroom status: --timeout: got "soon", expected a duration`},
		{[]string{"status", "-n", "many"}, `mailroom status: -n: got "many", expected a whole number`},
		{[]string{"status", "-n", "99999999999999999999"}, `-n: got "99999999999999999999", expected a whole number that fits in 64 bits`},
		{[]string{"status", "--min-lease-age-ms", "1.5"}, `mailroom status: --min-lease-age-ms: got "1.5", expected a whole number`},
		{[]string{"status", "--json=maybe"}, `mailroom status: --json: got "maybe", expected true or false`},
		{[]string{"log", "repair", "--data-dir", "d", "--seq", "-1"}, `mailroom log repair: --seq: got "-1", expected a whole number of 0 or more`},
		{[]string{"demo", "--seed", "x"}, `mailroom demo: --seed: got "x", expected a whole number`},
	}
	for _, tt := range tests {
		wantUsage(t, addr, tt.args, tt.want)
	}
	// A value's own words are kept when they say more than the flag
	// package's "parse error".
	o := cliEnv(t, nil, "daemon", "--shutdown-timeout", "10")
	wantContains(t, "daemon --shutdown-timeout 10", o.stderr, "shutdown_timeout")
}
