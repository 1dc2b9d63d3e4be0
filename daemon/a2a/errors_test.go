package a2a_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
)

// Every refusal the edge makes, in both bindings: the right JSON-RPC code
// or REST status and reason, a message that names the problem, and no
// change to the mailbox.

type edgeReply struct {
	status int
	ctype  string
	body   []byte
}

func post(t *testing.T, url string, headers map[string]string, body string) edgeReply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return do(t, req, headers)
}

func do(t *testing.T, req *http.Request, headers map[string]string) edgeReply {
	t.Helper()
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return edgeReply{resp.StatusCode, resp.Header.Get("Content-Type"), b}
}

type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func TestJSONRPCRefusals(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	queued := sendV03(t, base, "m-queued", "stays queued")
	done := sendV03(t, base, "m-done", "will be canceled")
	if r := post(t, base, nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":"`+done+`"}}`); r.status != 200 || bytes.Contains(r.body, []byte(`"error"`)) {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	v1 := map[string]string{"A2A-Version": "1.0"}
	msg03 := `{"kind":"message","role":"user","messageId":"x1","parts":[{"kind":"text","text":"hi"}]}`
	msg10 := `{"role":"ROLE_USER","messageId":"x1","parts":[{"text":"hi"}]}`
	big := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"big","parts":[{"kind":"text","text":"` + strings.Repeat("a", 10<<20) + `"}]}}}`
	tests := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		code    int
		id      string // the id the error must echo ("null" when the request had none readable)
		want    []string
	}{
		{"not JSON", nil, `{"jsonrpc":`, 200, -32700, "null", []string{"not valid JSON"}},
		{"empty body", nil, ``, 200, -32700, "null", []string{"empty"}},
		{"invalid UTF-8", nil, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tasks/get\",\"params\":{\"id\":\"\xff\"}}", 200, -32700, "null", []string{"UTF-8"}},
		{"a batch", nil, `[{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}]`, 200, -32600, "null", []string{"batch requests are not supported"}},
		{"not an object", nil, `"hello"`, 200, -32600, "null", []string{"JSON-RPC request object"}},
		{"no jsonrpc", nil, `{"id":7,"method":"tasks/get","params":{"id":"x"}}`, 200, -32600, "7", []string{`jsonrpc: missing, expected "2.0"`}},
		{"wrong jsonrpc", nil, `{"jsonrpc":"1.0","id":"a","method":"tasks/get","params":{"id":"x"}}`, 200, -32600, `"a"`, []string{`jsonrpc: got "1.0"`}},
		{"no method", nil, `{"jsonrpc":"2.0","id":1,"params":{}}`, 200, -32600, "1", []string{"method: missing"}},
		{"no id", nil, `{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"x"}}`, 200, -32600, "null", []string{"id: missing"}},
		{"id an object", nil, `{"jsonrpc":"2.0","id":{},"method":"tasks/get","params":{"id":"x"}}`, 200, -32600, "null", []string{"id: expected a string, a number or null"}},
		{"duplicate keys", nil, `{"jsonrpc":"2.0","id":1,"id":2,"method":"tasks/get","params":{"id":"x"}}`, 200, -32600, "null", []string{"id"}},
		{"unknown method", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/frobnicate","params":{}}`, 200, -32601, "1", []string{`"tasks/frobnicate" is not an A2A 0.3 method`}},
		{"the legacy method at the base URL", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/send","params":{}}`, 200, -32601, "1", []string{`"tasks/send" is the pre-0.2 protocol's`, "/agents/{agent}/rpc"}},
		{"v1.0 method without the header", nil, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + msg10 + `}}`, 200, -32601, "1", []string{"A2A 1.0 method", "A2A-Version: 1.0"}},
		{"v0.3 method with the v1.0 header", v1, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":` + msg03 + `}}`, 200, -32601, "1", []string{"A2A 0.3 method"}},
		{"unknown version", map[string]string{"A2A-Version": "2.0"}, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`, 200, -32009, "1", []string{`A2A-Version: got "2.0"`}},
		{"params an array", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":["x"]}`, 200, -32602, "1", []string{"params: expected an object"}},
		{"params missing", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/get"}`, 200, -32602, "1", []string{"params: expected an object"}},
		{"id of the wrong type", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":5}}`, 200, -32602, "1", []string{"params.id"}},
		{"no message", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, 200, -32602, "1", []string{"params.message"}},
		{"part without kind", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"k","parts":[{"text":"hi"}]}}}`, 200, -32602, "1", []string{"params.message.parts[0].kind", "missing"}},
		{"unknown part kind", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"k","parts":[{"kind":"image","url":"x"}]}}}`, 200, -32602, "1", []string{`params.message.parts[0].kind: got "image"`}},
		{"unknown v1.0 part", v1, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"k","parts":[{"image":"x"}]}}}`, 200, -32602, "1", []string{"params.message.parts[0]", "exactly one of text, data, raw and url"}},
		{"message of another kind", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"task","role":"user","messageId":"k","parts":[{"kind":"text","text":"hi"}]}}}`, 200, -32602, "1", []string{`params.message.kind: got "task"`}},
		{"v0.3 push config to a host not allowed", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":` + msg03 + `,"configuration":{"pushNotificationConfig":{"url":"https://hook.example/a2a"}}}}`, 200, -32602, "1", []string{"params.configuration.pushNotificationConfig.url", `host "hook.example" is not among`, "push_allow_hosts"}},
		{"v0.3 push config of another scheme in a stream", nil, `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":` + msg03 + `,"configuration":{"pushNotificationConfig":{"url":"ftp://127.0.0.1/a2a"}}}}`, 200, -32602, "1", []string{"params.configuration.pushNotificationConfig.url", `scheme "ftp"`, "http or https"}},
		{"v1.0 push config without a url", v1, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + msg10 + `,"configuration":{"taskPushNotificationConfig":{"token":"t"}}}}`, 200, -32602, "1", []string{"params.configuration.taskPushNotificationConfig.url", "absolute http or https URL"}},
		{"v1.0 push config with a token that is no header", v1, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + msg10 + `,"configuration":{"taskPushNotificationConfig":{"url":"http://127.0.0.1:9/h","token":"a\nb"}}}}`, 200, -32602, "1", []string{"params.configuration.taskPushNotificationConfig.token", "printable ASCII"}},
		{"a stream of a bad message", nil, `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","role":"robot","messageId":"k","parts":[{"kind":"text","text":"hi"}]}}}`, 200, -32602, "1", []string{`params.message.role: got "robot"`}},
		{"bad role", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"robot","messageId":"k","parts":[{"kind":"text","text":"hi"}]}}}`, 200, -32602, "1", []string{`params.message.role: got "robot"`}},
		{"no message id", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`, 200, -32602, "1", []string{"params.message.messageId"}},
		{"no parts", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"k","parts":[]}}}`, 200, -32602, "1", []string{"params.message.parts: expected at least one part"}},
		{"a data part that is no object", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"k","parts":[{"kind":"data","data":[1]}]}}}`, 200, -32602, "1", []string{"params.message.parts[0].data"}},
		{"continuing a task that is not waiting", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"k","taskId":"` + queued + `","parts":[{"kind":"text","text":"more"}]}}}`, 200, -32004, "1", []string{"message.taskId", "it is queued", "only a task waiting on its sender"}},
		{"negative history length", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"` + queued + `","historyLength":-1}}`, 200, -32602, "1", []string{"params.historyLength"}},
		{"unknown task", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"6f9619ff-8b86-4d11-b42d-00c04fc964ff"}}`, 200, -32001, "1", []string{"not found"}},
		{"cancel a finished task", nil, `{"jsonrpc":"2.0","id":"c","method":"tasks/cancel","params":{"id":"` + done + `"}}`, 200, -32002, `"c"`, []string{"cannot cancel task", "already canceled"}},
		{"resubscribe to an unknown task", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"6f9619ff-8b86-4d11-b42d-00c04fc964ff"}}`, 200, -32001, "1", nil},
		{"subscribe to a finished task", v1, `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"` + done + `"}}`, 200, -32004, "1", []string{"has finished"}},
		{"push config without its config", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"x"}}`, 200, -32602, "1", []string{"params.pushNotificationConfig: missing"}},
		{"push config for an unknown task", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"6f9619ff-8b86-4d11-b42d-00c04fc964ff","pushNotificationConfig":{"url":"http://127.0.0.1:9/h"}}}`, 200, -32001, "1", []string{"not found"}},
		{"push config naming the daemon", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"` + queued + `","pushNotificationConfig":{"url":"` + it.base + `/hook"}}}`, 200, -32602, "1", []string{"params.pushNotificationConfig.url", "this daemon's own address"}},
		{"push config with a bad scheme", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"` + queued + `","pushNotificationConfig":{"url":"http://127.0.0.1:9/h","authentication":{"schemes":[]}}}}`, 200, -32602, "1", []string{"params.pushNotificationConfig.authentication.schemes", "1 to 8"}},
		{"delete a push config without its id", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/delete","params":{"id":"` + queued + `"}}`, 200, -32602, "1", []string{"params.pushNotificationConfigId: missing"}},
		{"get a push config a task does not have", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/get","params":{"id":"` + queued + `","pushNotificationConfigId":"nope"}}`, 200, -32602, "1", []string{`has no push notification config "nope"`}},
		{"v1.0 push config without a task", v1, `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{}}`, 200, -32602, "1", []string{"params.taskId"}},
		{"v1.0 push config with an empty scheme", v1, `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"` + queued + `","url":"http://127.0.0.1:9/h","authentication":{"scheme":"Bear er"}}}`, 200, -32602, "1", []string{"params.authentication.scheme", "no spaces"}},
		{"extended card", nil, `{"jsonrpc":"2.0","id":1,"method":"agent/getAuthenticatedExtendedCard","params":{}}`, 200, -32004, "1", []string{"no extended card"}},
		{"bad list page size", v1, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":1000}}`, 200, -32602, "1", []string{"params.pageSize: got \"1000\"", "1 to 100"}},
		{"bad list state", v1, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"DONE"}}`, 200, -32602, "1", []string{`params.status: got "DONE"`}},
		{"bad page token", v1, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageToken":"!!"}}`, 200, -32602, "1", []string{"pageToken"}},
		{"id out of range", nil, `{"jsonrpc":"2.0","id":1.5e400,"method":"tasks/get","params":{"id":"x"}}`, 200, -32600, "null", []string{"id: got 1.5e400", "would not read back"}},
		{"id with an exponent", nil, `{"jsonrpc":"2.0","id":1e2,"method":"tasks/get","params":{"id":"x"}}`, 200, -32600, "null", []string{"id: got 1e2"}},
		{"id 1.0", nil, `{"jsonrpc":"2.0","id":1.0,"method":"tasks/get","params":{"id":"x"}}`, 200, -32600, "null", []string{"id: got 1.0"}},
		{"id -0", nil, `{"jsonrpc":"2.0","id":-0,"method":"tasks/get","params":{"id":"x"}}`, 200, -32600, "null", []string{"id: got -0"}},
		{"id past 2^53", v1, `{"jsonrpc":"2.0","id":9007199254740993,"method":"GetTask","params":{"id":"x"}}`, 200, -32600, "null", []string{"id: got 9007199254740993"}},
		{"wrong content type", map[string]string{"Content-Type": "text/plain"}, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`, 415, -32005, "null", []string{`Content-Type: got "text/plain"`}},
		{"a 10 MB body", nil, big, 413, -32600, "null", []string{"larger than the limit of 1048576 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := it.seq()
			r := post(t, base, tt.headers, tt.body)
			// A v0.3 stream refused once its method is known is an event
			// stream holding the error, as the SDK servers answer.
			ctype := "application/json"
			if tt.headers["A2A-Version"] == "" && tt.code != -32005 && tt.status == 200 &&
				(strings.Contains(tt.body, `"method":"message/stream"`) || strings.Contains(tt.body, `"method":"tasks/resubscribe"`)) {
				ctype = "text/event-stream"
			}
			if r.status != tt.status || r.ctype != ctype {
				t.Fatalf("status %d (%s), want %d %s; body %.300s", r.status, r.ctype, tt.status, ctype, r.body)
			}
			rep := rpcAnswer(t, r)
			if rep.Error == nil || rep.JSONRPC != "2.0" {
				t.Fatalf("body %s: want a JSON-RPC error", r.body)
			}
			if rep.Error.Code != tt.code {
				t.Errorf("code %d, want %d: %s", rep.Error.Code, tt.code, rep.Error.Message)
			}
			if string(rep.ID) != tt.id {
				t.Errorf("id %s, want %s", rep.ID, tt.id)
			}
			for _, w := range tt.want {
				if !strings.Contains(rep.Error.Message, w) {
					t.Errorf("message %q does not say %q", rep.Error.Message, w)
				}
			}
			if d := rep.Error.Data; len(d) > 0 {
				if tt.headers["A2A-Version"] == "1.0" {
					var typed []map[string]any
					if json.Unmarshal(d, &typed) != nil || len(typed) == 0 {
						t.Errorf("v1.0 error.data %s: must be an array of typed objects", d)
					}
					for _, o := range typed {
						if ty, _ := o["@type"].(string); !strings.HasPrefix(ty, "type.googleapis.com/google.rpc.") {
							t.Errorf("v1.0 error.data %s: every object needs its google.rpc @type", d)
						}
					}
				} else if d[0] != '{' {
					t.Errorf("error.data %s: must be an object or absent (a2a-go fails on anything else)", d)
				}
			}
			if after := it.seq(); after != before {
				t.Errorf("the refusal changed the mailbox: seq %d -> %d", before, after)
			}
		})
	}
}

func TestRESTRefusals(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	done := sendV03(t, base, "m-done", "will be canceled")
	if r := post(t, base+"tasks/"+done+":cancel", map[string]string{"A2A-Version": "1.0"}, `{}`); r.status != 200 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	tests := []struct {
		name    string
		method  string
		path    string // under the base URL
		headers map[string]string
		body    string
		status  int
		grpc    string
		reason  string
		want    string
	}{
		{"unknown task", "GET", "tasks/6f9619ff-8b86-4d11-b42d-00c04fc964ff", nil, "", 404, "NOT_FOUND", "TASK_NOT_FOUND", "not found"},
		{"task id not a uuid", "GET", "tasks/nope", nil, "", 404, "NOT_FOUND", "TASK_NOT_FOUND", `"nope" not found`},
		{"cancel a finished task", "POST", "tasks/" + done + ":cancel", nil, "{}", 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE", "already canceled"},
		{"send with a wrong content type", "POST", "message:send", map[string]string{"Content-Type": "text/plain"}, `{"message":{"role":"ROLE_USER","messageId":"ct","parts":[{"text":"hi"}]}}`, 415, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED", `Content-Type: got "text/plain", expected application/json`},
		{"stream with a wrong content type", "POST", "message:stream", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, `{"message":{"role":"ROLE_USER","messageId":"ct","parts":[{"text":"hi"}]}}`, 415, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED", "Content-Type: got"},
		{"send with an unparsable content type", "POST", "message:send", map[string]string{"Content-Type": "a/b/c; ;"}, `{}`, 415, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED", "Content-Type: got"},
		{"subscribe to a finished task", "POST", "tasks/" + done + ":subscribe", nil, "", 400, "UNIMPLEMENTED", "UNSUPPORTED_OPERATION", "has finished"},
		{"send without a message", "POST", "message:send", nil, `{}`, 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "message: missing"},
		{"send a v0.3 part", "POST", "message:send", nil, `{"message":{"role":"ROLE_USER","messageId":"k","parts":[{"kind":"text"}]}}`, 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "message.parts[0]"},
		{"send not JSON", "POST", "message:send", nil, `{`, 400, "INVALID_ARGUMENT", "PARSE_ERROR", "not valid JSON"},
		{"send with a v0.3 header", "POST", "message:send", map[string]string{"A2A-Version": "0.3"}, `{}`, 400, "UNIMPLEMENTED", "VERSION_NOT_SUPPORTED", "A2A 1.0 only"},
		{"get with the wrong method", "POST", "tasks/" + done, nil, "{}", 405, "UNIMPLEMENTED", "INVALID_REQUEST", "method not allowed"},
		{"list with an unknown parameter", "GET", "tasks?state=x", nil, "", 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "unknown query parameter"},
		{"list with a bad page size", "GET", "tasks?pageSize=0", nil, "", 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "pageSize"},
		{"push config without a url", "POST", "tasks/" + done + "/pushNotificationConfigs", nil, "{}", 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "url: got \"\""},
		{"push config of an unknown task", "POST", "tasks/6f9619ff-8b86-4d11-b42d-00c04fc964ff/pushNotificationConfigs", nil, `{"url":"http://127.0.0.1:9/h"}`, 404, "NOT_FOUND", "TASK_NOT_FOUND", "not found"},
		{"push config a task does not have", "GET", "tasks/" + done + "/pushNotificationConfigs/nope", nil, "", 400, "INVALID_ARGUMENT", "INVALID_PARAMS", `no push notification config "nope"`},
		{"push configs with the wrong method", "PUT", "tasks/" + done + "/pushNotificationConfigs", nil, "{}", 405, "UNIMPLEMENTED", "INVALID_REQUEST", "method not allowed"},
		{"push configs too deep", "GET", "tasks/" + done + "/pushNotificationConfigs/a/b", nil, "", 404, "NOT_FOUND", "INVALID_REQUEST", "no such route"},
		{"send with a push config to a host not allowed", "POST", "message:send", nil, `{"message":{"role":"ROLE_USER","messageId":"p","parts":[{"text":"hi"}]},"configuration":{"taskPushNotificationConfig":{"url":"https://hook.example/a2a"}}}`, 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "configuration.taskPushNotificationConfig.url"},
		{"unknown route", "GET", "frobnicate", nil, "", 404, "NOT_FOUND", "INVALID_REQUEST", "no such route"},
		{"unregistered agent", "GET", "../nobody@local/tasks", nil, "", 404, "NOT_FOUND", "INVALID_REQUEST", "nobody@local is not registered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := it.seq()
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			url := base + tt.path
			if strings.HasPrefix(tt.path, "../") {
				url = it.base + "/agents/" + strings.TrimPrefix(tt.path, "../")
			}
			req, err := http.NewRequestWithContext(t.Context(), tt.method, url, body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			r := do(t, req, tt.headers)
			var rep struct {
				Error struct {
					Code    int    `json:"code"`
					Status  string `json:"status"`
					Message string `json:"message"`
					Details []struct {
						Type   string `json:"@type"`
						Reason string `json:"reason"`
					} `json:"details"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.body, &rep); err != nil || r.ctype != "application/json" {
				t.Fatalf("body %s (%s): want a google.rpc.Status as application/json, the type its body was sent as (%v)", r.body, r.ctype, err)
			}
			e := rep.Error
			if r.status != tt.status || e.Code != tt.status || e.Status != tt.grpc {
				t.Errorf("HTTP %d, error %d %s; want %d %s", r.status, e.Code, e.Status, tt.status, tt.grpc)
			}
			if len(e.Details) != 1 || e.Details[0].Type != "type.googleapis.com/google.rpc.ErrorInfo" || e.Details[0].Reason != tt.reason {
				t.Errorf("details %+v, want one ErrorInfo with reason %s", e.Details, tt.reason)
			}
			if !strings.Contains(e.Message, tt.want) {
				t.Errorf("message %q does not say %q", e.Message, tt.want)
			}
			if after := it.seq(); after != before {
				t.Errorf("the refusal changed the mailbox: seq %d -> %d", before, after)
			}
		})
	}
}

func TestUnregisteredAgentAndCard(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	r := do(t, mustRequest(t, "GET", it.base+"/agents/nobody@local/.well-known/agent-card.json"), nil)
	if r.status != 404 || !bytes.Contains(r.body, []byte("nobody@local is not registered")) || !bytes.Contains(r.body, []byte("mailroom agent register nobody@local")) {
		t.Fatalf("card of an unregistered agent: %d %s", r.status, r.body)
	}
	r = post(t, it.base+"/agents/nobody@local/", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`)
	var rep rpcReply
	if r.status != 404 || json.Unmarshal(r.body, &rep) != nil || rep.Error == nil || !strings.Contains(rep.Error.Message, "not registered") {
		t.Fatalf("JSON-RPC to an unregistered agent: %d %s", r.status, r.body)
	}
	// The card is served with and without the trailing slash of the base,
	// and at the older path.
	it.register("coder@local")
	for _, p := range []string{"/agents/coder@local/.well-known/agent-card.json", "/agents/coder@local/.well-known/agent.json"} {
		r := do(t, mustRequest(t, "GET", it.base+p), nil)
		var card map[string]any
		if r.status != 200 || json.Unmarshal(r.body, &card) != nil || card["name"] != "Coder" {
			t.Fatalf("GET %s: %d %s", p, r.status, r.body)
		}
		want := it.base + "/agents/coder@local/"
		if card["url"] != want || card["preferredTransport"] != "JSONRPC" {
			t.Errorf("card url %v transport %v, want %s JSONRPC", card["url"], card["preferredTransport"], want)
		}
		ifaces, _ := card["supportedInterfaces"].([]any)
		if len(ifaces) != 3 {
			t.Errorf("supportedInterfaces %v, want JSON-RPC 1.0, HTTP+JSON 1.0 and JSON-RPC 0.3", card["supportedInterfaces"])
		}
		if caps, _ := card["capabilities"].(map[string]any); caps["streaming"] != true || caps["pushNotifications"] != true {
			t.Errorf("capabilities %v, want streaming and push notifications", card["capabilities"])
		}
		if _, ok := card["securitySchemes"]; ok {
			t.Errorf("a daemon without tokens declares security schemes: %v", card["securitySchemes"])
		}
	}
	// JSON-RPC answers at the base with and without its trailing slash.
	for _, p := range []string{"/agents/coder@local/", "/agents/coder@local"} {
		r := post(t, it.base+p, nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"6f9619ff-8b86-4d11-b42d-00c04fc964ff"}}`)
		var rep rpcReply
		if r.status != 200 || json.Unmarshal(r.body, &rep) != nil || rep.Error == nil || rep.Error.Code != -32001 {
			t.Errorf("POST %s: %d %s; want TaskNotFound", p, r.status, r.body)
		}
	}
}

func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// sendV03 sends a non-blocking v0.3 message and returns its task id.
func sendV03(t *testing.T, base, messageID, text string) string {
	t.Helper()
	r := post(t, base, nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"`+messageID+`","parts":[{"kind":"text","text":"`+text+`"}]},"configuration":{"blocking":false}}}`)
	var rep rpcReply
	var task struct {
		ID string `json:"id"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &rep) != nil || rep.Error != nil || json.Unmarshal(rep.Result, &task) != nil || task.ID == "" {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	return task.ID
}

// seq is the mailbox's last durable seq.
func (it *interop) seq() uint64 {
	it.t.Helper()
	st, err := it.native.Status(it.ctx)
	if err != nil {
		it.t.Fatal(err)
	}
	return st.LastSeq
}

// A stream the daemon ends before the task does closes on an error the
// client's SDK can read: the JSON-RPC error under the request's id, or a
// REST `event: error` holding a google.rpc.Status.
func TestStreamEndsOnAnErrorAtShutdown(t *testing.T) {
	for _, rest := range []bool{false, true} {
		it := newInterop(t, daemontest.Options{})
		base := it.register("coder@local")
		var resp *http.Response
		if rest {
			resp = openStream(t, base+"message:stream", `{"message":{"role":"ROLE_USER","messageId":"s","parts":[{"text":"hi"}]}}`)
		} else {
			resp = openStream(t, base, `{"jsonrpc":"2.0","id":"s1","method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"s","parts":[{"kind":"text","text":"hi"}]}}}`)
		}
		buf := make([]byte, 64<<10)
		n, _ := resp.Body.Read(buf) // the task as sent
		if !strings.Contains(string(buf[:n]), "data: ") {
			t.Fatalf("first event %q", buf[:n])
		}
		go it.d.Stop()
		rest1, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tail := string(rest1)
		if rest {
			if !strings.Contains(tail, "event: error\ndata: {\"error\":") || !strings.Contains(tail, `"status":"UNAVAILABLE"`) {
				t.Errorf("REST stream ended with %q, want an error event holding UNAVAILABLE", tail)
			}
		} else if !strings.Contains(tail, `"id":"s1"`) || !strings.Contains(tail, `"code":-32603`) || !strings.Contains(tail, "shutting down") {
			t.Errorf("JSON-RPC stream ended with %q, want an error under id s1 saying the daemon shuts down", tail)
		}
	}
}

// openStream posts body to url and requires an event stream back.
func openStream(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, ct)
	}
	return resp
}

// An id that can be echoed exactly is echoed byte for byte.
func TestJSONRPCEchoesTheIDAsSent(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	for _, id := range []string{`1`, `-7`, `0`, `1.5`, `0.001`, `9007199254740991`, `"a\u00e9"`, `"x"`, `null`} {
		r := post(t, base, nil, `{"jsonrpc":"2.0","id":`+id+`,"method":"tasks/get","params":{"id":"6f9619ff-8b86-4d11-b42d-00c04fc964ff"}}`)
		rep := rpcAnswer(t, r)
		if string(rep.ID) != id || rep.Error == nil || rep.Error.Code != -32001 {
			t.Errorf("id %s: answered under %s, %s; want TaskNotFound under the same bytes", id, rep.ID, r.body)
		}
	}
}

// v1.0 errors carry their details as typed objects: the field of a bad
// request in a google.rpc.BadRequest, the reason of an A2A error in a
// google.rpc.ErrorInfo; v0.3 keeps {"field": ...}.
func TestJSONRPCErrorDataByVersion(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	v1 := map[string]string{"A2A-Version": "1.0"}
	type detail struct {
		Type            string `json:"@type"`
		Reason          string `json:"reason"`
		Domain          string `json:"domain"`
		FieldViolations []struct {
			Field       string `json:"field"`
			Description string `json:"description"`
		} `json:"fieldViolations"`
	}
	details := func(body string) []detail {
		t.Helper()
		rep := rpcAnswer(t, post(t, base, v1, body))
		var ds []detail
		if rep.Error == nil || json.Unmarshal(rep.Error.Data, &ds) != nil {
			t.Fatalf("%s: error %+v, want data as an array", body, rep.Error)
		}
		return ds
	}
	ds := details(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":0}}`)
	if len(ds) != 1 || ds[0].Type != "type.googleapis.com/google.rpc.BadRequest" || len(ds[0].FieldViolations) != 1 ||
		ds[0].FieldViolations[0].Field != "params.pageSize" || !strings.Contains(ds[0].FieldViolations[0].Description, "1 to 100") {
		t.Errorf("bad page size: data %+v, want one BadRequest naming params.pageSize", ds)
	}
	ds = details(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"6f9619ff-8b86-4d11-b42d-00c04fc964ff"}}`)
	if len(ds) != 1 || ds[0].Type != "type.googleapis.com/google.rpc.ErrorInfo" || ds[0].Reason != "TASK_NOT_FOUND" || ds[0].Domain != "a2a-protocol.org" {
		t.Errorf("unknown task: data %+v, want one ErrorInfo TASK_NOT_FOUND", ds)
	}
	rep := rpcAnswer(t, post(t, base, nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":5}}`))
	if rep.Error == nil || string(rep.Error.Data) != `{"field":"params.id"}` {
		t.Errorf("v0.3 bad params: error %+v, want data {\"field\":\"params.id\"}", rep.Error)
	}
}

// JSON-RPC refused before the request is served (an unregistered agent, a
// missing token) is answered under the request's id.
func TestJSONRPCRefusedAtTheDoorEchoesTheID(t *testing.T) {
	it := newInterop(t, daemontest.Options{Tokens: edgeTokens})
	it.register("coder@local")
	for _, c := range []struct {
		path, tok string
		status    int
	}{
		{"/agents/nobody@local/", "tok-admin", 404},
		{"/agents/coder@local/", "", 401},
		{"/agents/coder@local/", "tok-wrong", 401},
	} {
		h := map[string]string{}
		if c.tok != "" {
			h = bearer(c.tok)
		}
		r := post(t, it.base+c.path, h, `{"jsonrpc":"2.0","id":"req-42","method":"message/send","params":{}}`)
		rep := rpcAnswer(t, r)
		if r.status != c.status || rep.Error == nil || string(rep.ID) != `"req-42"` {
			t.Errorf("POST %s (token %q): %d %s; want %d under id \"req-42\"", c.path, c.tok, r.status, r.body, c.status)
		}
	}
}
