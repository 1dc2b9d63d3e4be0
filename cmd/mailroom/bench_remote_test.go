package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/store/logstore/logstoretest"
)

// TestBenchRemoteEmbeddedJSON is a short --remote run against an embedded
// daemon, whose real dispatcher delivers to the bench's A2A server, with
// A2A callers and with native senders: the three ways complete tasks,
// round by round in turn; every task delivered through the daemon had its
// result delivered (drained) and its five events made durable; and the
// JSON object has exactly the documented keys. Nothing is asserted of
// speed.
func TestBenchRemoteEmbeddedJSON(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"a2a", "native"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			testBenchRemoteEmbeddedJSON(t, via)
		})
	}
}

func testBenchRemoteEmbeddedJSON(t *testing.T, via string) {
	o := benchCLI(t, nil, "--embedded", "--remote", "--via", via, "--pairs", "2", "--duration", "400ms", "--rounds", "2", "--json")
	if o.code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", o.code, o.stderr)
	}
	var rep map[string]any
	dec := json.NewDecoder(strings.NewReader(o.stdout))
	if err := dec.Decode(&rep); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON object (%v):\n%s", err, o.stdout)
	}
	wantTop := []string{"a2a_url", "agent", "binding", "concurrency", "daemon", "data_fs", "direct", "durable", "duration_s", "embedded", "errors",
		"errors_total", "events_per_task", "kind", "of_relay", "payload_bytes", "per_round", "ratio", "relay", "relay_ratio", "remote", "rounds", "senders",
		"target", "via", "volatile_log", "warnings"}
	if got := keys(rep); !slices.Equal(got, wantTop) {
		t.Errorf("keys = %v, want %v", got, wantTop)
	}
	if rep["kind"] != "mailroom_bench_remote" || rep["target"] != "embedded" || rep["senders"] != 2.0 || rep["concurrency"] != 2.0 ||
		rep["binding"] != "jsonrpc-0.3" || rep["rounds"] != 2.0 || rep["via"] != via {
		t.Errorf("kind %v, target %v, senders %v, concurrency %v, binding %v, rounds %v, via %v", rep["kind"], rep["target"], rep["senders"],
			rep["concurrency"], rep["binding"], rep["rounds"], rep["via"])
	}
	if rep["errors_total"] != 0.0 {
		t.Errorf("errors = %v", rep["errors"])
	}
	for _, way := range []string{"remote", "relay", "direct"} {
		w := object(t, rep, way)
		if got, want := keys(w), []string{"connections", "elapsed_s", "latency", "tasks", "tasks_per_s"}; !slices.Equal(got, want) {
			t.Errorf("%s keys = %v, want %v", way, got, want)
		}
		if n, _ := w["tasks"].(float64); n <= 0 {
			t.Errorf("%s completed no task: %v", way, w)
		}
		if lat := object(t, w, "latency"); lat["count"] != w["tasks"] {
			t.Errorf("%s: %v latency samples for %v tasks", way, lat["count"], w["tasks"])
		}
	}
	for _, k := range []string{"ratio", "relay_ratio", "of_relay"} {
		if r, _ := rep[k].(float64); r <= 0 {
			t.Errorf("%s = %v, want a positive ratio", k, rep[k])
		}
	}
	var ways []string
	for _, r := range rep["per_round"].([]any) {
		ways = append(ways, r.(map[string]any)["way"].(string))
	}
	if want := []string{"remote", "relay", "direct", "remote", "relay", "direct"}; !slices.Equal(ways, want) {
		t.Errorf("rounds ran %v, want %v", ways, want)
	}
	d := object(t, rep, "durable")
	if d["ok"] != true || d["checked"] != object(t, rep, "remote")["tasks"] || d["missing"] != 0.0 {
		t.Errorf("durable = %v; want every task delivered through the daemon checked and complete", d)
	}
	// task_sent, task_leased, remote_accepted, result_posted, result_drained.
	if n, _ := rep["events_per_task"].(float64); n < 5 {
		t.Errorf("events_per_task = %v, want at least 5", n)
	}
	if !strings.Contains(o.stderr, "round 2/2 direct") {
		t.Errorf("stderr = %q, want a progress line for each round", o.stderr)
	}
}

// TestBenchRemoteAgainstAddr: against a daemon at an address the summary
// says both ways, the ratio and that every task was durable, and the
// remote agent the run registered is gone afterwards.
func TestBenchRemoteAgainstAddr(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	o := benchCLI(t, map[string]string{"MAILROOM_ADDR": addr}, "--remote", "--pairs", "3", "--duration", "300ms", "--rounds", "1")
	if o.code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", o.code, o.stderr)
	}
	for _, want := range []string{"mailroom bench --remote: daemon at " + addr + ", 3 A2A callers (blocking message/send to the agent's card on the daemon), 300ms each way in 1 rounds",
		"binding jsonrpc-0.3, concurrency 3", "through mailroom", "through a proxy", "direct", "ratio ", "of direct", "of the proxy's", "the floor of any hop",
		"durable   yes", "errors    0", "events per task"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("summary does not say %q:\n%s", want, o.stdout)
		}
	}
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	agents, err := c.Agents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		if strings.HasPrefix(a.Agent, "bench-remote-") && a.Remote != nil {
			t.Errorf("the run's remote agent %s is still registered: %+v", a.Agent, a.Remote)
		}
	}
}

func TestBenchRemoteUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--embedded", "--remote", "--batch", "4"}, "--remote measures remote delivery alone"},
		{[]string{"--embedded", "--remote", "--pipeline"}, "--remote measures remote delivery alone"},
		{[]string{"--embedded", "--remote", "--fanout", "2"}, "--remote measures remote delivery alone"},
		{[]string{"--embedded", "--remote", "--rate", "10"}, "--remote measures remote delivery alone"},
		{[]string{"--embedded", "--remote", "--idle-workers", "2"}, "--remote measures remote delivery alone"},
		{[]string{"--embedded", "--remote", "--wait", "1s"}, "--wait: only batched rounds"},
		{[]string{"--embedded", "--remote", "--pairs", "65"}, "--pairs: got 65 with --remote, expected at most 64"},
		{[]string{"--embedded", "--remote", "--pairs", "0"}, "--pairs: got 0"},
		{[]string{"--embedded", "--remote", "--rounds", "0"}, "--rounds: got 0, expected at least 1"},
		{[]string{"--embedded", "--remote", "--rounds", "4", "--duration", "2ms"}, "--duration: got 2ms for 4 rounds"},
		{[]string{"--embedded", "--rounds", "2"}, "--rounds: only --remote and --a2a run ways in rounds"},
		{[]string{"--embedded", "--a2a-addr", "127.0.0.1:0"}, "--via and --a2a-addr: only --remote"},
		{[]string{"--embedded", "--via", "native"}, "--via and --a2a-addr: only --remote"},
		{[]string{"--embedded", "--remote", "--via", "grpc"}, `--via: got "grpc", expected a2a or native`},
		{[]string{"--remote", "--dir", "/tmp"}, `--dir "/tmp": only an --embedded daemon`},
	}
	for _, tt := range tests {
		o := benchCLI(t, nil, tt.args...)
		if o.code != exitUsage || !strings.Contains(o.stderr, tt.want) || !strings.Contains(o.stderr, "run 'mailroom bench --help'") {
			t.Errorf("bench %q = exit %d, stderr %q; want exit 2 saying %q", tt.args, o.code, o.stderr, tt.want)
		}
	}
	o := benchCLI(t, nil, "--help")
	if o.code != exitOK || !strings.Contains(o.stdout, "mailroom bench --embedded --remote --pairs 16") || !strings.Contains(o.stdout, "-a2a-addr") {
		t.Errorf("bench --help = exit %d:\n%s", o.code, o.stdout)
	}
	o = benchCLI(t, nil, "--embedded", "--remote", "--a2a-addr", "256.0.0.1:0", "--duration", "10ms")
	if o.code != exitFailure || !strings.Contains(o.stderr, "the A2A server cannot listen on 256.0.0.1:0") {
		t.Errorf("bench --a2a-addr 256.0.0.1:0 = exit %d, stderr %q; want exit 1 saying it cannot listen", o.code, o.stderr)
	}
}

// TestBenchRemoteSaysWhenItsLogIsInMemory: on tmpfs the summary warns,
// and does not call the tasks durable.
func TestBenchRemoteSaysWhenItsLogIsInMemory(t *testing.T) {
	t.Parallel()
	o := benchCLI(t, nil, "--embedded", "--dir", logstoretest.TmpfsDir(t), "--remote", "--pairs", "1", "--duration", "200ms", "--rounds", "1")
	if o.code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", o.code, o.stderr)
	}
	for _, want := range []string{"embedded daemon (log on tmpfs)", "WARNING: the embedded daemon's log is on tmpfs", "synced    yes", "in memory only, not durable"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("summary does not say %q:\n%s", want, o.stdout)
		}
	}
	if strings.Contains(o.stdout, "durable   yes") {
		t.Errorf("summary calls tasks on tmpfs durable:\n%s", o.stdout)
	}
}
