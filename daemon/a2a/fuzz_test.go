package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/mailbox"
)

// FuzzEdge sends any request under /agents/ (JSON-RPC of both generations,
// HTTP+JSON paths, the legacy binding, bodies and headers) to a real daemon and requires that
// no answer is a 5xx, that every answer can be read (JSON, or an event
// stream whose events are JSON), and that a refusal changes nothing: the
// log's seq and the queue are as before.
func FuzzEdge(f *testing.F) {
	d := daemontest.Start(f, daemontest.Options{Config: func(c *config.Config) {
		// A blocking send answers at once: there is no worker.
		c.A2ABlockingTimeout = time.Millisecond
	}})
	ctx := f.Context()
	native, err := client.New(d.Addr())
	if err != nil {
		f.Fatal(err)
	}
	for _, agent := range []string{"coder@local", "other@local", "asker@local"} {
		if _, err := native.RegisterAgent(ctx, agent, mailbox.AgentCard{Name: "Coder", Skills: []mailbox.AgentSkill{{ID: "code"}}}); err != nil {
			f.Fatal(err)
		}
	}
	task := fuzzSend(f, d.URL()+"/agents/coder@local/")
	other := fuzzSend(f, d.URL()+"/agents/other@local/")
	// A task waiting on its caller, which a message with its id answers.
	waiting := fuzzSend(f, d.URL()+"/agents/asker@local/")
	leased, lease, err := native.Lease(ctx, "asker@local")
	if err != nil || leased == nil {
		f.Fatalf("leasing the seed task: %v", err)
	}
	if err := native.PostResult(ctx, mailbox.Result{TaskID: leased.ID, LeaseID: lease.LeaseID, Status: mailbox.StatusInputRequired,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "which one?"}}}); err != nil {
		f.Fatal(err)
	}
	answer03 := func(taskID string) string {
		return `{"kind":"message","role":"user","messageId":"a1","taskId":"` + taskID + `","parts":[{"kind":"text","text":"that one"}]}`
	}
	answer10 := `{"role":"ROLE_USER","messageId":"a2","taskId":"` + waiting + `","parts":[{"text":"that one"},{"data":{"n":1}}]}`

	msg03 := `{"kind":"message","role":"user","messageId":"f1","parts":[{"kind":"text","text":"hi"}]}`
	msg10 := `{"role":"ROLE_USER","messageId":"f2","parts":[{"text":"hi"}]}`
	rpc := func(method, params string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`)
	}
	for _, s := range []struct {
		method, path, version, ctype string
		body                         []byte
	}{
		{"POST", "coder@local/", "", "application/json", rpc("message/send", `{"message":`+msg03+`,"configuration":{"blocking":false}}`)},
		{"POST", "coder@local/", "", "application/json", rpc("message/stream", `{"message":`+msg03+`}`)},
		{"POST", "coder@local/", "", "application/json", rpc("tasks/get", `{"id":"`+task+`","historyLength":1}`)},
		{"POST", "coder@local/", "", "application/json", rpc("message/send", `{"message":`+answer03(task)+`}`)},
		{"POST", "asker@local/", "", "application/json", rpc("message/send", `{"message":`+answer03(waiting)+`,"configuration":{"blocking":false}}`)},
		{"POST", "asker@local/", "1.0", "application/json", rpc("SendStreamingMessage", `{"message":`+answer10+`}`)},
		{"POST", "asker@local/message:send", "1.0", "application/json", []byte(`{"message":` + answer10 + `,"configuration":{"returnImmediately":true}}`)},
		{"POST", "asker@local/rpc", "", "application/json", rpc("tasks/send", `{"id":"`+waiting+`","message":{"role":"user","parts":[{"type":"text","text":"that one","data":null}]}}`)},
		{"POST", "asker@local/", "1.0", "application/json", rpc("ListTasks", `{"status":"TASK_STATE_INPUT_REQUIRED"}`)},
		{"POST", "coder@local/", "", "application/json", rpc("tasks/get", `{"id":"`+other+`"}`)},
		{"POST", "coder@local/", "", "application/json", rpc("tasks/cancel", `{"id":"`+other+`"}`)},
		{"POST", "coder@local/", "", "application/json", rpc("tasks/resubscribe", `{"id":"`+task+`"}`)},
		{"POST", "coder@local/", "", "application/json", []byte(marieSend)},
		{"POST", "coder@local/", "", "application/json", []byte(marieStream)},
		{"POST", "coder@local/", "1.0", "application/json", rpc("SendMessage", `{"message":`+msg10+`}`)},
		{"POST", "coder@local/", "1.0", "application/json", rpc("SendStreamingMessage", `{"message":`+msg10+`}`)},
		{"POST", "coder@local/", "1.0", "application/json", rpc("GetTask", `{"id":"`+task+`"}`)},
		{"POST", "coder@local/", "1.0", "application/json", rpc("ListTasks", `{"pageSize":2,"status":"TASK_STATE_SUBMITTED"}`)},
		{"POST", "coder@local/", "1.0", "application/json", rpc("CancelTask", `{"id":"`+task+`"}`)},
		{"POST", "coder@local/", "1.0", "application/json", rpc("SubscribeToTask", `{"id":"`+task+`"}`)},
		{"POST", "coder@local/", "1.0", "application/json", rpc("SendMessage", `{"message":`+msg10+`,"configuration":{"taskPushNotificationConfig":{"url":"x"}}}`)},
		{"POST", "coder@local/", "", "application/json", []byte(`{"jsonrpc":"2.0","id":1.5e400,"method":"tasks/get","params":{"id":"x"}}`)},
		{"POST", "coder@local/message:send", "1.0", "application/json", []byte(`{"message":` + msg10 + `}`)},
		{"POST", "coder@local/message:send", "1.0", "text/plain", []byte(`{"message":` + msg10 + `}`)},
		{"POST", "coder@local/message:stream", "", "application/a2a+json", []byte(`{"message":` + msg10 + `}`)},
		{"GET", "coder@local/tasks", "1.0", "", nil},
		{"GET", "coder@local/tasks?pageSize=1&includeArtifacts=true&status=TASK_STATE_CANCELED", "", "", nil},
		{"GET", "coder@local/tasks/" + task, "", "", nil},
		{"GET", "coder@local/tasks/" + other, "", "", nil},
		{"POST", "coder@local/tasks/" + task + ":cancel", "", "application/json", []byte(`{}`)},
		{"POST", "coder@local/tasks/" + other + ":cancel", "", "application/json", []byte(`{}`)},
		{"GET", "coder@local/tasks/" + task + ":subscribe", "", "", nil},
		{"POST", "coder@local/tasks/" + task + "/pushNotificationConfigs", "", "application/json", []byte(`{}`)},
		{"GET", "coder@local/.well-known/agent-card.json", "", "", nil},
		{"GET", "nobody@local/tasks", "", "", nil},
		{"POST", "coder@local/rpc", "", "application/json", rpc("tasks/send", `{"id":"gmf-1","message":{"role":"user","parts":[{"type":"text","text":"hi","data":null}],"metadata":{}}}`)},
		{"POST", "coder@local/rpc", "", "application/json", rpc("tasks/get", `{"id":"gmf-1"}`)},
		{"POST", "coder@local/rpc", "", "application/json", rpc("tasks/cancel", `{"id":"`+other+`"}`)},
		{"POST", "%2e%2e/", "", "application/json", rpc("tasks/get", `{"id":"x"}`)},
	} {
		f.Add(s.method, s.path, s.version, s.ctype, s.body)
	}

	f.Fuzz(func(t *testing.T, method, path, version, ctype string, body []byte) {
		req, err := http.NewRequestWithContext(ctx, method, d.URL()+"/agents/"+path, bytes.NewReader(body))
		if err != nil || req.URL.Host != d.Addr() || !headerValue(req.URL.RawQuery) || strings.Contains(req.URL.RawQuery, " ") {
			// Not a request a client could send here: net/http writes the
			// query as it is, and the server refuses a request line with
			// a space or a control character before any handler sees it.
			return
		}
		if !headerValue(version) || !headerValue(ctype) {
			return // net/http would not send it
		}
		if version != "" {
			req.Header.Set("A2A-Version", version)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}

		beforeSeq, beforeQueue := fuzzState(t, native, ctx)
		refused, status, detail := fuzzDo(t, req)
		if status >= 500 {
			t.Fatalf("%s /agents/%s (A2A-Version %q, Content-Type %q) %q: HTTP %d %s", method, path, version, ctype, body, status, detail)
		}
		if !refused {
			return
		}
		if afterSeq, afterQueue := fuzzState(t, native, ctx); afterSeq != beforeSeq || afterQueue != beforeQueue {
			t.Fatalf("%s /agents/%s %q was refused (%d %s) but changed the mailbox: seq %d -> %d, queue %d -> %d",
				method, path, body, status, detail, beforeSeq, afterSeq, beforeQueue, afterQueue)
		}
	})
}

// headerValue reports whether net/http sends v as a header value: no
// control character but tab.
func headerValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < 0x20 && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// fuzzDo sends req and reports whether it was refused, its status and
// what it said. A stream is read up to its first event and then left.
func fuzzDo(t *testing.T, req *http.Request) (refused bool, status int, detail string) {
	t.Helper()
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified {
		return false, resp.StatusCode, ""
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if b, err := ssetest.NewReader(resp.Body).NextEvent(); err == nil {
			data := b.Data
			var ev map[string]json.RawMessage
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("%s %s: stream event %q is not JSON: %v", req.Method, req.URL, data, err)
			}
			_, failed := ev["error"]
			return failed || resp.StatusCode >= 400, resp.StatusCode, data
		}
		t.Fatalf("%s %s: a stream ended without an event", req.Method, req.URL)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", req.Method, req.URL, err)
	}
	if req.Method == http.MethodHead {
		return resp.StatusCode >= 400, resp.StatusCode, ""
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s %s: HTTP %d answer %q is not a JSON object: %v", req.Method, req.URL, resp.StatusCode, b, err)
	}
	_, failed := v["error"]
	return failed || resp.StatusCode >= 400, resp.StatusCode, string(b)
}

func fuzzState(t *testing.T, native interface {
	Status(context.Context) (mailbox.Status, error)
	Queue(context.Context, mailbox.QueueFilter) (mailbox.QueueView, error)
}, ctx context.Context) (uint64, int) {
	t.Helper()
	st, err := native.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q, err := native.Queue(ctx, mailbox.QueueFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return st.LastSeq, len(q.Tasks)
}

// fuzzSend sends a task through the edge and returns its id.
func fuzzSend(f *testing.F, base string) string {
	resp, err := http.Post(base, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"seed","parts":[{"kind":"text","text":"seed"}]},"configuration":{"blocking":false}}}`))
	if err != nil {
		f.Fatal(err)
	}
	defer resp.Body.Close()
	var rep struct {
		Result struct {
			ID string `json:"id"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil || rep.Result.ID == "" {
		f.Fatalf("seed send: %d %v", resp.StatusCode, err)
	}
	return rep.Result.ID
}
