package daemon

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
)

// The MCP face is a client of the daemon's own API. Its calls are served
// in process, by the very handler the listener serves (the forwarder,
// /metrics' count and authentication apply as to any client), rather
// than over the network: a call that dialled the daemon would have to
// present a certificate of its own under tls_client_auth: require, and
// could carry only a token, so a caller known by its certificate would be
// nobody in its tool calls. In process, each call carries the verified
// TLS state of the caller's own /mcp request: the caller is the same
// principal in its tool calls as at /mcp, and a token caller stays one
// (the face's client still sends its token, which decides).

// selfAPI is the daemon's own API as the MCP face calls it.
type selfAPI struct {
	log *slog.Logger
	// handler is the daemon's whole handler, set once it is built and
	// before anything is served.
	handler http.Handler
}

// forCaller is a transport to the daemon's own API acting for the caller
// of r, an /mcp request: its TLS state and remote address.
func (s *selfAPI) forCaller(r *http.Request) http.RoundTripper {
	t := inProcess{api: s, remote: r.RemoteAddr}
	if r.TLS != nil {
		cs := *r.TLS
		t.tls = &cs
	}
	return t
}

// inProcess serves each request through the daemon's own handler,
// streaming its answer: the face's resources hold the event stream open.
type inProcess struct {
	api    *selfAPI
	tls    *tls.ConnectionState
	remote string
}

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	// The handler's request ends when the caller's does or when the
	// answer's body is closed, as a connection's would.
	ctx, cancel := context.WithCancel(req.Context())
	in := req.Clone(ctx)
	in.TLS, in.RemoteAddr = t.tls, t.remote
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	in.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	in.RequestURI = in.URL.RequestURI()
	in.Proto, in.ProtoMajor, in.ProtoMinor = "HTTP/1.1", 1, 1
	if in.Body == nil {
		in.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, body: pw, ready: make(chan struct{}), req: req}
	w.resp.Body = &answerBody{PipeReader: pr, cancel: cancel}
	go t.serve(w, in, pw, cancel)
	select {
	case <-w.ready:
		if w.err != nil {
			return nil, w.err
		}
		return &w.resp, nil
	case <-ctx.Done():
		pr.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
}

// serve runs the handler for in, then ends the answer: a handler that
// wrote nothing answered 200 with no body, as over a connection.
func (t inProcess) serve(w *pipeWriter, in *http.Request, pw *io.PipeWriter, cancel context.CancelFunc) {
	defer in.Body.Close()
	defer cancel() // as a server ends a request's context once it is answered
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				t.api.log.Error("the daemon's own API panicked serving the MCP face", "path", in.URL.Path, "panic", p)
			}
			err := fmt.Errorf("the daemon's own API failed serving %s", in.URL.Path)
			w.fail(err)
			pw.CloseWithError(err)
		}
	}()
	t.api.handler.ServeHTTP(w, in)
	w.WriteHeader(http.StatusOK) // no-op once written
	pw.Close()
}

// answerBody is an in-process answer's body: closing it ends the
// handler's request, as closing a connection would.
type answerBody struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *answerBody) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}

// pipeWriter is the handler's ResponseWriter: its header is the answer's,
// delivered at WriteHeader or Flush, its body the pipe the caller reads.
type pipeWriter struct {
	header http.Header
	body   *io.PipeWriter
	req    *http.Request

	once  sync.Once
	ready chan struct{} // closed when resp is delivered
	resp  http.Response
	err   error // instead of resp: the handler failed before answering
	wrote bool  // only the handler's goroutine touches wrote
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) {
	if w.wrote || status >= 100 && status < 200 && status != http.StatusSwitchingProtocols {
		return // informational answers are not the answer
	}
	w.wrote = true
	w.once.Do(func() {
		h := w.header.Clone()
		n := int64(-1)
		if v, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64); err == nil {
			n = v
		}
		body := w.resp.Body
		w.resp = http.Response{Status: strconv.Itoa(status) + " " + http.StatusText(status), StatusCode: status,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Body: body, ContentLength: n, Request: w.req}
		close(w.ready)
	})
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		if w.header.Get("Content-Type") == "" && len(b) > 0 {
			w.header.Set("Content-Type", http.DetectContentType(b))
		}
		w.WriteHeader(http.StatusOK)
	}
	return w.body.Write(b)
}

// Flush delivers the header; the body needs no flush, since every write
// waits for the caller to read it.
func (w *pipeWriter) Flush() { w.WriteHeader(http.StatusOK) }

// fail ends a request whose handler failed: before it answered, RoundTrip
// returns err; after, reading the body does.
func (w *pipeWriter) fail(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.ready)
	})
}
