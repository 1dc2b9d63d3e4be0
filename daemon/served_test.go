package daemon_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/mailbox"
	"github.com/mailroom/mailroom/mcpface/facetest"
)

// do sends one request to the daemon at base and returns its answer.
func do(t *testing.T, method, url, token, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

const unknownTask = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"

var v10 = map[string]string{"A2A-Version": "1.0"}

// TestMetricsCountEveryRoute: after traffic on every face (native routes,
// the event stream, the A2A edge's JSON-RPC, HTTP+JSON and card, the
// legacy dialect, Covenant's dialect and /mcp), a scrape of /metrics
// counts each by binding, route template, method and outcome, and times
// it; the exposition keeps the Prometheus text format's rules, and no
// label holds a task id or an agent id.
func TestMetricsCountEveryRoute(t *testing.T) {
	d := facetest.StartDaemon(t, mcpDaemon)
	if _, err := d.Client(t, facetest.Oncall).RegisterAgent(t.Context(), facetest.Coder, mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	planner := d.Tokens[facetest.Planner]
	base := d.URL() + "/agents/" + facetest.Coder + "/"

	// Native.
	sent, err := d.Client(t, facetest.Planner).Send(t.Context(), mailbox.Task{Sender: facetest.Planner, Recipient: facetest.Coder, IntentText: "counted"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := do(t, "GET", d.URL()+"/a2a/tasks/"+sent.TaskID, planner, "", nil); resp.StatusCode != 200 {
		t.Fatalf("get task = %d %s", resp.StatusCode, body)
	}
	// The event stream, given up as soon as it is open.
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", d.URL()+"/a2a/events", nil)
	req.Header.Set("Authorization", "Bearer "+planner)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events = %v %v", resp, err)
	}
	cancel()
	resp.Body.Close()
	// A2A JSON-RPC: a success, an A2A error, an unknown method.
	rpc := func(method, params string) string {
		_, body := do(t, "POST", base, planner, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`, v10)
		return body
	}
	if b := rpc("ListTasks", `{}`); !strings.Contains(b, `"result"`) {
		t.Fatalf("ListTasks = %s", b)
	}
	if b := rpc("GetTask", `{"id":"`+unknownTask+`"}`); !strings.Contains(b, `-32001`) {
		t.Fatalf("GetTask of an unknown task = %s", b)
	}
	if b := rpc("Explode", `{}`); !strings.Contains(b, `-32601`) {
		t.Fatalf("an unknown method = %s", b)
	}
	// A v0.3 stream that fails before it begins: its error is its one
	// event, on a 200.
	if _, body := do(t, "POST", base, planner, `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"`+unknownTask+`"}}`, nil); !strings.Contains(body, `-32001`) {
		t.Fatalf("tasks/resubscribe of an unknown task = %s", body)
	}
	// A2A HTTP+JSON and the card.
	if resp, body := do(t, "GET", base+"tasks/"+unknownTask, planner, "", v10); resp.StatusCode != 404 {
		t.Fatalf("REST get of an unknown task = %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", base+"tasks", planner, "", v10); resp.StatusCode != 200 {
		t.Fatalf("REST list = %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", base+".well-known/agent-card.json", "", "", nil); resp.StatusCode != 200 {
		t.Fatalf("card = %d %s", resp.StatusCode, body)
	}
	// Legacy.
	if _, body := do(t, "POST", base+"rpc", planner, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"`+unknownTask+`"}}`, nil); !strings.Contains(body, `"error"`) {
		t.Fatalf("legacy tasks/get of an unknown task = %s", body)
	}
	// Covenant: an open route, a read, and a refusal answered 200.
	if resp, body := do(t, "GET", d.URL()+"/compat/covenant/health", "", "", nil); resp.StatusCode != 200 {
		t.Fatalf("covenant health = %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", d.URL()+"/compat/covenant/a2a/tasks/recent", planner, "", nil); resp.StatusCode != 200 {
		t.Fatalf("covenant recent = %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", d.URL()+"/compat/covenant/a2a/tasks/recent?limit=-1", planner, "", nil); resp.StatusCode != 200 || !strings.Contains(body, `"error"`) {
		t.Fatalf("covenant recent?limit=-1 = %d %s, want a 200 refusal", resp.StatusCode, body)
	}
	// MCP, in a session and statelessly.
	for _, protocol := range []string{facetest.Legacy, ""} {
		s := mcpOver(t, d.URL()+"/mcp", planner, facetest.Session{Protocol: protocol})
		if _, err := s.ListTools(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		facetest.Call(t, s, "get_task", map[string]any{"task_id": sent.TaskID}, nil)
	}
	legacyMCP := mcpOver(t, d.URL()+"/mcp", d.Tokens[facetest.Coder], facetest.Session{Protocol: facetest.Legacy})
	if err := legacyMCP.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "mailroom://tasks/" + sent.TaskID}); err == nil {
		t.Fatal("the coder's subscription to the planner's task was served")
	}

	wants := []map[string]string{
		{"binding": "native", "route": "/a2a/tasks", "method": "POST", "code": "200", "outcome": "ok"},
		{"binding": "native", "route": "/a2a/tasks/{id}", "method": "GET", "code": "200", "outcome": "ok"},
		{"binding": "events", "route": "/a2a/events", "method": "GET", "code": "200"},
		{"binding": "a2a-jsonrpc", "route": "/agents/{agent}/", "method": "ListTasks", "code": "200", "outcome": "ok"},
		{"binding": "a2a-jsonrpc", "route": "/agents/{agent}/", "method": "GetTask", "code": "200", "outcome": "-32001"},
		{"binding": "a2a-jsonrpc", "route": "/agents/{agent}/", "method": "unknown", "outcome": "-32601"},
		{"binding": "a2a-jsonrpc", "route": "/agents/{agent}/", "method": "tasks/resubscribe", "code": "200", "outcome": "-32001"},
		{"binding": "a2a-rest", "route": "/agents/{agent}/tasks/{id}", "method": "GET", "code": "404", "outcome": "error"},
		{"binding": "a2a-rest", "route": "/agents/{agent}/tasks", "method": "GET", "code": "200", "outcome": "ok"},
		{"binding": "a2a-card", "route": "/agents/{agent}/.well-known/agent-card.json", "method": "GET", "code": "200"},
		{"binding": "legacy", "route": "/agents/{agent}/rpc", "method": "tasks/get", "outcome": "-32001"},
		{"binding": "covenant", "route": "/compat/covenant/health", "method": "GET", "code": "200", "outcome": "ok"},
		{"binding": "covenant", "route": "/compat/covenant/a2a/tasks/recent", "method": "GET", "code": "200", "outcome": "ok"},
		{"binding": "covenant", "route": "/compat/covenant/a2a/tasks/recent", "method": "GET", "code": "200", "outcome": "invalid"},
		{"binding": "mcp", "route": "/mcp", "method": "initialize", "code": "200", "outcome": "ok"},
		{"binding": "mcp", "route": "/mcp", "method": "server/discover", "code": "200", "outcome": "ok"},
		{"binding": "mcp", "route": "/mcp", "method": "tools/call", "code": "200", "outcome": "ok"},
		{"binding": "mcp", "route": "/mcp", "method": "resources/subscribe", "outcome": "-32602"},
	}
	// A request is counted when its handler returns, which may be after
	// its client has read the answer from a stream (/mcp's, the event
	// stream's): scrape until every one is counted, or long enough that
	// one never will be.
	wait, stop := context.WithTimeout(t.Context(), 30*time.Second)
	defer stop()
	var text string
	for {
		var resp *http.Response
		resp, text = do(t, "GET", d.URL()+"/metrics", planner, "", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("/metrics = %d %s", resp.StatusCode, text)
		}
		missing := slices.DeleteFunc(slices.Clone(wants), func(want map[string]string) bool { return counted(text, want) })
		if len(missing) == 0 {
			break
		}
		select {
		case <-wait.Done():
			t.Fatalf("never counted: %v; counted:\n%s", missing, grep(text, "mailroom_requests_total{"))
		case <-time.After(10 * time.Millisecond):
		}
	}
	fams := parseExposition(t, text)
	series := fams["mailroom_requests_total"]
	if series == nil || series.typ != "counter" {
		t.Fatalf("no counter mailroom_requests_total in\n%s", text)
	}
	for _, want := range wants {
		if !slices.ContainsFunc(series.samples, func(s sample) bool { return matches(s.labels, want) && s.value > 0 }) {
			t.Errorf("the parsed exposition has no request with %v", want)
		}
	}
	for _, s := range series.samples {
		for _, v := range s.labels {
			if strings.Contains(v, sent.TaskID) || strings.Contains(v, unknownTask) || strings.Contains(v, facetest.Coder) {
				t.Errorf("a label holds an id: %v", s.labels)
			}
		}
	}
	// The native counter dashboards read is still there.
	if f := fams["mailroom_http_requests_total"]; f == nil || len(f.samples) == 0 {
		t.Error("mailroom_http_requests_total is gone")
	}
	latency := fams["mailroom_request_duration_seconds"]
	if latency == nil || latency.typ != "histogram" {
		t.Fatalf("no histogram mailroom_request_duration_seconds in\n%s", text)
	}
	for _, b := range []string{"native", "events", "a2a-jsonrpc", "a2a-rest", "a2a-card", "legacy", "covenant", "mcp"} {
		n := -1.0
		for _, s := range latency.samples {
			if s.name == "mailroom_request_duration_seconds_count" && s.labels["binding"] == b {
				n = s.value
			}
		}
		if n < 1 {
			t.Errorf("the latency of %s counts %v requests, want some", b, n)
		}
	}
}

// TestUnauthorizedSaysBearer: every 401, on every face, carries the
// WWW-Authenticate challenge RFC 6750 asks for, and names the refused
// token as invalid_token when one was sent.
func TestUnauthorizedSaysBearer(t *testing.T) {
	d := facetest.StartDaemon(t, mcpDaemon)
	if _, err := d.Client(t, facetest.Oncall).RegisterAgent(t.Context(), facetest.Coder, mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	base := d.URL() + "/agents/" + facetest.Coder + "/"
	mcpHeader := map[string]string{"Accept": "application/json, text/event-stream"}
	for _, c := range []struct {
		name, method, url, body string
		header                  map[string]string
	}{
		{"native", "GET", d.URL() + "/a2a/queue", "", nil},
		{"native send", "POST", d.URL() + "/a2a/tasks", `{"sender":"planner@local","recipient":"coder@local","intent":{"text":"x"}}`, nil},
		{"metrics", "GET", d.URL() + "/metrics", "", nil},
		{"events", "GET", d.URL() + "/a2a/events", "", nil},
		{"covenant", "GET", d.URL() + "/compat/covenant/a2a/tasks/recent", "", nil},
		{"a2a json-rpc", "POST", base, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`, v10},
		{"a2a json-rpc v0.3", "POST", base, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`, nil},
		{"a2a rest", "GET", base + "tasks", "", v10},
		{"legacy", "POST", base + "rpc", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`, nil},
		{"mcp", "POST", d.URL() + "/mcp", initialize, mcpHeader},
		{"mcp 2026-07-28", "POST", d.URL() + "/mcp", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`,
			map[string]string{"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28"}},
	} {
		for _, token := range []string{"", "mr_not-a-token"} {
			resp, body := do(t, c.method, c.url, token, c.body, c.header)
			got := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(got, "Bearer ") || !strings.Contains(got, `realm="mailroom"`) {
				t.Errorf("%s (token %q) = %d WWW-Authenticate %q %s, want 401 with a Bearer challenge", c.name, token, resp.StatusCode, got, body)
				continue
			}
			// The A2A edge's own challenge names no error; ours name
			// the token refused.
			if token != "" && !strings.HasPrefix(c.name, "a2a") && c.name != "legacy" && !strings.Contains(got, `error="invalid_token"`) {
				t.Errorf("%s with a token the daemon refuses: WWW-Authenticate %q, want error=\"invalid_token\"", c.name, got)
			}
		}
	}
}

// TestTokenAnswersAreNotShared: an answer that depends on the caller's
// token is never kept by a shared cache (no-store, or private) and says
// it varies with Authorization; the public card is cacheable.
func TestTokenAnswersAreNotShared(t *testing.T) {
	d := facetest.StartDaemon(t, mcpDaemon)
	if _, err := d.Client(t, facetest.Oncall).RegisterAgent(t.Context(), facetest.Coder, mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	planner := d.Tokens[facetest.Planner]
	sent, err := d.Client(t, facetest.Planner).Send(t.Context(), mailbox.Task{Sender: facetest.Planner, Recipient: facetest.Coder, IntentText: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	base := d.URL() + "/agents/" + facetest.Coder + "/"
	check := func(what string, resp *http.Response, body string) {
		t.Helper()
		cc := resp.Header.Get("Cache-Control")
		if !strings.Contains(cc, "no-store") && !strings.Contains(cc, "private") {
			t.Errorf("%s (%d): Cache-Control %q, want no-store or private: %s", what, resp.StatusCode, cc, body)
		}
		if !slices.ContainsFunc(resp.Header.Values("Vary"), func(v string) bool { return strings.Contains(v, "Authorization") }) {
			t.Errorf("%s (%d): Vary %q, want Authorization", what, resp.StatusCode, resp.Header.Values("Vary"))
		}
	}
	resp, body := do(t, "GET", d.URL()+"/a2a/tasks/"+sent.TaskID, planner, "", nil)
	check("native get_task", resp, body)
	resp, body = do(t, "GET", d.URL()+"/a2a/tasks/"+sent.TaskID, d.Tokens[facetest.Coder], "", nil)
	check("native get_task refused to another token", resp, body)
	resp, body = do(t, "GET", d.URL()+"/metrics", planner, "", nil)
	check("metrics", resp, body)
	resp, body = do(t, "GET", d.URL()+"/compat/covenant/a2a/tasks/recent", planner, "", nil)
	check("covenant recent", resp, body)
	resp, body = do(t, "POST", base, planner, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+sent.TaskID+`"}}`, v10)
	check("a2a GetTask", resp, body)
	resp, body = do(t, "POST", d.URL()+"/mcp", planner, initialize, map[string]string{"Accept": "application/json, text/event-stream"})
	check("mcp initialize", resp, body)
	resp, body = do(t, "POST", d.URL()+"/mcp", planner, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		map[string]string{"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("mcp server/discover = %d %s", resp.StatusCode, body)
	}
	check("mcp server/discover", resp, body)
	// The card is the same for every caller.
	resp, body = do(t, "GET", base+".well-known/agent-card.json", "", "", nil)
	if cc := resp.Header.Get("Cache-Control"); resp.StatusCode != 200 || strings.Contains(cc, "no-store") || strings.Contains(cc, "private") {
		t.Errorf("the card = %d Cache-Control %q, want a public, cacheable answer: %s", resp.StatusCode, cc, body)
	}
}

// A small reader of the Prometheus text format (0.0.4), strict where
// promtool is: what it cannot read fails the test.

type family struct {
	typ     string
	samples []sample
}

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

func parseExposition(t *testing.T, text string) map[string]*family {
	t.Helper()
	fams := map[string]*family{}
	helped := map[string]bool{}
	seen := map[string]bool{}
	var current string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "# HELP "):
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			if helped[name] {
				t.Errorf("line %d: a second HELP for %s", n, name)
			}
			helped[name] = true
			continue
		case strings.HasPrefix(line, "# TYPE "):
			name, typ, _ := strings.Cut(strings.TrimPrefix(line, "# TYPE "), " ")
			if !metricName.MatchString(name) {
				t.Errorf("line %d: metric name %q", n, name)
			}
			if fams[name] != nil {
				t.Errorf("line %d: a second TYPE for %s", n, name)
			}
			switch typ {
			case "counter", "gauge", "histogram", "summary", "untyped":
			default:
				t.Errorf("line %d: type %q", n, typ)
			}
			fams[name] = &family{typ: typ}
			current = name
			continue
		case strings.HasPrefix(line, "#"):
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			t.Fatalf("line %d: %v: %s", n, err, line)
		}
		f := fams[current]
		owner := s.name
		if f != nil && f.typ == "histogram" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if strings.TrimSuffix(s.name, suffix) == current {
					owner = current
				}
			}
		}
		if f == nil || owner != current {
			t.Errorf("line %d: sample %s outside its family (after TYPE %s)", n, s.name, current)
			continue
		}
		if f.typ == "counter" && s.value < 0 {
			t.Errorf("line %d: a negative counter", n)
		}
		key := s.name + labelKey(s.labels)
		if seen[key] {
			t.Errorf("line %d: a duplicate series %s", n, key)
		}
		seen[key] = true
		f.samples = append(f.samples, s)
	}
	for name, f := range fams {
		if !helped[name] {
			t.Errorf("%s has no HELP", name)
		}
		if f.typ == "histogram" {
			checkHistogram(t, name, f)
		}
	}
	return fams
}

// checkHistogram: per label set, buckets ascending in le and cumulative,
// ending at +Inf, which equals _count, beside a _sum.
func checkHistogram(t *testing.T, name string, f *family) {
	t.Helper()
	type series struct {
		les          []float64
		counts       []float64
		sum, count   float64
		hasSum, hasN bool
	}
	by := map[string]*series{}
	get := func(labels map[string]string) *series {
		l := map[string]string{}
		for k, v := range labels {
			if k != "le" {
				l[k] = v
			}
		}
		k := labelKey(l)
		if by[k] == nil {
			by[k] = &series{}
		}
		return by[k]
	}
	for _, s := range f.samples {
		se := get(s.labels)
		switch s.name {
		case name + "_bucket":
			le, err := strconv.ParseFloat(s.labels["le"], 64)
			if err != nil {
				t.Errorf("%s: le %q", name, s.labels["le"])
			}
			se.les, se.counts = append(se.les, le), append(se.counts, s.value)
		case name + "_sum":
			se.sum, se.hasSum = s.value, true
		case name + "_count":
			se.count, se.hasN = s.value, true
		}
	}
	for k, se := range by {
		if !se.hasSum || !se.hasN || len(se.les) == 0 || se.les[len(se.les)-1] != posInf {
			t.Errorf("%s%s: want buckets ending at +Inf, _sum and _count", name, k)
			continue
		}
		if !sort.Float64sAreSorted(se.les) || !sort.Float64sAreSorted(se.counts) {
			t.Errorf("%s%s: buckets not ascending and cumulative: le %v counts %v", name, k, se.les, se.counts)
		}
		if se.counts[len(se.counts)-1] != se.count {
			t.Errorf("%s%s: +Inf bucket %v, _count %v", name, k, se.counts[len(se.counts)-1], se.count)
		}
	}
}

var posInf, _ = strconv.ParseFloat("+Inf", 64)

// parseSample reads name{label="value",...} value, unescaping the values.
func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.name = line[:i]
	if !metricName.MatchString(s.name) {
		return s, fmt.Errorf("metric name %q", s.name)
	}
	rest := line[i:]
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for !strings.HasPrefix(rest, "}") {
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				return s, fmt.Errorf("label without =\"")
			}
			name := rest[:eq]
			if !labelName.MatchString(name) || strings.HasPrefix(name, "__") {
				return s, fmt.Errorf("label name %q", name)
			}
			if _, dup := s.labels[name]; dup {
				return s, fmt.Errorf("label %s twice", name)
			}
			rest = rest[eq+2:]
			var v strings.Builder
			j := 0
			for ; j < len(rest) && rest[j] != '"'; j++ {
				if rest[j] == '\n' {
					return s, fmt.Errorf("a raw newline in label %s", name)
				}
				if rest[j] == '\\' {
					j++
					if j == len(rest) {
						return s, fmt.Errorf("label %s ends in a backslash", name)
					}
					switch rest[j] {
					case '\\':
						v.WriteByte('\\')
					case '"':
						v.WriteByte('"')
					case 'n':
						v.WriteByte('\n')
					default:
						return s, fmt.Errorf("label %s: escape \\%c", name, rest[j])
					}
					continue
				}
				v.WriteByte(rest[j])
			}
			if j == len(rest) {
				return s, fmt.Errorf("label %s unterminated", name)
			}
			s.labels[name] = v.String()
			rest = strings.TrimPrefix(rest[j+1:], ",")
		}
		rest = rest[1:]
	}
	fields := strings.Fields(rest)
	if len(fields) < 1 || len(fields) > 2 {
		return s, fmt.Errorf("want a value and at most a timestamp, got %q", rest)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("value %q", fields[0])
	}
	s.value = v
	return s, nil
}

func labelKey(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q,", k, labels[k])
	}
	return "{" + b.String() + "}"
}

// counted reports whether a mailroom_requests_total line of text has every
// label of want.
func counted(text string, want map[string]string) bool {
	for line := range strings.Lines(text) {
		if !strings.HasPrefix(line, "mailroom_requests_total{") {
			continue
		}
		all := true
		for k, v := range want {
			if !strings.Contains(line, k+`="`+v+`"`) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func matches(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func grep(text, prefix string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, prefix) {
			b.WriteString(line)
		}
	}
	return b.String()
}
