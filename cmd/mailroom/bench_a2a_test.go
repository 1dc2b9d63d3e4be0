package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestBenchA2AEmbeddedJSON is a short --a2a run against an embedded daemon
// in the v1.0 HTTP+JSON binding: both ways complete tasks, every task
// through the daemon is durable, and the JSON object has exactly the
// documented keys. Nothing is asserted of speed.
func TestBenchA2AEmbeddedJSON(t *testing.T) {
	t.Parallel()
	o := benchCLI(t, nil, "--embedded", "--a2a", "--binding", "http+json-1.0", "--pairs", "2", "--duration", "400ms", "--rounds", "2", "--json")
	if o.code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", o.code, o.stderr)
	}
	var rep map[string]any
	dec := json.NewDecoder(strings.NewReader(o.stdout))
	if err := dec.Decode(&rep); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON object (%v):\n%s", err, o.stdout)
	}
	wantTop := []string{"a2a_url", "added_p50_ms", "added_p99_ms", "agent", "binding", "daemon", "data_fs", "durable", "duration_s", "embedded", "errors",
		"errors_total", "events_per_task", "kind", "mailroom", "payload_bytes", "per_round", "ratio", "rounds", "senders", "server", "target", "volatile_log", "warnings"}
	if got := keys(rep); !slices.Equal(got, wantTop) {
		t.Errorf("keys = %v, want %v", got, wantTop)
	}
	if rep["kind"] != "mailroom_bench_a2a" || rep["binding"] != "http+json-1.0" || rep["senders"] != 2.0 || rep["errors_total"] != 0.0 {
		t.Errorf("kind %v, binding %v, senders %v, errors %v", rep["kind"], rep["binding"], rep["senders"], rep["errors"])
	}
	for _, way := range []string{"mailroom", "server"} {
		if n, _ := object(t, rep, way)["tasks"].(float64); n <= 0 {
			t.Errorf("%s completed no task", way)
		}
	}
	if d := object(t, rep, "durable"); d["ok"] != true || d["checked"] != object(t, rep, "mailroom")["tasks"] {
		t.Errorf("durable = %v", d)
	}
}

// The summary names both ways and says whether every task was durable.
func TestBenchA2ASummary(t *testing.T) {
	t.Parallel()
	o := benchCLI(t, nil, "--embedded", "--a2a", "--pairs", "1", "--duration", "200ms", "--rounds", "1")
	if o.code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", o.code, o.stderr)
	}
	wantContains(t, "the summary", o.stdout, "mailroom bench --a2a: embedded daemon", "jsonrpc-0.3 to the edge", "  mailroom ", "    server ",
		"of the server's tasks/s; mailroom adds", "answered and delivered in its log: yes", "errors    0")
}

func TestBenchA2AUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--embedded", "--a2a", "--remote"}, "--a2a and --remote: choose one"},
		{[]string{"--embedded", "--a2a", "--batch", "4"}, "--a2a measures the A2A path alone"},
		{[]string{"--embedded", "--a2a", "--fanout", "4"}, "--a2a measures the A2A path alone"},
		{[]string{"--embedded", "--a2a", "--binding", "grpc"}, `--binding: got "grpc", expected jsonrpc-0.3 or http+json-1.0`},
		{[]string{"--embedded", "--binding", "http+json-1.0"}, "--binding: only --a2a"},
		{[]string{"--embedded", "--rounds", "2"}, "--rounds: only --remote and --a2a"},
	} {
		o := benchCLI(t, nil, tt.args...)
		if o.code != exitUsage || !strings.Contains(o.stderr, tt.want) {
			t.Errorf("bench %q = exit %d, stderr %q; want exit 2 saying %q", tt.args, o.code, o.stderr, tt.want)
		}
	}
}
