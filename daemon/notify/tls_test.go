package notify_test

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

// tlsReceiver is a webhook served over TLS that records the common name
// of the client certificate each POST came with ("" for none).
type tlsReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	peers []string
}

func newTLSReceiver(t *testing.T, cfg *tls.Config) *tlsReceiver {
	r := &tlsReceiver{}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cn := ""
		if len(req.TLS.PeerCertificates) > 0 {
			cn = req.TLS.PeerCertificates[0].Subject.CommonName
		}
		r.mu.Lock()
		r.peers = append(r.peers, cn)
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	r.srv.TLS = cfg
	// The refused handshakes are the test's point, not noise to print.
	r.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	return r
}

func (r *tlsReceiver) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.peers...)
}

// pushTLS is the notifier's TLS as the daemon's config makes it from
// push_ca_file, push_cert_file and push_key_file.
func pushTLS(t *testing.T, ca, cert, key string) *tls.Config {
	t.Helper()
	c := config.DefaultFor(func(string) string { return "" })
	c.PushCAFile, c.PushCertFile, c.PushKeyFile = ca, cert, key
	cfg, err := c.PushTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Push receivers over TLS with a private CA, one of them requiring a
// client certificate: delivered with push_ca_file (and push_cert_file,
// push_key_file, whose certificate the receiver sees); without them the
// notification is retried and dead-lettered, its last error saying what
// failed and which key to set.
func TestPushOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "receivers CA")
	caFile := ca.WriteFile(t, dir, "ca.pem")
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "mailroom-notifier", Client: true}).WriteFiles(t, dir, "client")
	server := []tls.Certificate{ca.Issue(t, testpki.Options{}).TLS}
	open := newTLSReceiver(t, &tls.Config{Certificates: server})
	mtls := newTLSReceiver(t, &tls.Config{Certificates: server, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()})
	quick := func(o notify.Options) notify.Options {
		o.MaxAttempts, o.RetryMin, o.RetryMax = 2, time.Millisecond, 2*time.Millisecond
		return o
	}
	for _, c := range []struct {
		name string
		to   *tlsReceiver
		tls  *tls.Config
		// want is what the dead letter's last error says; "" : delivered,
		// with peer the client certificate the receiver saw.
		want []string
		peer string
	}{
		{"with push_ca_file", open, pushTLS(t, caFile, "", ""), nil, ""},
		{"without push_ca_file", open, nil, []string{"unknown authority", `"receivers CA"`, "push_ca_file"}, ""},
		{"with a client certificate", mtls, pushTLS(t, caFile, certFile, keyFile), nil, "mailroom-notifier"},
		{"without a client certificate", mtls, pushTLS(t, caFile, "", ""), []string{"certificate required", "push_cert_file and push_key_file"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(c.to.seen())
			b := start(t, t.TempDir(), quick(notify.Options{TLS: c.tls}))
			b.send(c.to.srv.URL+"/hook", "tok")
			if c.want == nil {
				b.outbox("empty", empty)
				if seen := c.to.seen(); len(seen) != before+1 || seen[before] != c.peer {
					t.Fatalf("the receiver saw client certificates %q, want one POST with %q", seen[before:], c.peer)
				}
				return
			}
			ns := b.outbox("one dead letter", func(ns []mailbox.Notification) bool { return len(ns) == 1 && ns[0].Dead })
			for _, w := range c.want {
				if !strings.Contains(ns[0].LastError, w) {
					t.Errorf("dead letter's last error %q, want it to say %q", ns[0].LastError, w)
				}
			}
			if ns[0].Attempts != 2 {
				t.Errorf("dead letter after %d attempts, want 2", ns[0].Attempts)
			}
			if n := len(c.to.seen()); n != before {
				t.Errorf("the receiver got %d POSTs through a handshake it refused", n-before)
			}
			t.Logf("last error: %s", ns[0].LastError)
		})
	}
}

// The daemon posts with push_ca_file, push_cert_file and push_key_file
// from its config: a task sent with a push config naming a receiver that
// requires a client certificate from a private CA is notified there.
func TestDaemonPushesOverTLSWithItsKeys(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "receivers CA")
	caFile := ca.WriteFile(t, dir, "ca.pem")
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "mailroom-daemon", Client: true}).WriteFiles(t, dir, "client")
	rcv := newTLSReceiver(t, &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, testpki.Options{}).TLS},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()})
	d := daemontest.Start(t, daemontest.Options{Config: func(c *config.Config) {
		c.PushCAFile, c.PushCertFile, c.PushKeyFile = caFile, certFile, keyFile
	}})
	c, err := client.New(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterAgent(t.Context(), "coder@local", mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-tls","parts":[{"kind":"text","text":"hi"}]},` +
		`"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + rcv.srv.URL + `/hook","token":"t"}}}}`
	resp, err := http.Post(d.URL()+"/agents/coder@local/", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		l, err := c.Deliveries(ctx, false)
		if err == nil && len(l.Notifications) == 0 && len(rcv.seen()) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the notification was never delivered: %+v, %v", l, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if seen := rcv.seen(); seen[0] != "mailroom-daemon" {
		t.Fatalf("the receiver saw client certificates %q, want mailroom-daemon's", seen)
	}
}
