package notify_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

// receivers is Options.Receivers as the daemon makes it from
// push_receivers.
func receivers(t *testing.T, entries ...config.PushReceiver) []notify.Receiver {
	t.Helper()
	var out []notify.Receiver
	for i, e := range entries {
		tc, err := e.TLSConfig(i)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, notify.Receiver{Host: e.Host, TLS: tc, Entry: config.PushReceiverName(i)})
	}
	return out
}

// twoReceivers are two receivers of two owners on one machine, told apart
// by the host their URLs name: one at localhost with a certificate of
// "localhost CA" that asks for a client certificate and records it, one
// at 127.0.0.1 with a certificate of "127.0.0.1 CA" that requires one of
// its own CA.
type twoReceivers struct {
	local, ip             *tlsReceiver
	localURL, ipURL       string
	localCA, ipCA         string // the CAs' files
	ipCert, ipKey         string // a client certificate of the 127.0.0.1 CA
	globalCert, globalKey string // one of the localhost CA, for push_cert_file
}

func newTwoReceivers(t *testing.T) *twoReceivers {
	dir := t.TempDir()
	localCA, ipCA := testpki.NewCA(t, "localhost CA"), testpki.NewCA(t, "127.0.0.1 CA")
	r := &twoReceivers{localCA: localCA.WriteFile(t, dir, "localhost-ca.pem"), ipCA: ipCA.WriteFile(t, dir, "ip-ca.pem")}
	r.ipCert, r.ipKey = ipCA.Issue(t, testpki.Options{CN: "mailroom-for-127.0.0.1", Client: true}).WriteFiles(t, dir, "ip-client")
	r.globalCert, r.globalKey = localCA.Issue(t, testpki.Options{CN: "mailroom-push-keys", Client: true}).WriteFiles(t, dir, "global-client")
	r.local = newTLSReceiver(t, &tls.Config{Certificates: []tls.Certificate{localCA.Issue(t, testpki.Options{DNS: []string{"localhost"}}).TLS},
		ClientAuth: tls.RequestClientCert})
	r.ip = newTLSReceiver(t, &tls.Config{Certificates: []tls.Certificate{ipCA.Issue(t, testpki.Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}).TLS},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ipCA.Pool()})
	r.localURL = strings.Replace(r.local.srv.URL, "127.0.0.1", "localhost", 1) + "/hook"
	r.ipURL = r.ip.srv.URL + "/hook"
	return r
}

// Each receiver listed in push_receivers is posted with its entry alone:
// its CA (in place of the system's and push_ca_file's), its client
// certificate or none (never push_cert_file's); a receiver not listed
// with the push_* keys. A receiver its entry does not fit, or whose host
// has none, is dead-lettered with the last error saying what failed and
// which key (the entry's field, or the push_* key) to set.
func TestEachPushReceiverWithItsOwnTLS(t *testing.T) {
	r := newTwoReceivers(t)
	localEntry := config.PushReceiver{Host: "LocalHost", CAFile: r.localCA}
	ipEntry := config.PushReceiver{Host: "127.0.0.1", CAFile: r.ipCA, CertFile: r.ipCert, KeyFile: r.ipKey}
	// The push_* keys trust the localhost CA and show its client
	// certificate: a receiver listed must see neither.
	pushKeys := pushTLS(t, r.localCA, r.globalCert, r.globalKey)
	for _, c := range []struct {
		name    string
		entries []config.PushReceiver
		to      *tlsReceiver
		url     string
		// want is what the dead letter's last error says; nil: delivered,
		// with peer the client certificate the receiver saw.
		want []string
		peer string
	}{
		{"localhost with its entry", []config.PushReceiver{localEntry, ipEntry}, r.local, r.localURL, nil, ""},
		{"127.0.0.1 with its entry", []config.PushReceiver{localEntry, ipEntry}, r.ip, r.ipURL, nil, "mailroom-for-127.0.0.1"},
		{"localhost not listed: the push_* keys", []config.PushReceiver{ipEntry}, r.local, r.localURL, nil, "mailroom-push-keys"},
		{"127.0.0.1 not listed", []config.PushReceiver{localEntry}, r.ip, r.ipURL,
			[]string{"unknown authority", `"127.0.0.1 CA"`, "add its CA to push_ca_file)"}, ""},
		{"127.0.0.1's entry without a client certificate", []config.PushReceiver{localEntry, {Host: "127.0.0.1", CAFile: r.ipCA}}, r.ip, r.ipURL,
			[]string{"certificate required", "set push_receivers[1].cert_file and push_receivers[1].key_file"}, ""},
		{"localhost's entry with another CA", []config.PushReceiver{{Host: "localhost", CAFile: r.ipCA}}, r.local, r.localURL,
			[]string{"unknown authority", `"localhost CA"`, "add its CA to push_receivers[0].ca_file"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(c.to.seen())
			o := notify.Options{TLS: pushKeys, Receivers: receivers(t, c.entries...), MaxAttempts: 2, RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond}
			b := start(t, t.TempDir(), o)
			b.send(c.url, "tok")
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
			if n := len(c.to.seen()); n != before {
				t.Errorf("the receiver got %d POSTs through a handshake it refused", n-before)
			}
			t.Logf("last error: %s", ns[0].LastError)
		})
	}
}

// The daemon reads push_receivers from its config file and posts each
// receiver with its entry: a task for each of the two receivers is
// notified at both, the one requiring a certificate of its own CA seeing
// the entry's.
func TestDaemonPushesToEachReceiverWithItsEntry(t *testing.T) {
	r := newTwoReceivers(t)
	file := "push_receivers:\n" +
		"  - host: localhost\n    ca_file: " + r.localCA + "\n" +
		"  - host: 127.0.0.1\n    ca_file: " + r.ipCA + "\n    cert_file: " + r.ipCert + "\n    key_file: " + r.ipKey + "\n"
	d := daemontest.Start(t, daemontest.Options{Config: func(c *config.Config) {
		next, err := config.Parse(*c, []byte(file))
		if err != nil {
			t.Fatal(err)
		}
		*c = next
	}})
	c, err := client.New(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterAgent(t.Context(), "coder@local", mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	for i, url := range []string{r.localURL, r.ipURL} {
		body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-` + string(rune('a'+i)) + `","parts":[{"kind":"text","text":"hi"}]},` +
			`"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + url + `","token":"t"}}}}`
		resp, err := http.Post(d.URL()+"/agents/coder@local/", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for {
		l, err := c.Deliveries(ctx, false)
		if err == nil && len(l.Notifications) == 0 && len(r.local.seen()) > 0 && len(r.ip.seen()) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the notifications were never delivered: %+v, %v", l, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if got := [2]string{r.local.seen()[0], r.ip.seen()[0]}; got != [2]string{"", "mailroom-for-127.0.0.1"} {
		t.Fatalf("the receivers saw client certificates %q, want none at localhost and its entry's at 127.0.0.1", got)
	}
}

// A receiver's entry keeps its client certificate as current as its
// files: rotated in place (as SPIRE, cert-manager and certbot do), the
// next handshake with that receiver shows the new one.
func TestPushReceiverCertificateRotated(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "rotating CA")
	caFile := ca.WriteFile(t, dir, "ca.pem")
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "before", Client: true}).WriteFiles(t, dir, "client")
	rcv := newTLSReceiver(t, &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, testpki.Options{}).TLS},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()})
	b := start(t, t.TempDir(), notify.Options{Receivers: receivers(t, config.PushReceiver{Host: "127.0.0.1", CAFile: caFile, CertFile: certFile, KeyFile: keyFile})})
	b.send(rcv.srv.URL+"/hook", "tok")
	b.outbox("empty", empty)
	ca.Issue(t, testpki.Options{CN: "after the rotation", Client: true}).WriteFiles(t, dir, "client")
	// A kept-alive connection would show no certificate again: the
	// receiver ends it, as a restart or an idle timeout would.
	rcv.srv.CloseClientConnections()
	b.send(rcv.srv.URL+"/hook", "tok")
	b.outbox("empty", empty)
	if seen := rcv.seen(); len(seen) != 2 || seen[0] != "before" || seen[1] != "after the rotation" {
		t.Fatalf("the receiver saw client certificates %q, want before, then after the rotation", seen)
	}
}
