package daemontest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/internal/sse"
	"github.com/mailroom/mailroom/mailbox"
)

// RemoteReports stands in front of a daemon in place of its dispatcher's
// reports on remote agents: every agents listing that passes (GET
// /a2a/agents and the `agents` blocks of GET /a2a/events) gets, for each
// agent registered as remote, what the status function answers, exactly
// where the engine puts it (AgentInfo.Remote), replacing whatever the
// daemon's own dispatcher reported. Every other request and byte passes
// unchanged. Operator-facing tests (the console, the CLI) use it to show
// what an operator sees of every state, which a real remote would have
// to be driven into; it runs on 127.0.0.1, port 0.
type RemoteReports struct {
	URL string

	mu     sync.Mutex
	status func(agent string) *mailbox.RemoteStatus
}

// StartRemoteReports starts a proxy to the daemon at target (a base URL)
// that reports status for its remote agents; status may be nil (reports
// nothing, whatever the daemon's dispatcher says) and replaced with Set.
func StartRemoteReports(t testing.TB, target string, status func(agent string) *mailbox.RemoteStatus) *RemoteReports {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &RemoteReports{status: status}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			// The listings are rewritten, so they must come as written.
			pr.Out.Header.Del("Accept-Encoding")
		},
		FlushInterval:  -1,
		ModifyResponse: p.rewrite,
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Addr is host:port, as MAILROOM_ADDR takes it.
func (p *RemoteReports) Addr() string { return strings.TrimPrefix(p.URL, "http://") }

// Set replaces what is reported from the next listing on. The daemon
// pushes a listing on its event streams only after a change of its own
// (an event, an agent's call), as it will after
// engine.Remote().StatusChanged; a test makes one to have the new reports
// pushed.
func (p *RemoteReports) Set(status func(agent string) *mailbox.RemoteStatus) {
	p.mu.Lock()
	p.status = status
	p.mu.Unlock()
}

// fill sets Remote on each remote agent of list, as the engine does.
func (p *RemoteReports) fill(list []mailbox.AgentInfo) {
	p.mu.Lock()
	status := p.status
	p.mu.Unlock()
	for i := range list {
		list[i].Remote = nil
		if status != nil && list[i].Card != nil && list[i].Card.Remote != nil {
			list[i].Remote = status(list[i].Agent)
		}
	}
}

func (p *RemoteReports) rewrite(resp *http.Response) error {
	r := resp.Request
	if r.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return nil
	}
	switch r.URL.Path {
	case "/a2a/agents":
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		var ar mailbox.AgentsResponse
		if err := json.Unmarshal(body, &ar); err != nil {
			return err
		}
		p.fill(ar.Agents)
		if body, err = json.Marshal(ar); err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	case "/a2a/events":
		pr, pw := io.Pipe()
		go p.copyEvents(pw, resp.Body)
		resp.Body = pr
	}
	return nil
}

// maxEvent bounds an event the proxy reads: the daemon's own, whose
// opening snapshot of a large mailbox may hold many megabytes.
const maxEvent = 256 << 20

// copyEvents copies an event stream event by event, filling the agents
// events, until either side ends. The daemon's heartbeats pass too.
func (p *RemoteReports) copyEvents(w *io.PipeWriter, upstream io.ReadCloser) {
	defer upstream.Close()
	rd := sse.NewReader(upstream, maxEvent)
	var werr error
	rd.OnComment = func(text []byte) {
		if werr == nil {
			_, werr = w.Write([]byte(":" + string(text) + "\n\n"))
		}
	}
	for werr == nil {
		ev, err := rd.Next()
		if err != nil {
			w.CloseWithError(err)
			return
		}
		data := ev.Data
		if ev.Type == mailbox.EventAgents {
			var up mailbox.AgentsUpdate
			if json.Unmarshal(data, &up) == nil {
				p.fill(up.Agents)
				if data, err = json.Marshal(up); err != nil {
					w.CloseWithError(err)
					return
				}
			}
		}
		_, werr = w.Write(sse.Block(ev.ID, ev.Type, data))
	}
	// The client went away.
}
