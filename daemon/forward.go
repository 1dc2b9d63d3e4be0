package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/daemon/a2a"
	"github.com/mailroom/mailroom/daemon/covenant"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
	"github.com/mailroom/mailroom/mcpface"
)

// The headers instances of one shared mailbox tell each other with.
const (
	// HeaderForwardedBy marks a write a follower forwarded; the instance
	// that gets it never forwards it again.
	HeaderForwardedBy = "Mailroom-Forwarded-By"
	// HeaderLeader is the leader's advertise URL, on every write it answers.
	HeaderLeader = "Mailroom-Leader"
	// HeaderSeq is the leader's last durable seq when it answered a write:
	// a follower answers only once it has applied that far.
	HeaderSeq = "Mailroom-Seq"
)

// readYourWrites bounds how long a follower waits to have applied a write
// it forwarded before answering anyway.
const readYourWrites = 2 * time.Second

// forwarder sits in front of an instance of a shared mailbox. Reads (GET)
// are served here, from this instance's state; writes (and the reads that
// write, see mustLead) go to the leader: on
// the leader they are served and stamped with the seq they reached, on a
// follower they are proxied to the leader, and the answer is held until
// this instance has applied that seq, so a client that writes through any
// instance and then reads from it sees its write.
type forwarder struct {
	next http.Handler
	eng  *engine.Engine
	// role is eng.Role; a test sets its own.
	role func() store.Role
	log  *slog.Logger
	// cluster is how the leader is reached: the CAs its certificate is
	// verified with, and the credential callers' identities are asserted
	// with.
	cluster cluster

	// certAsked says a leader asked this instance for a client
	// certificate it does not have: the likely cause of a failure that
	// HTTP/2 reports without its own (cluster.clientTLS).
	certAsked atomic.Bool

	mu      sync.Mutex
	proxies map[string]*httputil.ReverseProxy
	// to is the leader the writes in flight were forwarded to; gone ends
	// them when the lead moves: a leader that lost the lead (paused, cut
	// off) may hold them forever, and can no longer commit them.
	to   string
	gone context.CancelFunc
	lctx context.Context
}

func newForwarder(next http.Handler, eng *engine.Engine, log *slog.Logger, stop <-chan struct{}, c cluster) *forwarder {
	f := &forwarder{next: next, eng: eng, role: eng.Role, log: log, cluster: c, proxies: map[string]*httputil.ReverseProxy{}}
	// Listening before the goroutine starts: no move is missed.
	sub := eng.ListenRole()
	go func() {
		defer sub.Close()
		f.watch(sub.C(), stop)
	}()
	return f
}

// watch ends the forwarded writes in flight the moment the engine says
// the lead moved.
func (f *forwarder) watch(roles <-chan engine.Leadership, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case r := <-roles:
			f.leadMoved(r.Role)
		}
	}
}

// leadMoved ends the writes in flight to a leader that no longer leads.
func (f *forwarder) leadMoved(r store.Role) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone != nil && (r.Leader || r.LeaderURL != f.to) {
		f.log.Warn("the lead moved: ending the writes in flight to the old leader (their outcome is unknown to their clients)", "old_leader", f.to, "leader", r.LeaderURL)
		f.gone()
		f.gone, f.lctx, f.to = nil, nil, ""
	}
}

// leaderContext is the context writes forwarded to leader run under.
func (f *forwarder) leaderContext(leader string) context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone == nil || f.to != leader {
		if f.gone != nil {
			f.gone()
		}
		f.lctx, f.gone = context.WithCancel(context.Background())
		f.to = leader
	}
	return f.lctx
}

// mustLead says whether only the leader may serve r: every write, and the
// reads that write. A lease or drain by GET (`tasks/next`,
// `results/next`) takes what it returns, and the A2A edge marks a
// finished task's result delivered when its caller reads it, so every
// request under /agents/ goes to the leader too.
func mustLead(r *http.Request) bool {
	// An MCP session lives on the instance that opened it; its tools
	// are requests to that instance's own API, which forwards them.
	if r.URL.Path == mcpface.Path {
		return false
	}
	if strings.HasPrefix(r.URL.Path, a2a.Prefix) {
		return true
	}
	// Covenant's dialect leases and drains by GET, like the native
	// routes' next; its other reads are few, so all of it goes.
	if strings.HasPrefix(r.URL.Path, covenant.Prefix) {
		return true
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return r.URL.Path == "/a2a/tasks/next" || r.URL.Path == "/a2a/results/next"
	}
	return true
}

func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !mustLead(r) {
		f.next.ServeHTTP(w, r)
		return
	}
	role := f.role()
	if role.Leader {
		f.next.ServeHTTP(&stamped{ResponseWriter: w, eng: f.eng, leader: role.LeaderURL}, r)
		return
	}
	if by := r.Header.Get(HeaderForwardedBy); by != "" {
		// The lead moved between the follower's look and ours.
		leaderChanged(w, "this instance was sent a write forwarded by "+by+" but does not lead the shared mailbox (the lead just moved); retry")
		return
	}
	if role.LeaderURL == "" {
		leaderChanged(w, "no instance leads the shared mailbox right now (an election is under way); retry in a moment")
		return
	}
	if !f.cluster.identify(r) {
		f.next.ServeHTTP(w, r)
		return
	}
	p, err := f.proxy(role.LeaderURL)
	if err != nil {
		unavailable(w, "the leader's address "+role.LeaderURL+" cannot be used: "+err.Error())
		return
	}
	r.Header.Set(HeaderForwardedBy, r.Host)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(f.leaderContext(role.LeaderURL), cancel)()
	p.ServeHTTP(w, r.WithContext(ctx))
}

// proxy returns the reverse proxy to the leader at base.
func (f *forwarder) proxy(base string) (*httputil.ReverseProxy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.proxies[base]; ok {
		return p, nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	// Every client of this instance may be writing at once: keep a
	// connection to the leader for each rather than Go's default of two.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	tr.TLSClientConfig = f.cluster.clientTLS(&f.certAsked)
	p := &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
		},
		// Streams (an A2A message/stream) go through as they come.
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			seq, err := strconv.ParseUint(resp.Header.Get(HeaderSeq), 10, 64)
			if err != nil {
				return nil
			}
			ctx, cancel := context.WithTimeout(resp.Request.Context(), readYourWrites)
			defer cancel()
			if !f.eng.WaitDurable(ctx, seq) {
				f.log.Warn("answering a forwarded write before this instance applied it", "seq", seq, "applied", f.eng.DurableSeq())
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if what := leaderRefused(err); what != "" {
				f.log.Warn("the leader's certificate cannot be verified: writes are not forwarded to it", "leader", base, "path", r.URL.Path, "err", err)
				unavailable(w, "the leader at "+base+" "+what)
				return
			}
			// Nothing says whether the leader acted on it: the same as a
			// daemon that died before answering.
			f.log.Warn("forwarding a write to the leader failed", "leader", base, "path", r.URL.Path, "err", err)
			unavailable(w, "the write could not be forwarded to the leader at "+base+" or its answer was lost ("+err.Error()+"); whether it took effect is unknown: check, then retry"+
				certHint(f.certAsked.Load()))
		},
	}
	f.proxies[base] = p
	return p, nil
}

// leaderChanged answers 503 for a request this instance did nothing with
// because the lead changed: the hint tells clients (the Go client, so the
// CLI and the console) that sending it again as it was is safe.
func leaderChanged(w http.ResponseWriter, msg string) {
	w.Header().Set(mailbox.HeaderRetry, mailbox.RetryLeaderChanged)
	w.Header().Set("Retry-After", "1")
	unavailable(w, msg)
}

// unavailable answers 503 in the one error shape. Without leaderChanged's
// hint a client does not retry it by itself.
func unavailable(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(mailbox.ErrorBody(mailbox.Errorf(mailbox.CodeUnavailable, "%s", msg)))
}

// stamped adds the leader's headers to a write's answer.
type stamped struct {
	http.ResponseWriter
	eng    *engine.Engine
	leader string
	done   bool
}

func (s *stamped) stamp() {
	if s.done {
		return
	}
	s.done = true
	h := s.ResponseWriter.Header()
	h.Set(HeaderSeq, strconv.FormatUint(s.eng.DurableSeq(), 10))
	if s.leader != "" {
		h.Set(HeaderLeader, s.leader)
	}
}

func (s *stamped) WriteHeader(code int) {
	s.stamp()
	s.ResponseWriter.WriteHeader(code)
}

func (s *stamped) Write(p []byte) (int, error) {
	s.stamp()
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (Flush, write
// deadlines) for streams.
func (s *stamped) Unwrap() http.ResponseWriter { return s.ResponseWriter }
