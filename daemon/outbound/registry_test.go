package outbound_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/outbound"
	"github.com/mailroom/mailroom/mailbox"
)

// A re-registration with another URL is resolved again, and the next task
// goes to the new remote.
func TestReRegistrationMovesTheRemote(t *testing.T) {
	w := start(t)
	g1 := startGoRemote(t, "First", false)
	g2 := startGoRemote(t, "Second", false)
	w.register("coder@remote", g1.Srv.URL, 1)
	w.waitRemote("coder@remote", "at the first", func(st *mailbox.RemoteStatus) bool { return strings.HasPrefix(st.Endpoint, g1.Srv.URL) })
	w.register("coder@remote", g2.Srv.URL, 1)
	w.waitRemote("coder@remote", "at the second", func(st *mailbox.RemoteStatus) bool { return strings.HasPrefix(st.Endpoint, g2.Srv.URL) })
	waitFor(t, "the second remote's card", func() bool {
		c := w.info("coder@remote").Card
		return c != nil && c.Name == "Second"
	}, func() string { b, _ := json.Marshal(w.info("coder@remote").Card); return string(b) })
	id := w.send("planner@local", "coder@remote", "hello", false)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK {
		t.Fatalf("result %+v", res)
	}
	if g2.Executor().Sent(id) != 1 || g1.Executor().Sent(id) != 0 {
		t.Fatalf("the task reached the first remote %d times and the second %d, want only the second, once", g1.Executor().Sent(id), g2.Executor().Sent(id))
	}
}

// A remote that echoes the request's credential in its error: the
// status, the listing and the log show it redacted.
func TestCredentialsNeverShownInErrors(t *testing.T) {
	w := start(t, config.RemoteCredential{Agent: "leaky@remote", Bearer: secret})
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "agent-card.json") {
			rw.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(rw).Encode(map[string]any{"name": "Leaky", "description": "echoes", "version": "1", "protocolVersion": "0.3.0",
				"url": srv.URL + "/invoke", "preferredTransport": "JSONRPC", "capabilities": map[string]any{},
				"defaultInputModes": []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"}, "skills": []any{}})
			return
		}
		http.Error(rw, "overloaded; you sent "+r.Header.Get("Authorization"), http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	w.register("leaky@remote", srv.URL, 1)
	id := w.send("planner@local", "leaky@remote", "hello", false)
	dl := w.waitDelivery("leaky@remote", id, "retried", func(d mailbox.DeliveryStatus) bool {
		return d.State == mailbox.DeliveryRetrying && strings.Contains(d.LastError, "overloaded")
	})
	if strings.Contains(dl.LastError, secret) || !strings.Contains(dl.LastError, "[redacted]") {
		t.Fatalf("delivery error %q, want the echoed credential redacted", dl.LastError)
	}
	list, err := w.c.Agents(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	shown, _ := json.Marshal(list)
	if strings.Contains(string(shown), secret) || strings.Contains(w.logs.String(), secret) {
		t.Fatalf("the secret shows in the listing or the log")
	}
}

// An agent deregistered (or registered again without remote) is no
// longer delivered to: its tasks stay queued for whoever leases them.
func TestDeregisteredRemoteIsNoLongerDelivered(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 1)
	w.waitRemote("coder@remote", "healthy", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteHealthy })
	if _, err := w.c.RegisterAgent(w.ctx, "coder@remote", mailbox.AgentCard{Name: "Coder", Description: "polls now"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the loop stopped", func() bool { return strings.Contains(w.logs.String(), "no longer registered as remote") }, func() string { return w.logs.String() })
	id := w.send("planner@local", "coder@remote", "hello", false)
	if e := w.entry(id); e == nil || e.State != mailbox.TaskQueued {
		t.Fatalf("entry %+v, want the task queued", e)
	}
	if st := w.info("coder@remote").Remote; st != nil {
		t.Fatalf("status %+v, want none for an agent that polls", st)
	}
}

// The remote's card is read again periodically: a remote that renamed
// itself is registered under its new name.
func TestCardIsResolvedAgain(t *testing.T) {
	w := startWith(t, func(o *outbound.Options) { o.ResolveInterval = 20 * time.Millisecond })
	g := startGoRemote(t, "Before", false)
	w.register("coder@remote", g.Srv.URL, 1)
	name := func() string {
		if c := w.info("coder@remote").Card; c != nil {
			return c.Name
		}
		return ""
	}
	waitFor(t, "the remote's first name", func() bool { return name() == "Before" }, name)
	g.Name = "After"
	g.Restart(false)
	waitFor(t, "the remote's new name", func() bool { return name() == "After" }, name)
	if c := w.info("coder@remote").Card; c.Remote == nil || c.Remote.URL != g.Srv.URL {
		t.Fatalf("card %+v, want its remote kept", c)
	}
}
