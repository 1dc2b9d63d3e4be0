package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// Only the leader may serve a request that writes, and Covenant's dialect
// leases and drains by GET: every request under /compat/covenant/ goes to
// the leader, while the native routes' plain reads stay on the follower.
func TestMustLead(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/compat/covenant/a2a/tasks/next", true},
		{"GET", "/compat/covenant/a2a/results/next", true},
		{"GET", "/compat/covenant/a2a/queue", true},
		{"POST", "/compat/covenant/a2a/tasks", true},
		{"GET", "/a2a/tasks/next", true},
		{"GET", "/a2a/queue", false},
		{"GET", "/a2a/tasks/recent", false},
		{"POST", "/a2a/tasks", true},
	} {
		if got := mustLead(httptest.NewRequest(tc.method, tc.path, nil)); got != tc.want {
			t.Errorf("mustLead(%s %s) = %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// The 503s that guarantee nothing was done carry the retry hint (so the
// client sends them again by itself); the one whose outcome is unknown (a
// forward that failed, an answer lost) does not.
func TestForwarderHintsRetryOnlyWhenNothingWasDone(t *testing.T) {
	// A leader's address nothing listens on: the forward fails.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	ln.Close()

	for _, tc := range []struct {
		name      string
		role      store.Role
		forwarded bool
		hint      bool
	}{
		{"an election", store.Role{Epoch: 3}, false, true},
		{"forwarded to a follower", store.Role{Epoch: 3, Holder: "b", LeaderURL: gone}, true, true},
		{"forwarded from an election", store.Role{Epoch: 3}, true, true},
		{"forward failed: outcome unknown", store.Role{Epoch: 3, Holder: "b", LeaderURL: gone}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &forwarder{
				next:    http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("a follower served a write itself") }),
				role:    func() store.Role { return tc.role },
				log:     slog.New(slog.DiscardHandler),
				proxies: map[string]*httputil.ReverseProxy{},
			}
			req := httptest.NewRequest("POST", "/a2a/results", strings.NewReader(`{}`))
			if tc.forwarded {
				req.Header.Set(HeaderForwardedBy, "a:7717")
			}
			w := httptest.NewRecorder()
			f.ServeHTTP(w, req)
			if w.Code != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want 503: %s", w.Code, w.Body)
			}
			var body mailbox.ErrorResponse
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Code != mailbox.CodeUnavailable {
				t.Fatalf("body %s (%v), want the error shape with code unavailable", w.Body, err)
			}
			got := w.Header().Get(mailbox.HeaderRetry)
			if tc.hint && (got != mailbox.RetryLeaderChanged || w.Header().Get("Retry-After") != "1") {
				t.Fatalf("%s: %q, Retry-After: %q; want %q and 1", mailbox.HeaderRetry, got, w.Header().Get("Retry-After"), mailbox.RetryLeaderChanged)
			}
			if !tc.hint && got != "" {
				t.Fatalf("%s: %q on a 503 whose outcome is unknown (%s)", mailbox.HeaderRetry, got, body.Message)
			}
		})
	}
}

// The writes in flight to a leader end the moment the engine says the
// lead moved (another instance leads, or this one does), and only then.
func TestForwarderEndsWritesInFlightWhenTheLeadMoves(t *testing.T) {
	f := &forwarder{log: slog.New(slog.DiscardHandler), proxies: map[string]*httputil.ReverseProxy{}}
	roles := make(chan engine.Leadership)
	stop := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		f.watch(roles, stop)
	}()
	defer func() {
		close(stop)
		<-watching
	}()
	toA := f.leaderContext("http://a")
	// Told of a change that leaves a in the lead (its epoch read again):
	// the writes go on. The send returns once watch took it; the next
	// send, once watch has acted on it.
	roles <- engine.Leadership{Role: store.Role{Epoch: 4, Holder: "a", LeaderURL: "http://a"}}
	roles <- engine.Leadership{Role: store.Role{Epoch: 4, Holder: "a", LeaderURL: "http://a"}}
	if toA.Err() != nil {
		t.Fatal("the writes to a ended while a still led")
	}
	roles <- engine.Leadership{Role: store.Role{Epoch: 5, Holder: "b", LeaderURL: "http://b"}}
	ended(t, toA, "the writes to a, once b leads")
	toB := f.leaderContext("http://b")
	roles <- engine.Leadership{Role: store.Role{Leader: true, Epoch: 6}, Term: 1}
	ended(t, toB, "the writes to b, once this instance leads")
}

// ended fails the test unless ctx ends within a generous deadline.
func ended(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s never ended", what)
	}
}
