package mcpface

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/internal/served"
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
	// Client are more options for the client the tools call the daemon
	// with.
	Client []client.Option
	// ClientFor, when set, gives more options for the client of the face
	// built for r, the request that opens a session (or a stateless
	// request), after Client's: the daemon hands its own API the caller's
	// client certificate through it, so a caller known by its certificate
	// is the same principal in its tool calls as at /mcp.
	ClientFor func(r *http.Request) []client.Option
}

// Path is where the daemon serves the face over streamable HTTP.
const Path = "/mcp"

// NewHTTPHandler serves the face over MCP's streamable HTTP transport: each
// session gets a face of its own, built on its first request and acting
// for that request's bearer token (or ?agent= on a daemon without tokens),
// whose tools call the daemon at daemonAddr with the same token. So the
// daemon's guard decides every call, as for any other client. A session
// answers only requests carrying the token it was opened with. A request
// of the stateless protocol (Stateless and later) gets a face of its own
// in the same way, ended with the request.
func NewHTTPHandler(daemonAddr string, opts HTTPOptions) *HTTPHandler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	h := &HTTPHandler{addr: daemonAddr, opts: opts, sessions: map[string]httpSession{}, requests: map[uint64]context.CancelFunc{}}
	h.sdk = mcp.NewStreamableHTTPHandler(h.server, &mcp.StreamableHTTPOptions{Logger: opts.Logger, SessionTimeout: opts.SessionTimeout,
		DisableLocalhostProtection: opts.AnyHost})
	// The SDK serves 2026-07-28 over HTTP only statelessly: each request
	// is a session of its own, answered by a face built for it.
	h.stateless = mcp.NewStreamableHTTPHandler(requestServer, &mcp.StreamableHTTPOptions{Logger: opts.Logger, Stateless: true,
		DisableLocalhostProtection: opts.AnyHost})
	return h
}

// Stateless is the first protocol version the face serves over HTTP
// statelessly (SEP-2575: no initialize, no session; every request says
// its version in the Mcp-Protocol-Version header).
const Stateless = "2026-07-28"

// HTTPHandler is the face over streamable HTTP.
type HTTPHandler struct {
	addr string
	opts HTTPOptions
	// sdk serves the protocol versions up to 2025-11-25, in sessions;
	// stateless serves 2026-07-28 and later, a face per request.
	sdk, stateless *mcp.StreamableHTTPHandler

	mu       sync.Mutex
	sessions map[string]httpSession // by session id
	// requests ends the stateless requests in flight (a subscription's
	// stream lasts as long as its request), by a number of their own.
	requests map[uint64]context.CancelFunc
	nextReq  uint64
}

// httpSession is one session's face and the hash of the token it belongs
// to.
type httpSession struct {
	owner [32]byte
	face  *Face
}

// Close ends every session, and with them the streams their clients hold
// open, which would otherwise hold up the server's shutdown until its
// deadline, and every stateless request in flight (a subscription's
// stream). A client that comes back starts a new session.
func (h *HTTPHandler) Close() {
	h.mu.Lock()
	var faces []*Face
	for _, s := range h.sessions {
		faces = append(faces, s.face)
	}
	for _, cancel := range h.requests {
		cancel()
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
	// Every answer depends on the caller's token: no shared cache keeps
	// one (the SDK's streams say no-cache; private is added).
	w = &answerWriter{ResponseWriter: w}
	defer w.(*answerWriter).done()
	// The token first: nobody without one gets the body read.
	if h.opts.Authenticate != nil {
		if err := h.opts.Authenticate(r); err != nil {
			writeError(w, r, err)
			return
		}
	}
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcp.DefaultMaxRequestBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeError(w, r, mailbox.Errorf(mailbox.CodeTooLarge, "request body: over %d bytes", tooLarge.Limit))
				return
			}
			writeError(w, r, mailbox.Errorf(mailbox.CodeInvalid, "request body: could not be read: %v", err))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		served.Method(w, methodLabel(body)) // /metrics
	} else {
		served.Method(w, served.HTTPMethod(r.Method))
	}
	token := bearer(r)
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= Stateless && r.Header.Get("Mcp-Session-Id") == "" {
		h.serveStateless(w, r, token)
		return
	}
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		h.mu.Lock()
		s, ok := h.sessions[id]
		h.mu.Unlock()
		if ok && s.owner != ownerOf(r) {
			// Another token's session is answered as an unknown one.
			writeError(w, r, &mailbox.Error{Code: mailbox.CodeNotFound, Message: "Mcp-Session-Id: no such session for this token; start a new session"})
			return
		}
		h.sdk.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPost {
		// A request without a session may open one: the face is built
		// here, so a refusal (a token the daemon does not accept, no
		// agent on a daemon without tokens) is answered in words.
		f, err := h.newFace(r, token, true)
		if err != nil {
			writeError(w, r, err)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), faceKey{}, f))
	}
	h.sdk.ServeHTTP(w, r)
}

// serveStateless answers one request of the stateless protocol with a face
// built for it and ended with it. Nothing is lost by having no session:
// the face holds no state between calls (each tool is a call of the
// daemon), a subscription is a subscriptions/listen request whose stream
// lasts as long as its face, and the face makes no requests of the client
// (no sampling, elicitation or roots, which 2026-07-28 forbids outside a
// tool's answer anyway).
func (h *HTTPHandler) serveStateless(w http.ResponseWriter, r *http.Request, token string) {
	if r.Method != http.MethodPost {
		// The SDK's answer (405, Allow: POST) needs no face.
		h.stateless.ServeHTTP(w, r)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	h.mu.Lock()
	h.nextReq++
	n := h.nextReq
	h.requests[n] = cancel
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.requests, n)
		h.mu.Unlock()
	}()
	r = r.WithContext(ctx)
	f, err := h.newFace(r, token, false)
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer f.Close()
	h.stateless.ServeHTTP(w, r.WithContext(context.WithValue(ctx, faceKey{}, f)))
}

// requestServer hands the stateless handler the face built for the request.
func requestServer(r *http.Request) *mcp.Server {
	if f, _ := r.Context().Value(faceKey{}).(*Face); f != nil {
		return f.Server
	}
	return nil
}

// newFace builds a face acting for the request's token (or ?agent=); a
// session's face (session) is named by a session id of its own and forgets
// itself when its session ends.
func (h *HTTPHandler) newFace(r *http.Request, token string, session bool) (*Face, error) {
	opts := append([]client.Option{client.WithTimeout(10 * time.Second)}, h.opts.Client...)
	if h.opts.ClientFor != nil {
		opts = append(opts, h.opts.ClientFor(r)...)
	}
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	c, err := client.New(h.addr, opts...)
	if err != nil {
		return nil, err
	}
	o := Options{Agent: r.URL.Query().Get("agent"), Version: h.opts.Version, Logger: h.opts.Logger}
	if session {
		id := rand.Text()
		o.SessionID = id
		o.Ended = func() {
			h.mu.Lock()
			delete(h.sessions, id)
			h.mu.Unlock()
		}
	}
	f, err := New(r.Context(), c, o)
	if errors.Is(err, ErrNoAgent) {
		return nil, mailbox.Invalidf("agent", "missing; this daemon runs without tokens, so say which agent the session acts as: /mcp?agent=planner@local")
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ownerOf is whom r's session belongs to: the hash of its token, or of
// its client certificate when it has no token (a caller known by its
// certificate), so one such caller cannot drive another's session.
func ownerOf(r *http.Request) [32]byte {
	if token := bearer(r); token != "" || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return sha256.Sum256([]byte(token))
	}
	return sha256.Sum256(append([]byte("certificate\x00"), r.TLS.PeerCertificates[0].Raw...))
}

// server hands the SDK the face built for the session's first request; from
// then on the session is its token's.
func (h *HTTPHandler) server(r *http.Request) *mcp.Server {
	f, _ := r.Context().Value(faceKey{}).(*Face)
	if f == nil {
		return nil
	}
	h.mu.Lock()
	h.sessions[f.sessionID] = httpSession{owner: ownerOf(r), face: f}
	h.mu.Unlock()
	return f.Server
}

// writeError answers in the daemon's one error shape; a 401 says the
// scheme to retry with (RFC 6750).
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	body := mailbox.ErrorBody(err)
	if errors.Is(err, client.ErrUnreachable) {
		body = mailbox.ErrorResponse{Kind: mailbox.KindError, Code: mailbox.CodeUnavailable, Message: err.Error()}
	}
	status := mailbox.HTTPStatus(body.Code)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", auth.ChallengeFor(r.Header.Get("Authorization"), err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

// mcpMethods are the method labels /metrics counts /mcp requests by: the
// protocol's methods, so the label values stay a bounded set.
var mcpMethods = map[string]bool{}

func init() {
	for _, m := range []string{"initialize", "ping", "server/discover", "subscriptions/listen", "tools/list", "tools/call",
		"resources/list", "resources/read", "resources/templates/list", "resources/subscribe", "resources/unsubscribe",
		"prompts/list", "prompts/get", "completion/complete", "logging/setLevel", "notifications/initialized",
		"notifications/cancelled", "notifications/progress", "notifications/roots/list_changed"} {
		mcpMethods[m] = true
	}
}

// methodLabel is the method label of a POST to /mcp: its JSON-RPC method
// if the protocol has it, "other" if not, "response" for a client's answer
// (which has none), "batch" for an array.
func methodLabel(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return "batch"
	}
	var m struct {
		Method *string `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil {
		return "malformed"
	}
	switch {
	case m.Method == nil:
		return "response"
	case mcpMethods[*m.Method]:
		return *m.Method
	}
	return "other"
}

// answerWriter marks every answer of /mcp as the caller's own (Cache-Control
// private or no-store, Vary: Authorization), and tells /metrics the
// JSON-RPC error code of an error answer, which the SDK sends with status
// 200 on a stream.
type answerWriter struct {
	http.ResponseWriter
	wrote bool
	rpc   int // the first JSON-RPC error code seen; 0: none
}

func (w *answerWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		h := w.Header()
		switch cc := h.Get("Cache-Control"); {
		case cc == "":
			h.Set("Cache-Control", "no-store")
		case !strings.Contains(cc, "private") && !strings.Contains(cc, "no-store"):
			h.Set("Cache-Control", "private, "+cc)
		}
		h.Add("Vary", "Authorization")
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *answerWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.rpc == 0 && bytes.Contains(b, []byte(`"error":{`)) {
		w.rpc = rpcErrorCode(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// done tells /metrics the JSON-RPC error answered, if one was.
func (w *answerWriter) done() {
	if w.rpc != 0 {
		served.RPCError(w.ResponseWriter, w.rpc)
	}
}

// rpcErrorCode is the code of the first JSON-RPC error response in b: a
// JSON body, or an SSE event's data lines. A message with a method (a
// notification on the same stream) is not an answer.
func rpcErrorCode(b []byte) int {
	for line := range bytes.Lines(b) {
		line = bytes.TrimSpace(line)
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			line = bytes.TrimSpace(d)
		}
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var m struct {
			Method string `json:"method"`
			Error  *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &m) == nil && m.Method == "" && m.Error != nil && m.Error.Code != 0 {
			return m.Error.Code
		}
	}
	return 0
}
