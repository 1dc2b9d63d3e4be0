package a2a_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
)

// Every binding answers, successes and errors alike, in the JSON media
// type the request accepts: application/json when it asks for it, for */*
// or says nothing; application/a2a+json when it asks for that. a2a-go
// v2 reads an error only as application/json.
func TestAnswersNegotiateTheirMediaType(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	id := sendV03(t, base, "neg-1", "fix the flaky test")
	const unknown = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	v1 := map[string]string{"A2A-Version": "1.0"}
	type call struct {
		binding, outcome string
		method, url      string
		headers          map[string]string
		body             string
		status           int
		// ok reads the answer's body: the success or the error it is.
		ok func(body []byte) bool
	}
	rpcResult := func(b []byte) bool {
		var rep rpcReply
		return json.Unmarshal(b, &rep) == nil && rep.Error == nil && strings.Contains(string(rep.Result), id)
	}
	rpcError := func(code int) func([]byte) bool {
		return func(b []byte) bool {
			var rep rpcReply
			return json.Unmarshal(b, &rep) == nil && rep.Error != nil && rep.Error.Code == code
		}
	}
	restTask := func(b []byte) bool {
		var task struct{ ID string }
		return json.Unmarshal(b, &task) == nil && task.ID == id
	}
	restError := func(b []byte) bool {
		var rep struct{ Error struct{ Status string } }
		return json.Unmarshal(b, &rep) == nil && rep.Error.Status == "NOT_FOUND"
	}
	calls := []call{
		{"JSON-RPC v1.0", "success", "POST", base, v1, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"` + id + `"}}`, 200, rpcResult},
		{"JSON-RPC v1.0", "error", "POST", base, v1, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"` + unknown + `"}}`, 200, rpcError(-32001)},
		{"JSON-RPC v0.3", "success", "POST", base, nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"` + id + `"}}`, 200, rpcResult},
		{"JSON-RPC v0.3", "error", "POST", base, nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"` + unknown + `"}}`, 200, rpcError(-32001)},
		{"HTTP+JSON", "success", "GET", base + "tasks/" + id, v1, "", 200, restTask},
		{"HTTP+JSON", "error", "GET", base + "tasks/" + unknown, v1, "", 404, restError},
		{"legacy", "success", "POST", base + "rpc", nil, `{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"id":"` + id + `"}}`, 200, rpcResult},
		{"legacy", "error", "POST", base + "rpc", nil, `{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"id":"` + unknown + `"}}`, 200, rpcError(-32001)},
	}
	accepts := []struct {
		accept, bodyType, want string
	}{
		{"application/json", "application/json", "application/json"},
		{"application/a2a+json", "application/json", "application/a2a+json"},
		{"*/*", "application/json", "application/json"},
		{"", "application/json", "application/json"},
		// Both acceptable alike: the type the body was sent as.
		{"*/*", "application/a2a+json", "application/a2a+json"},
		{"", "application/a2a+json", "application/a2a+json"},
		{"application/json, application/a2a+json", "application/a2a+json", "application/a2a+json"},
		// q-values, the most specific range deciding each type's.
		{"application/a2a+json;q=0.5, application/json;q=0.9", "application/a2a+json", "application/json"},
		{"application/json;q=0.1, application/*", "application/json", "application/a2a+json"},
		{"application/a2a+json, */*;q=0.1", "application/json", "application/a2a+json"},
		{"application/json;q=0, */*", "application/json", "application/a2a+json"},
		// Neither allowed: application/json all the same.
		{"text/html", "application/a2a+json", "application/json"},
		{"application/json;q=0, application/a2a+json;q=0", "application/json", "application/json"},
	}
	before := it.seq()
	for _, c := range calls {
		for _, a := range accepts {
			if c.body == "" && a.bodyType != "application/json" {
				continue // a GET has no body to prefer the type of
			}
			name := c.binding + " " + c.outcome + ", Accept " + a.accept + ", body " + a.bodyType
			req := mustRequest(t, c.method, c.url)
			if c.body != "" {
				req = mustRequestBody(t, c.method, c.url, c.body)
				req.Header.Set("Content-Type", a.bodyType)
			}
			if a.accept != "" {
				req.Header.Set("Accept", a.accept)
			}
			r := do(t, req, c.headers)
			if r.status != c.status || r.ctype != a.want || !c.ok(r.body) {
				t.Errorf("%s: %d %s %s; want %d as %s", name, r.status, r.ctype, r.body, c.status, a.want)
			}
		}
	}
	if after := it.seq(); after != before {
		t.Errorf("reads changed the mailbox: seq %d -> %d", before, after)
	}
}

// A stream is text/event-stream whatever JSON type the client accepts;
// one refused before it starts is a JSON error the client can read, in
// application/json when it accepts only the stream.
func TestStreamsStayEventStreams(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	for _, accept := range []string{"application/a2a+json", "application/json", "text/event-stream", ""} {
		req := mustRequestBody(t, "POST", base+"message:stream", `{"message":{"role":"ROLE_USER","messageId":"st-`+accept+`","parts":[{"text":"hi"}]}}`)
		req.Header.Set("Content-Type", "application/a2a+json")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		req.Header.Set("A2A-Version", "1.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		_ = resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Errorf("Accept %q: %d %s (%q); want an event stream", accept, resp.StatusCode, resp.Header.Get("Content-Type"), line)
		}
	}
	req := mustRequestBody(t, "POST", base+"message:stream", `{}`)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	r := do(t, req, map[string]string{"A2A-Version": "1.0"})
	if r.status != 400 || r.ctype != "application/json" || !strings.Contains(string(r.body), "INVALID_PARAMS") {
		t.Errorf("a refused stream: %d %s %s; want a 400 google.rpc.Status as application/json", r.status, r.ctype, r.body)
	}
}

func mustRequestBody(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}
