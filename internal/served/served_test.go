package served_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/internal/served"
)

var paths = served.Paths{A2A: "/agents/", Covenant: "/compat/covenant/", MCP: "/mcp", Events: "/a2a/events"}

// Every path shape maps to a binding and a route template holding no id.
func TestClassify(t *testing.T) {
	classify := served.ByPath(paths)
	for _, c := range []struct{ method, path, binding, route, label string }{
		{"POST", "/agents/coder@local/", served.A2AJSONRPC, "/agents/{agent}/", ""},
		{"GET", "/agents/coder@local/", served.A2AREST, "/agents/{agent}/", "GET"},
		{"GET", "/agents/coder@local", served.A2AREST, "/agents/{agent}", "GET"},
		{"POST", "/agents/coder@local/rpc", served.Legacy, "/agents/{agent}/rpc", ""},
		{"GET", "/agents/coder@local/.well-known/agent-card.json", served.A2ACard, "/agents/{agent}/.well-known/agent-card.json", "GET"},
		{"GET", "/agents/coder@local/.well-known/agent.json", served.A2ACard, "/agents/{agent}/.well-known/agent.json", "GET"},
		{"GET", "/agents/coder@local/.well-known/x-6f9619ff", served.A2ACard, "/agents/{agent}/.well-known/{other}", "GET"},
		{"POST", "/agents/coder@local/message:send", served.A2AREST, "/agents/{agent}/message:send", "POST"},
		{"POST", "/agents/coder@local/v1/message:stream", served.A2AREST, "/agents/{agent}/v1/message:stream", "POST"},
		{"GET", "/agents/coder@local/tasks", served.A2AREST, "/agents/{agent}/tasks", "GET"},
		{"GET", "/agents/a%2Fb/tasks/6f9619ff-8b86-4d11-b42d-00c04fc964ff", served.A2AREST, "/agents/{agent}/tasks/{id}", "GET"},
		{"POST", "/agents/coder@local/tasks/6f9619ff:cancel", served.A2AREST, "/agents/{agent}/tasks/{id}:cancel", "POST"},
		{"GET", "/agents/coder@local/v1/tasks/6f9619ff:subscribe", served.A2AREST, "/agents/{agent}/v1/tasks/{id}:subscribe", "GET"},
		{"POST", "/agents/coder@local/tasks/6f9619ff:explode", served.A2AREST, served.Unmatched, "POST"},
		{"GET", "/agents/coder@local/tasks/6f9619ff/pushNotificationConfigs", served.A2AREST, "/agents/{agent}/tasks/{id}/pushNotificationConfigs", "GET"},
		{"DELETE", "/agents/coder@local/tasks/6f9619ff/pushNotificationConfigs/c1", served.A2AREST, "/agents/{agent}/tasks/{id}/pushNotificationConfigs/{configId}", "DELETE"},
		{"GET", "/agents/coder@local/task-6f9619ff", served.A2AREST, served.Unmatched, "GET"},
		{"BREW", "/compat/covenant/a2a/tasks", served.Covenant, served.Unmatched, "other"},
		{"POST", "/mcp", served.MCP, "/mcp", ""},
		{"GET", "/a2a/events", served.Events, "/a2a/events", "GET"},
		{"GET", "/a2a/tasks/6f9619ff", served.Native, served.Unmatched, "GET"},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		s := classify(r)
		route := s.Route
		if route == "" {
			route = served.Unmatched
		}
		if s.Binding != c.binding || route != c.route || s.Method != c.label {
			t.Errorf("%s %s = %s %s %q, want %s %s %q", c.method, c.path, s.Binding, route, s.Method, c.binding, c.route, c.label)
		}
	}
	r := httptest.NewRequest("GET", "/agents/coder@local/v1/tasks/6f9619ff:subscribe", nil)
	if n := testing.AllocsPerRun(100, func() { classify(r) }); n != 0 {
		t.Errorf("classifying allocates %v times, want 0", n)
	}
}

// The dispatcher's notes reach the counter through the writers wrapped
// around the middleware's, and the figures are written as Prometheus text
// with bounded labels.
func TestCounter(t *testing.T) {
	c := served.New(served.ByPath(paths), func(r *http.Request) string {
		if r.URL.Path == "/a2a/tasks" {
			return "/a2a/tasks"
		}
		return ""
	})
	h := c.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/agents/coder@local/":
			w = wrapped{w} // a dispatcher's own writer around the middleware's
			served.Method(w, "SendMessage")
			served.RPCError(w, -32602)
			w.Write([]byte("{}"))
		case "/compat/covenant/a2a/tasks":
			served.Route(w, "/compat/covenant/a2a/tasks")
			served.Failed(w, "invalid")
			w.Write([]byte("{}"))
		case "/a2a/tasks/next":
			served.Route(w, "/a2a/tasks/next")
			w.WriteHeader(http.StatusUnauthorized)
		case "/a2a/events":
			// Nothing written: the client went away.
		}
	}))
	for _, req := range []struct{ method, path string }{
		{"POST", "/agents/coder@local/"}, {"POST", "/agents/coder@local/"}, {"POST", "/compat/covenant/a2a/tasks"},
		{"GET", "/a2a/tasks/next"}, {"GET", "/a2a/events"}, {"POST", "/a2a/tasks"}, {"GET", "/nowhere"},
	} {
		r := httptest.NewRequest(req.method, req.path, nil)
		if req.path == "/a2a/events" {
			ctx, cancel := context.WithCancel(r.Context())
			cancel()
			r = r.WithContext(ctx)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	var mw metrics.Writer
	c.WriteMetrics(&mw)
	var b bytes.Buffer
	if err := mw.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		`mailroom_requests_total{binding="a2a-jsonrpc",route="/agents/{agent}/",method="SendMessage",code="200",outcome="-32602"} 2`,
		`mailroom_requests_total{binding="covenant",route="/compat/covenant/a2a/tasks",method="POST",code="200",outcome="invalid"} 1`,
		`mailroom_requests_total{binding="native",route="/a2a/tasks/next",method="GET",code="401",outcome="error"} 1`,
		`mailroom_requests_total{binding="events",route="/a2a/events",method="GET",code="499",outcome="error"} 1`,
		`mailroom_requests_total{binding="native",route="/a2a/tasks",method="POST",code="200",outcome="ok"} 1`,
		`mailroom_requests_total{binding="native",route="unmatched",method="GET",code="200",outcome="ok"} 1`,
		`mailroom_request_duration_seconds_bucket{binding="a2a-jsonrpc",le="+Inf"} 2`,
		`mailroom_request_duration_seconds_count{binding="native"} 3`,
		"# TYPE mailroom_request_duration_seconds histogram\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the exposition lacks %s:\n%s", want, text)
		}
	}
}

type wrapped struct{ http.ResponseWriter }

func (w wrapped) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d discard) Header() http.Header       { return d.h }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// Counting a request allocates nothing once its series exists: the
// middleware's writer is pooled, its labels are the classifier's
// constants, its counter and histogram atomics.
func TestCountingAllocatesNothing(t *testing.T) {
	c := served.New(served.ByPath(paths), nil)
	h := c.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Route(w, "/a2a/tasks/{id}")
		w.WriteHeader(http.StatusOK)
	}))
	r := httptest.NewRequest("GET", "/a2a/tasks/6f9619ff-8b86-4d11-b42d-00c04fc964ff", nil)
	w := discard{http.Header{}}
	h.ServeHTTP(w, r)
	if n := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("counting a request allocates %v times, want 0", n)
	}
}

// BenchmarkWrap is the middleware's cost per request, beside a handler
// that does nothing.
//
//	go test -run '^$' -bench Wrap -benchmem ./internal/served
func BenchmarkWrap(b *testing.B) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Route(w, "/a2a/tasks/{id}")
		w.WriteHeader(http.StatusOK)
	})
	r := httptest.NewRequest("GET", "/a2a/tasks/6f9619ff-8b86-4d11-b42d-00c04fc964ff", nil)
	w := discard{http.Header{}}
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			next.ServeHTTP(w, r)
		}
	})
	b.Run("counted", func(b *testing.B) {
		h := served.New(served.ByPath(paths), nil).Wrap(next)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h.ServeHTTP(w, r)
			}
		})
	})
}
