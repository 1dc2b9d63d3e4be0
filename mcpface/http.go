package mcpface

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// HTTPOptions configure the face over streamable HTTP.
type HTTPOptions struct {
	Version string
	Logger  *slog.Logger
	// SessionTimeout ends a session idle this long (default 30 minutes).
	SessionTimeout time.Duration
	// Authenticate, when set, is asked about every request before
	// anything else (the daemon's token check); its error is the answer.
	Authenticate func(r *http.Request) error
	// AnyHost serves requests that reach a loopback address under
	// another host name (a reverse proxy on the same machine). Without
	// it they are refused, which is what keeps a web page that rebinds
	// its own name to 127.0.0.1 away from a daemon without tokens; a
	// daemon with tokens needs no such guard, since the page cannot know
	// one.
	AnyHost bool
}

// Path is where the daemon serves the face over streamable HTTP.
const Path = "/mcp"

// NewHTTPHandler serves the face over MCP's streamable HTTP transport: each
// session gets a face of its own, built on its first request and acting
// for that request's bearer token (or ?agent= on a daemon without tokens),
// whose tools call the daemon at daemonAddr with the same token. So the
// daemon's guard decides every call, as for any other client. A session
// answers only requests carrying the token it was opened with.
func NewHTTPHandler(daemonAddr string, opts HTTPOptions) *HTTPHandler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	h := &HTTPHandler{addr: daemonAddr, opts: opts, sessions: map[string]httpSession{}}
	h.sdk = mcp.NewStreamableHTTPHandler(h.server, &mcp.StreamableHTTPOptions{Logger: opts.Logger, SessionTimeout: opts.SessionTimeout,
		DisableLocalhostProtection: opts.AnyHost})
	return h
}

// HTTPHandler is the face over streamable HTTP.
type HTTPHandler struct {
	addr string
	opts HTTPOptions
	sdk  *mcp.StreamableHTTPHandler

	mu       sync.Mutex
	sessions map[string]httpSession // by session id
}

// httpSession is one session's face and the hash of the token it belongs
// to.
type httpSession struct {
	owner [32]byte
	face  *Face
}

// Close ends every session, and with them the streams their clients hold
// open, which would otherwise hold up the server's shutdown until its
// deadline. A client that comes back starts a new session.
func (h *HTTPHandler) Close() {
	h.mu.Lock()
	var faces []*Face
	for _, s := range h.sessions {
		faces = append(faces, s.face)
	}
	h.mu.Unlock()
	for _, f := range faces {
		for ss := range f.Server.Sessions() {
			ss.Close()
		}
		f.Close()
	}
}

type faceKey struct{}

func bearer(r *http.Request) string {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return token
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.opts.Authenticate != nil {
		if err := h.opts.Authenticate(r); err != nil {
			writeError(w, err)
			return
		}
	}
	token := bearer(r)
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		h.mu.Lock()
		s, ok := h.sessions[id]
		h.mu.Unlock()
		if ok && s.owner != sha256.Sum256([]byte(token)) {
			// Another token's session is answered as an unknown one.
			writeError(w, &mailbox.Error{Code: mailbox.CodeNotFound, Message: "Mcp-Session-Id: no such session for this token; start a new session"})
			return
		}
		h.sdk.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPost {
		// A request without a session may open one: the face is built
		// here, so a refusal (a token the daemon does not accept, no
		// agent on a daemon without tokens) is answered in words.
		f, err := h.newFace(r, token)
		if err != nil {
			writeError(w, err)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), faceKey{}, f))
	}
	h.sdk.ServeHTTP(w, r)
}

func (h *HTTPHandler) newFace(r *http.Request, token string) (*Face, error) {
	opts := []client.Option{client.WithTimeout(10 * time.Second)}
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	c, err := client.New(h.addr, opts...)
	if err != nil {
		return nil, err
	}
	id := rand.Text()
	f, err := New(r.Context(), c, Options{Agent: r.URL.Query().Get("agent"), Version: h.opts.Version, Logger: h.opts.Logger, SessionID: id,
		Ended: func() {
			h.mu.Lock()
			delete(h.sessions, id)
			h.mu.Unlock()
		}})
	if errors.Is(err, ErrNoAgent) {
		return nil, mailbox.Invalidf("agent", "agent: missing; this daemon runs without tokens, so say which agent the session acts as: /mcp?agent=planner@local")
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// server hands the SDK the face built for the session's first request; from
// then on the session is its token's.
func (h *HTTPHandler) server(r *http.Request) *mcp.Server {
	f, _ := r.Context().Value(faceKey{}).(*Face)
	if f == nil {
		return nil
	}
	h.mu.Lock()
	h.sessions[f.sessionID] = httpSession{owner: sha256.Sum256([]byte(bearer(r))), face: f}
	h.mu.Unlock()
	return f.Server
}

// writeError answers in the daemon's one error shape.
func writeError(w http.ResponseWriter, err error) {
	body := mailbox.ErrorBody(err)
	if errors.Is(err, client.ErrUnreachable) {
		body = mailbox.ErrorResponse{Kind: mailbox.KindError, Code: mailbox.CodeUnavailable, Message: err.Error()}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(mailbox.HTTPStatus(body.Code))
	json.NewEncoder(w).Encode(body)
}
