package outbound_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// put registers agent with the card body over HTTP and returns the status
// and the answer.
func put(t *testing.T, base, agent, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, base+"/a2a/agents/"+agent, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A remote agent at the daemon's own address, in any spelling, is refused
// with a 400 naming remote.url, as a push webhook is, and nothing is
// registered; a remote on another port of the same host is not.
func TestRegisteringTheDaemonItselfIsRefused(t *testing.T) {
	const advertised = "http://mailroom.example.test:7717"
	d := daemontest.Start(t, daemontest.Options{Config: func(c *config.Config) { c.AdvertiseURL = advertised }})
	_, port, _ := net.SplitHostPort(d.Addr())
	for _, u := range []string{
		"http://127.0.0.1:" + port + "/",
		"http://127.1:" + port + "/",
		"http://0x7f000001:" + port + "/",
		"http://2130706433:" + port + "/.well-known/agent-card.json",
		"http://[::ffff:127.0.0.1]:" + port + "/",
		"http://localhost:" + port + "/agents/x@local/",
		"http://0.0.0.0:" + port + "/",
		"http://[::1]:" + port + "/",
		advertised + "/agents/x@local/",
	} {
		status, body := put(t, d.URL(), "self@remote", `{"remote":{"url":"`+u+`"}}`)
		if status != http.StatusBadRequest || !strings.Contains(body, `"field":"remote.url"`) || !strings.Contains(body, "this daemon's own address") {
			t.Errorf("registering a remote at %s: %d %s, want 400 naming remote.url as the daemon's own address", u, status, body)
		}
	}
	if status, body := put(t, d.URL(), "other@remote", `{"remote":{"url":"http://127.0.0.1:1/"}}`); status != http.StatusOK {
		t.Errorf("a remote on another port of this host: %d %s, want it registered", status, body)
	}
	snap := d.State(t)
	for _, a := range snap.Registry {
		if a.Agent == "self@remote" {
			t.Fatalf("a refused registration was recorded: %+v", a)
		}
	}
}

// "concurrency": 0 is refused (1 to 64), naming the field; a
// registration that leaves it out gets the default, 4.
func TestConcurrencyZeroIsRefused(t *testing.T) {
	w := start(t)
	status, body := put(t, w.d.URL(), "zero@remote", `{"remote":{"url":"http://127.0.0.1:1/","concurrency":0}}`)
	if status != http.StatusBadRequest || !strings.Contains(body, `"field":"remote.concurrency"`) || !strings.Contains(body, "got 0, expected 1 to 64") {
		t.Fatalf("concurrency 0: %d %s, want 400 naming remote.concurrency", status, body)
	}
	if status, body := put(t, w.d.URL(), "zero@remote", `{"remote":{"url":"http://127.0.0.1:1/","concurrency":65}}`); status != http.StatusBadRequest || !strings.Contains(body, "remote.concurrency") {
		t.Fatalf("concurrency 65: %d %s, want 400 naming remote.concurrency", status, body)
	}
	if c := w.info("zero@remote").Card; c != nil {
		t.Fatalf("a refused registration was recorded: %+v", c)
	}
	if status, body := put(t, w.d.URL(), "zero@remote", `{"remote":{"url":"http://127.0.0.1:1/"}}`); status != http.StatusOK {
		t.Fatalf("without concurrency: %d %s", status, body)
	}
	if c := w.info("zero@remote").Card; c == nil || c.Remote == nil || c.Remote.Concurrency != mailbox.DefaultRemoteConcurrency {
		t.Fatalf("card %+v, want the default concurrency", c)
	}
}

// A log an older daemon wrote, holding a remote registered at the
// daemon's own address with concurrency 0, still replays: the daemon
// starts, lists the agent, and delivers nothing to itself, saying why.
func TestOldSelfRegistrationStillReplays(t *testing.T) {
	w := start(t)
	_, port, _ := net.SplitHostPort(w.d.Addr())
	w.d.Stop()
	entries, err := os.ReadDir(w.d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(w.d.Dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	daemontest.WriteLog(t, w.d.Dir, `{"seq":1,"at_ms":1735689770000,"type":"agent_registered","principal":"oncall","agent":"self@remote","card":{"name":"","description":"","version":"","skills":[],"default_input_modes":[],"default_output_modes":[],"remote":{"url":"http://127.1:`+port+`/","binding":"auto","concurrency":0}}}`)
	w.d.Restart()
	st := w.waitRemote("self@remote", "refused", func(st *mailbox.RemoteStatus) bool {
		return strings.Contains(st.LastError, "this daemon's own address")
	})
	if st.Limit != mailbox.DefaultRemoteConcurrency {
		t.Errorf("limit %d, want the default for a concurrency of 0", st.Limit)
	}
	id := w.send("planner@local", "self@remote", "hello", false)
	if e := w.entry(id); e == nil || e.State != mailbox.TaskQueued {
		t.Fatalf("entry %+v, want the task queued, not delivered to the daemon itself", e)
	}
}

// A remote whose card sends the daemon to itself (its endpoint is the
// daemon's own edge) is not delivered to either: its remote reads failing,
// saying so, and its tasks stay queued.
func TestCardNamingTheDaemonItselfIsNotDelivered(t *testing.T) {
	w := start(t)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		writeCard(rw, w.d.URL()+"/agents/worker@local/", "Loop", "points back at the daemon", false)
	}))
	t.Cleanup(srv.Close)
	w.register("loop@remote", srv.URL, 1)
	w.waitRemote("loop@remote", "refused", func(st *mailbox.RemoteStatus) bool {
		return st.State != mailbox.RemoteHealthy && strings.Contains(st.LastError, "card names its endpoint") && strings.Contains(st.LastError, "this daemon's own address")
	})
	id := w.send("planner@local", "loop@remote", "hello", false)
	if e := w.entry(id); e == nil || e.State != mailbox.TaskQueued {
		t.Fatalf("entry %+v, want the task queued, not delivered to the daemon itself", e)
	}
}
