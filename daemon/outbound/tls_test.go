package outbound_test

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/internal/remotetest"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

// failingWith waits until agent's remote fails (failing or circuit
// open) with a last error saying each of want, and returns that error.
func (w *world) failingWith(agent string, want ...string) string {
	w.t.Helper()
	st := w.waitRemote(agent, "failing, saying "+strings.Join(want, ", "), func(st *mailbox.RemoteStatus) bool {
		if st.State != mailbox.RemoteFailing && st.State != mailbox.RemoteCircuitOpen {
			return false
		}
		for _, s := range want {
			if !strings.Contains(st.LastError, s) {
				return false
			}
		}
		return true
	})
	return st.LastError
}

// A remote served over TLS by a private CA: delivered to with the CA in
// its remotes entry's ca_file; an agent at the same remote without it
// fails visibly, its state in the agents listing saying the authority is
// unknown and which key to set, and nothing of its tasks is delivered.
func TestRemoteOverTLSWithItsCA(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "remote agents CA")
	caFile := ca.WriteFile(t, dir, "ca.pem")
	g := remotetest.StartGoRemoteTLS(t, "TLS Coder", false, &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, testpki.Options{}).TLS}})
	if !strings.HasPrefix(g.Srv.URL, "https://") {
		t.Fatalf("the remote serves %s, want https", g.Srv.URL)
	}
	w := start(t, config.RemoteCredential{Agent: "coder@remote", CAFile: caFile})
	w.register("coder@remote", g.Srv.URL, 2)
	id := w.send("planner@local", "coder@remote", "hello over tls", false)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || !strings.Contains(text(res), "hello over tls") {
		t.Fatalf("result %+v, want ok echoing the task", res)
	}

	w.register("stranger@remote", g.Srv.URL, 2)
	last := w.failingWith("stranger@remote", "unknown authority", `"remote agents CA"`, "ca_file")
	t.Logf("without ca_file: %s", last)
	stuck := w.send("planner@local", "stranger@remote", "never delivered", false)
	if n := g.Executor().Sent(stuck); n != 0 {
		t.Fatalf("the remote got the task of an agent whose TLS fails %d times", n)
	}
	if e := w.entry(stuck); e == nil || e.State != mailbox.TaskQueued {
		t.Fatalf("the task to the failing remote is %+v, want it queued", e)
	}
}

// A remote that requires a client certificate: an agent whose remotes
// entry has cert_file and key_file is delivered to, and the remote sees
// the daemon's certificate, read again once its files are replaced; one
// without fails visibly, saying the remote asks for a certificate and
// which keys give one.
func TestRemoteRequiringAClientCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "remote agents CA")
	caFile := ca.WriteFile(t, dir, "ca.pem")
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "mailroom-daemon", Client: true}).WriteFiles(t, dir, "client")
	g := remotetest.StartGoRemoteTLS(t, "mTLS Coder", true, &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, testpki.Options{}).TLS},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()})
	w := start(t,
		config.RemoteCredential{Agent: "coder@remote", CAFile: caFile, CertFile: certFile, KeyFile: keyFile},
		config.RemoteCredential{Agent: "anonymous@remote", CAFile: caFile})
	w.register("coder@remote", g.Srv.URL, 2)
	id := w.send("planner@local", "coder@remote", "stream please", false)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK {
		t.Fatalf("result %+v, want ok", res)
	}
	if peers := g.Peers(); len(peers) == 0 || slices.IndexFunc(peers, func(p string) bool { return p != "mailroom-daemon" }) >= 0 {
		t.Fatalf("the remote saw client certificates %q, want mailroom-daemon's on every request", peers)
	}

	// SPIRE, cert-manager and certbot replace the files in place: the
	// next handshake (a new connection) presents the new certificate.
	ca.Issue(t, testpki.Options{CN: "mailroom-daemon-rotated", Client: true}).WriteFiles(t, dir, "client")
	g.Srv.CloseClientConnections()
	id = w.send("planner@local", "coder@remote", "after the rotation", true)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK {
		t.Fatalf("result after the rotation %+v, want ok", res)
	}
	if peers := g.Peers(); peers[len(peers)-1] != "mailroom-daemon-rotated" {
		t.Fatalf("after the rotation the remote saw %q, want the rotated certificate last", peers)
	}

	w.register("anonymous@remote", g.Srv.URL, 2)
	last := w.failingWith("anonymous@remote", "certificate", "cert_file")
	t.Logf("without cert_file: %s", last)
}
