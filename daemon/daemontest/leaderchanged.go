package daemontest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// LeaderChanged stands in front of a daemon as an instance of a shared
// mailbox does while the lead changes: it answers the first N requests
// that Match with 503 unavailable, mailbox.HeaderRetry: leader-changed and
// Retry-After (as the daemon's forwarder does, having done nothing), and
// passes every other request to the daemon. It runs on 127.0.0.1, port 0.
type LeaderChanged struct {
	URL string

	mu      sync.Mutex
	left    int
	match   func(*http.Request) bool
	refused [][]byte // the bodies of the requests answered 503
	passed  [][]byte // the bodies of the matching requests passed on
	hint    bool
	after   string
}

// LeaderChangedOptions configure a LeaderChanged proxy.
type LeaderChangedOptions struct {
	// N is how many matching requests are answered 503.
	N int
	// Match picks the requests to refuse; nil is every request.
	Match func(*http.Request) bool
	// NoHint leaves mailbox.HeaderRetry off the 503: a 503 whose outcome
	// is unknown, which no client may retry by itself.
	NoHint bool
	// RetryAfter is the Retry-After header; empty is "0", so that tests
	// do not wait the daemon's second.
	RetryAfter string
}

// StartLeaderChanged starts a proxy to the daemon at target (a base URL).
func StartLeaderChanged(t testing.TB, target string, o LeaderChangedOptions) *LeaderChanged {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &LeaderChanged{left: o.N, match: o.Match, hint: !o.NoHint, after: o.RetryAfter}
	if p.match == nil {
		p.match = func(*http.Request) bool { return true }
	}
	if p.after == "" {
		p.after = "0"
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.match(r) {
			rp.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		refuse := p.left > 0
		if refuse {
			p.left--
			p.refused = append(p.refused, body)
		} else {
			p.passed = append(p.passed, body)
		}
		p.mu.Unlock()
		if !refuse {
			r.Body = io.NopCloser(bytes.NewReader(body))
			rp.ServeHTTP(w, r)
			return
		}
		if p.hint {
			w.Header().Set(mailbox.HeaderRetry, mailbox.RetryLeaderChanged)
		}
		w.Header().Set("Retry-After", p.after)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(mailbox.ErrorBody(mailbox.Errorf(mailbox.CodeUnavailable,
			"no instance leads the shared mailbox right now (an election is under way); retry in a moment")))
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Refused returns the bodies of the requests answered 503, in order.
func (p *LeaderChanged) Refused() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.refused...)
}

// Passed returns the bodies of the matching requests passed to the daemon.
func (p *LeaderChanged) Passed() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.passed...)
}
