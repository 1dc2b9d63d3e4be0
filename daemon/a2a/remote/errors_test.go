package remote_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/remote/clienttest"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/mailbox"
)

// How the client reports answers it cannot use and calls it gave up on.

func TestRemoteAnswersThatDoNotParse(t *testing.T) {
	ctx := clienttest.Ctx(t)
	huge := `{"jsonrpc":"2.0","id":"mailroom-1","result":{"id":"t","status":{"state":"completed"},"x":"` + strings.Repeat("a", 5<<20) + `"}}`
	cases := []struct {
		name   string
		status int
		body   string
		ctype  string
		kind   remote.ErrorKind
		says   []string
	}{
		{"an unknown state", 200, `{"jsonrpc":"2.0","id":"mailroom-1","result":{"kind":"task","id":"t1","status":{"state":"bogus"}}}`, "", remote.Malformed,
			[]string{"result.status.state", `"bogus"`, "the answer began"}},
		{"a task without an id", 200, `{"jsonrpc":"2.0","id":"mailroom-1","result":{"kind":"task","status":{"state":"completed"}}}`, "", remote.Malformed,
			[]string{"result.id: missing"}},
		{"a bad part", 200, `{"jsonrpc":"2.0","id":"mailroom-1","result":{"kind":"task","id":"t1","status":{"state":"completed"},"artifacts":[{"parts":[{"kind":"video"}]}]}}`, "", remote.Malformed,
			[]string{"result.artifacts[0].parts[0].kind"}},
		{"not JSON-RPC", 200, `<html>` + strings.Repeat("x", 1000) + `</html>`, "text/html", remote.Malformed,
			[]string{"expected a JSON-RPC response", "<html>xxx", `..."`}},
		{"neither result nor error", 200, `{"jsonrpc":"2.0","id":"mailroom-1"}`, "", remote.Malformed,
			[]string{"neither result nor error"}},
		{"too large", 200, huge, "", remote.Malformed, []string{"larger than 4 MiB"}},
		{"invalid params", 200, `{"jsonrpc":"2.0","id":"mailroom-1","error":{"code":-32602,"message":"params.id: expected a string"}}`, "", remote.Refused,
			[]string{"code -32602", "params.id: expected a string"}},
		{"an answer to another request", 200, `{"jsonrpc":"2.0","id":"someone-else","result":{"kind":"task","id":"t1","status":{"state":"completed"}}}`, "", remote.Malformed,
			[]string{"not to this one"}},
		{"a proxy's 502", 502, `bad gateway`, "text/plain", remote.Transport, []string{"HTTP 502", "bad gateway"}},
		{"rate limited", 429, `slow down`, "text/plain", remote.Transport, []string{"HTTP 429"}},
		{"unauthorized", 401, `{"error":"who are you"}`, "application/json", remote.Refused, []string{"HTTP 401"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ct := c.ctype
				if ct == "" {
					ct = "application/json"
				}
				w.Header().Set("Content-Type", ct)
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			defer srv.Close()
			r, err := remote.New(nil, remote.Card{Binding: mailbox.BindingJSONRPC03, Endpoint: srv.URL}, remote.Auth{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Get(ctx, "t1")
			var re *remote.Error
			if !errors.As(err, &re) || re.Kind != c.kind {
				t.Fatalf("Get: %v; want a %s error", err, c.kind)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if len(err.Error()) > 1000 {
				t.Errorf("error of %d bytes: the excerpt is not bounded", len(err.Error()))
			}
			if errors.Is(err, remote.ErrInvalidParams) != (c.name == "invalid params") {
				t.Errorf("errors.Is(ErrRemoteInvalidParams) wrong for %v", err)
			}
		})
	}
}

func TestRemoteCallerGivesUp(t *testing.T) {
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the request whole, so the server notices the client
		// going away; then never answer.
		_, _ = io.ReadAll(r.Body)
		close(arrived)
		<-r.Context().Done()
	}))
	defer srv.Close()
	r, err := remote.New(nil, remote.Card{Binding: mailbox.BindingJSONRPC10, Endpoint: srv.URL}, remote.Auth{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-arrived
		cancel()
	}()
	_, err = r.Get(ctx, "t1")
	if !errors.Is(err, context.Canceled) || !remote.Retryable(err) {
		t.Fatalf("Get abandoned by its caller: %v; want a transport error wrapping context.Canceled", err)
	}
}

func TestRemoteMessageAnswer(t *testing.T) {
	// A v1.0 remote that answers a send with a message: the work is done.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("A2A-Version") != "1.0" || r.URL.Path != "/base/message:send" {
			http.Error(w, "wrong call "+r.URL.Path, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/a2a+json")
		_, _ = w.Write([]byte(`{"message":{"role":"ROLE_AGENT","messageId":"a1","contextId":"c9","parts":[{"text":"hi there"},{"data":[1,2]}]}}`))
	}))
	defer srv.Close()
	r, err := remote.New(nil, remote.Card{Binding: mailbox.BindingHTTPJSON10, Endpoint: srv.URL + "/base/"}, remote.Auth{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Send(clienttest.Ctx(t), clienttest.Outbound(t, clienttest.NativeTask("hello", ""), nil), true)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	res := clienttest.Outcome(t, got)
	if !got.Direct || got.State != wire.StateCompleted || got.ContextID != "c9" || clienttest.ContentText(res) != "hi there|[1,2]" {
		t.Fatalf("a message answer read as %+v (%s)", got, clienttest.ContentText(res))
	}
}

func TestRemoteStreamsThatEndBadly(t *testing.T) {
	ctx := clienttest.Ctx(t)
	working := `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`
	cases := []struct {
		name, tail string
		kind       remote.ErrorKind
		notFound   bool
		says       string
	}{
		{"cut before the end", "", remote.Transport, false, "ended before the task finished"},
		{"an error event, the remote failing", "event: error\ndata: {\"error\":{\"code\":500,\"status\":\"INTERNAL\",\"message\":\"executor crashed\"}}\n\n", remote.Transport, false, "executor crashed"},
		{"an error event, the task gone", "event: error\ndata: {\"error\":{\"code\":404,\"status\":\"NOT_FOUND\",\"message\":\"no such task\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"TASK_NOT_FOUND\"}]}}\n\n",
			remote.Refused, true, "no such task"},
		{"an event that does not parse", "data: {\"statusUpdate\":{\"taskId\":\"t1\",\"status\":{\"state\":\"DONE\"}}}\n\n", remote.Malformed, false, "event.status.state"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(": hello\n\nid: 1\ndata: " + working + "\n\n" + c.tail))
			}))
			defer srv.Close()
			r, err := remote.New(nil, remote.Card{Binding: mailbox.BindingHTTPJSON10, Endpoint: srv.URL, Streaming: true}, remote.Auth{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := r.Resubscribe(ctx, "t1")
			if err != nil {
				t.Fatalf("Resubscribe: %v", err)
			}
			defer s.Close()
			first, err := s.Next()
			if err != nil || first.Task.State != wire.StateWorking || first.Task.ID != "t1" || first.Final {
				t.Fatalf("first update %+v, %v", first, err)
			}
			_, err = s.Next()
			var re *remote.Error
			if !errors.As(err, &re) || re.Kind != c.kind || errors.Is(err, remote.ErrTaskNotFound) != c.notFound || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("the stream ended with %v; want a %s error saying %q (task not found: %v)", err, c.kind, c.says, c.notFound)
			}
			if _, err := s.Next(); !errors.Is(err, io.EOF) {
				t.Fatalf("Next after the end: %v, want io.EOF", err)
			}
		})
	}
}
