// Package client is the Go client of the mailroom daemon: one method per
// route, errors as *mailbox.Error (so errors.Is(err, mailbox.ErrConflict)
// works), and an event subscription that reconnects by itself.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/mailroom/mailroom/mailbox"
)

// ErrUnreachable matches (with errors.Is) every error that means the daemon
// could not be reached or did not answer.
var ErrUnreachable = errors.New("cannot reach mailroom daemon")

// UnreachableError says the daemon at Addr could not be reached: nothing
// listens there, the connection broke, or it did not answer in time.
type UnreachableError struct {
	Addr string
	Err  error
}

func (e *UnreachableError) Error() string {
	return "cannot reach mailroom daemon at " + e.Addr + ": " + e.Err.Error()
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// Client talks to one daemon. It is safe for concurrent use.
type Client struct {
	addr    string   // as the caller gave it, for messages
	base    *url.URL // scheme, host and path prefix
	hc      *http.Client
	stream  *http.Client // hc without an overall timeout, for event streams
	token   string
	timeout time.Duration
	idle    time.Duration
	notice  func(reason string) // WithRetryNotice
	tls     *tls.Config         // WithTLS
	// askedForCert says a daemon asked this client for a certificate it
	// does not have, to word the handshake failure that follows.
	askedForCert atomic.Bool
	// certNotAccepted, when set, says why the daemon would not take this
	// client's certificate (signed by an authority it does not name).
	certNotAccepted atomic.Pointer[string]
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends "Authorization: Bearer token" with every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient uses hc for requests. Its Timeout, if any, is not applied
// to event streams, which stay open indefinitely.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithRetryNotice calls notice(reason) each time a request is sent again
// by itself: a shared mailbox answered 503 with the hint that the lead
// changed and nothing was done (reason is ReasonLeaderChanged). notice may
// be called from any goroutine the client's methods run on.
func WithRetryNotice(notice func(reason string)) Option {
	return func(c *Client) { c.notice = notice }
}

// WithTimeout bounds each request (not event streams); 0 means none.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithStreamIdleTimeout sets how long an event stream may stay silent
// before the client gives up on the connection and reconnects. The daemon
// sends a heartbeat every 15 s by default; the default is 45 s. A daemon
// configured with a longer heartbeat needs a longer one; the tests of the
// silence detection use a short one.
func WithStreamIdleTimeout(d time.Duration) Option { return func(c *Client) { c.idle = d } }

// DefaultStreamIdleTimeout is three default heartbeats.
const DefaultStreamIdleTimeout = 45 * time.Second

// New returns a client for the daemon at addr: "host:port" (the daemon's
// listen address works unchanged) or a URL such as https://host:port. A
// host:port is reached over https with WithTLS, over http without.
func New(addr string, opts ...Option) (*Client, error) {
	base, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	c := &Client{addr: addr, base: base, idle: DefaultStreamIdleTimeout}
	for _, o := range opts {
		o(c)
	}
	if c.tls != nil && !strings.Contains(addr, "://") {
		c.base.Scheme = "https"
	}
	if c.tls == nil && c.hc == nil && c.base.Scheme == "https" {
		// The system's authorities, on a transport of the client's own
		// so that its failures are worded as WithTLS's are.
		c.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if c.tls != nil {
		if c.hc, err = c.transportFor(c.hc, c.tls); err != nil {
			return nil, err
		}
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	s := *c.hc
	s.Timeout = 0
	c.stream = &s
	return c, nil
}

func parseAddr(addr string) (*url.URL, error) {
	bad := func(why string) error {
		return fmt.Errorf("bad daemon address %q: %s; expected host:port (such as 127.0.0.1:7717) or a URL (such as http://127.0.0.1:7717)", addr, why)
	}
	a := strings.TrimSpace(addr)
	if a == "" {
		return nil, bad("empty")
	}
	if strings.Contains(a, "://") {
		u, err := url.Parse(a)
		switch {
		case err != nil:
			return nil, bad(err.Error())
		case u.Scheme != "http" && u.Scheme != "https":
			return nil, bad("scheme " + strconv.Quote(u.Scheme) + " is not http or https")
		case u.Host == "":
			return nil, bad("no host")
		case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			return nil, bad("a daemon URL has no query, fragment or user info")
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.RawPath = ""
		return u, nil
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return nil, bad(strings.TrimPrefix(err.Error(), "address "+a+": "))
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, bad("port " + strconv.Quote(port) + " is not a number from 1 to 65535")
	}
	// A listen address such as ":7717" or "0.0.0.0:7717" means every local
	// interface; a client reaches it on loopback.
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return &url.URL{Scheme: "http", Host: net.JoinHostPort(host, port)}, nil
}

// BaseURL returns the daemon's base URL, such as http://127.0.0.1:7717.
func (c *Client) BaseURL() string { return c.base.String() }

func (c *Client) url(path string, q url.Values) string { return c.urlOf(path, q).String() }

// urlOf is url before it is made a string, for a request built here.
func (c *Client) urlOf(path string, q url.Values) *url.URL {
	u := *c.base
	u.Path += path
	u.RawQuery = q.Encode()
	return &u
}

// jsonHeader is the value of a request's Accept and Content-Type, shared by
// every request: nothing appends to a header's value in place.
var jsonHeader = []string{"application/json"}

// do sends one request, checks that a 2xx answer has the expected kind and
// decodes it into out (unless out is nil). Daemon errors come back as
// *mailbox.Error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any, kind string) error {
	return c.doWithin(ctx, c.timeout, method, path, q, in, out, kind)
}

// doWithin is do bounded by timeout instead of the client's (0: none): a
// long poll's is the client's plus the wait it asked for.
func (c *Client) doWithin(ctx context.Context, timeout time.Duration, method, path string, q url.Values, in, out any, kind string) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encoding request: %w", method, path, err)
		}
		body = b
	}
	resp, err := c.send(ctx, method, path, q, body, in != nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := readBody(resp)
	if err != nil {
		return c.transportError(ctx, err)
	}
	// Every answer names its kind; checking it catches an address that
	// points at something other than a mailroom daemon. The daemon writes
	// it first, so the common case is a look at the answer's first bytes,
	// not a second decoding of the whole answer.
	if !hasKind(raw, kind) {
		var k struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &k); err != nil {
			return fmt.Errorf("%s %s: decoding the daemon's answer: %w", method, path, err)
		}
		if k.Kind != kind {
			return fmt.Errorf("%s %s: the daemon answered kind %q, expected %q (is %s a mailroom daemon?)", method, path, k.Kind, kind, c.addr)
		}
	}
	if out != nil {
		// goccy/go-json decodes the answers (a lease of 32 tasks, say)
		// for a fraction of encoding/json's time and garbage; its fuzz
		// target (logstore's FuzzDecodeMatchesStdlib) holds it to
		// encoding/json's results. Measured again when the daemon's use
		// was confined to the replay decoder (issue 22), BenchmarkBatchedRound
		// interleaved with the floor, three rounds: 2.43, 2.80, 2.44 times
		// the floor with it, 2.09, 2.10, 2.94 with encoding/json.
		if err := gojson.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decoding the daemon's answer: %w", method, path, err)
		}
	}
	return nil
}

// send sends one request and returns a 2xx answer, or the error. A 503
// that says the lead changed (mailbox.HeaderRetry) changed nothing, so the
// same request (the same body) is sent again, after its Retry-After (at
// most retryWaitMax) and at most retryTries times in all, within
// retryBudget of the first refusal and within ctx; each retry is told to
// the retry notice. The last error is returned when it gives up.
func (c *Client) send(ctx context.Context, method, path string, q url.Values, body []byte, hasBody bool) (*http.Response, error) {
	// The budget runs from the first refusal, not the first try: a long
	// poll may have waited its whole wait before the lead changed.
	var refused time.Time
	for try := 1; ; try++ {
		var r io.Reader
		if hasBody {
			r = bytes.NewReader(body)
		}
		// The request is built from the parsed base address, not from a
		// string parsed again for every request.
		req, err := http.NewRequestWithContext(ctx, method, "", r)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
		req.URL = c.urlOf(path, q)
		req.Host = req.URL.Host
		req.Header["Accept"] = jsonHeader
		if hasBody {
			req.Header["Content-Type"] = jsonHeader
		}
		c.authorize(req)
		resp, err := c.hc.Do(req)
		if err != nil {
			return nil, c.transportError(ctx, err)
		}
		if resp.StatusCode/100 == 2 {
			return resp, nil
		}
		rerr := c.refusal(resp)
		resp.Body.Close()
		if !leaderChanged(resp) || try >= retryTries {
			return nil, rerr
		}
		if refused.IsZero() {
			refused = time.Now()
		}
		wait := retryAfter(resp)
		if time.Since(refused)+wait > retryBudget {
			return nil, rerr
		}
		if c.notice != nil {
			c.notice(ReasonLeaderChanged)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if ctx.Err() == context.Canceled {
				return nil, ctx.Err()
			}
			return nil, rerr
		case <-t.C:
		}
	}
}

// The bounds of retrying a request answered "the leader changed".
const (
	retryTries   = 10               // tries in all, the first included
	retryBudget  = 10 * time.Second // from the first refusal to the last try
	retryWaitMax = time.Second      // between two tries, whatever Retry-After says
)

// ReasonLeaderChanged is the reason the retry notice is given when a
// shared mailbox answered that the lead changed and the client retries.
const ReasonLeaderChanged = "the leader changed"

// leaderChanged reports whether resp is the 503 of a shared mailbox whose
// lead changed, which guarantees nothing was done.
func leaderChanged(resp *http.Response) bool {
	return resp.StatusCode == http.StatusServiceUnavailable &&
		resp.Header.Get(mailbox.HeaderRetry) == mailbox.RetryLeaderChanged
}

// retryAfter is resp's Retry-After in seconds, at most retryWaitMax (and
// retryWaitMax when it has none or one this client does not read).
func retryAfter(resp *http.Response) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
	if err != nil || n < 0 {
		return retryWaitMax
	}
	return min(time.Duration(n)*time.Second, retryWaitMax)
}

// hasKind reports whether raw begins {"kind":"<kind>", as the daemon
// writes every answer.
func hasKind(raw []byte, kind string) bool {
	const prefix = `{"kind":"`
	return len(raw) > len(prefix)+len(kind) && string(raw[:len(prefix)]) == prefix &&
		string(raw[len(prefix):len(prefix)+len(kind)]) == kind && raw[len(prefix)+len(kind)] == '"'
}

func (c *Client) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

// readBody reads an answer whole: into a buffer of its announced length
// when it has one (every answer of the daemon's but a stream), so that a
// large lease is read without growing and copying its buffer.
func readBody(resp *http.Response) ([]byte, error) {
	n := resp.ContentLength
	if n < 0 || n > 64<<20 {
		return io.ReadAll(resp.Body)
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(resp.Body, raw); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return raw, nil
}

// transportError says the daemon could not be reached, and, when TLS
// failed, why in an operator's words (a *TLSError). A caller's own
// cancellation is returned as it is: it is not the daemon's fault.
func (c *Client) transportError(ctx context.Context, err error) error {
	if ue, ok := errors.AsType[*UnreachableError](err); ok {
		return ue
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	if ctx.Err() == context.Canceled {
		return ctx.Err()
	}
	if te := c.tlsFailure(err); te != nil {
		err = te
	} else if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("no answer in time: %w", context.DeadlineExceeded)
	}
	return &UnreachableError{Addr: c.addr, Err: err}
}

// refusal is the error of a non-2xx answer: the daemon's, or, when a plain
// request reached its TLS port, a *TLSError saying so (Go's server answers
// it with a 400 of its own).
func (c *Client) refusal(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if te := c.plainToTLS(resp, raw); te != nil {
		return &UnreachableError{Addr: c.addr, Err: te}
	}
	return decodeRefusal(resp, raw)
}

// decodeRefusal decodes the one error body. A body that is not one (a
// proxy's HTML page, say) still yields a *mailbox.Error whose code comes from
// the status through the same table the daemon uses.
func decodeRefusal(resp *http.Response, raw []byte) error {
	var body mailbox.ErrorResponse
	if err := json.Unmarshal(raw, &body); err == nil && body.Kind == mailbox.KindError && body.Code != "" {
		return body.AsError()
	}
	text := strings.TrimSpace(string(raw))
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	return &mailbox.Error{Code: mailbox.CodeForStatus(resp.StatusCode),
		Message: fmt.Sprintf("the daemon answered %s without an error body: %q", resp.Status, text)}
}
