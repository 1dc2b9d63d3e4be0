package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// reply is a raw HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// request sends a raw request, so tests see exactly what the wire carries.
// ctype "" sends no Content-Type.
func request(t *testing.T, d *daemontest.Daemon, method, path, ctype, body string, header map[string]string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, d.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return readReply(t, resp)
}

func readReply(t *testing.T, resp *http.Response) reply {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// call sends a JSON request and decodes a 200 answer into out.
func call(t *testing.T, d *daemontest.Daemon, method, path string, in, out any) {
	t.Helper()
	body := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = string(b)
	}
	r := request(t, d, method, path, "application/json", body, nil)
	if r.status != http.StatusOK {
		t.Fatalf("%s %s = %d %s, want 200", method, path, r.status, r.body)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, path, r.body, err)
		}
	}
}

// errorBody decodes the one error shape, failing when the body is not it.
func errorBody(t *testing.T, r reply) mailbox.ErrorResponse {
	t.Helper()
	var e mailbox.ErrorResponse
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body %s does not decode: %v", r.body, err)
	}
	if e.Kind != mailbox.KindError || e.Code == "" || e.Message == "" {
		t.Fatalf("error body %s: want kind error with a code and a message", r.body)
	}
	if got := mailbox.HTTPStatus(e.Code); got != r.status {
		t.Errorf("status %d with code %q, which the table maps to %d", r.status, e.Code, got)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	return e
}

func sendTask(t *testing.T, d *daemontest.Daemon, task mailbox.Task) string {
	t.Helper()
	var out mailbox.TaskQueuedResponse
	call(t, d, "POST", "/a2a/tasks", task, &out)
	if out.Kind != mailbox.KindTaskQueued || out.TaskID == "" {
		t.Fatalf("send answered %+v", out)
	}
	return out.TaskID
}

func leaseTask(t *testing.T, d *daemontest.Daemon, recipient string) mailbox.TaskOptResponse {
	t.Helper()
	var out mailbox.TaskOptResponse
	call(t, d, "POST", "/a2a/tasks/next?recipient="+recipient, nil, &out)
	if out.Kind != mailbox.KindTaskOpt {
		t.Fatalf("lease answered kind %q", out.Kind)
	}
	return out
}

func task(from, to, intent string) mailbox.Task {
	return mailbox.Task{Sender: from, Recipient: to, IntentText: intent}
}

// asTokens starts a daemon whose tokens are "t-"+principal with the given
// capabilities, and returns it with do: a raw request as principal p,
// whose 200 answer is decoded into out (when not nil).
func asTokens(t *testing.T, tokens map[string][]string) (*daemontest.Daemon, func(p, method, path, body string, out any) reply) {
	t.Helper()
	var cfg []auth.Token
	for p, caps := range tokens {
		cfg = append(cfg, auth.Token{Principal: p, Token: "t-" + p, Caps: caps})
	}
	d := daemontest.Start(t, daemontest.Options{Tokens: cfg})
	do := func(p, method, path, body string, out any) reply {
		t.Helper()
		ctype := ""
		if body != "" {
			ctype = "application/json"
		}
		r := request(t, d, method, path, ctype, body, map[string]string{"Authorization": "Bearer t-" + p})
		if out != nil && r.status == http.StatusOK {
			if err := json.Unmarshal(r.body, out); err != nil {
				t.Fatalf("%s %s: %s: %v", method, path, r.body, err)
			}
		}
		return r
	}
	return d, do
}
