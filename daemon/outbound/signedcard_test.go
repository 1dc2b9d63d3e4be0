package outbound_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/a2a/cardsig"
	"github.com/mailroom/mailroom/daemon/outbound"
	"github.com/mailroom/mailroom/mailbox"
)

// signedRemote is a v0.3 JSON-RPC remote whose card is signed, or not,
// as the test says, with its keys at /jwks.json; it answers every send
// with a completed task.
type signedRemote struct {
	srv           *httptest.Server
	signer, other *cardsig.Signer
	seen          seen

	mu   sync.Mutex
	card string // how the card is served: signed, unsigned, tampered, other-key
}

func newSigner(t *testing.T) *cardsig.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cardsig.NewSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func startSignedRemote(t *testing.T) *signedRemote {
	t.Helper()
	sr := &signedRemote{signer: newSigner(t), other: newSigner(t), card: "signed"}
	sr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/jwks.json":
			writeJSON(w, sr.signer.JWKS())
		case r.Method == http.MethodGet:
			sr.serveCard(t, w)
		default:
			var req struct {
				ID     json.RawMessage `json:"id"`
				Params struct {
					Message struct {
						MessageID string `json:"messageId"`
					} `json:"message"`
				} `json:"params"`
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			sr.seen.take(req.Params.Message.MessageID)
			writeJSON(w, completedTask(req.ID, req.Params.Message.MessageID))
		}
	}))
	t.Cleanup(sr.srv.Close)
	return sr
}

func (sr *signedRemote) serve(how string) {
	sr.mu.Lock()
	sr.card = how
	sr.mu.Unlock()
}

func (sr *signedRemote) serveCard(t *testing.T, w http.ResponseWriter) {
	sr.mu.Lock()
	how := sr.card
	sr.mu.Unlock()
	card := map[string]any{"name": "Signed", "description": "serves a signed card", "version": "1", "url": sr.srv.URL + "/",
		"protocolVersion": "0.3.0", "preferredTransport": "JSONRPC", "capabilities": map[string]any{"streaming": false},
		"defaultInputModes": []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"}, "skills": []any{}}
	body, _ := json.Marshal(card)
	signer := sr.signer
	if how == "other-key" {
		signer = sr.other
	}
	sig, err := signer.Sign(body)
	if err != nil {
		t.Error(err)
	}
	if how != "unsigned" {
		card["signatures"] = []cardsig.Signature{sig}
	}
	if how == "tampered" {
		card["description"] = "changed after it was signed"
	}
	writeJSON(w, card)
}

// A remote registered with require_signed_card gets deliveries while its
// card verifies against the keys it was registered with. Serving an
// unsigned card, a card changed after signing, or one signed by another
// key opens its circuit at once, with the reason in the agents listing,
// and nothing is delivered to it; a card that verifies again resumes
// deliveries.
func TestRequireSignedCard(t *testing.T) {
	sr := startSignedRemote(t)
	w := startWith(t, func(o *outbound.Options) { o.ResolveInterval = 50 * time.Millisecond })
	sr.serve("unsigned")
	if _, err := w.c.RegisterAgent(w.ctx, "signed@remote", mailbox.AgentCard{Description: "registered by the test",
		Remote: &mailbox.RemoteSpec{URL: sr.srv.URL + "/", RequireSignedCard: true, CardJWKSURL: sr.srv.URL + "/jwks.json"}}); err != nil {
		t.Fatal(err)
	}
	if got := w.info("signed@remote").Card.Remote; got == nil || !got.RequireSignedCard || got.CardJWKSURL != sr.srv.URL+"/jwks.json" {
		t.Fatalf("the registration reads back as %+v; want require_signed_card and its keys' URL", got)
	}
	first := w.send("boss@local", "signed@remote", "first", false)
	st := w.waitRemote("signed@remote", "circuit open on an unsigned card", func(st *mailbox.RemoteStatus) bool {
		return st.State == mailbox.RemoteCircuitOpen && strings.Contains(st.LastError, "it has no signatures")
	})
	if !strings.Contains(st.LastError, "must be signed (require_signed_card)") || !strings.Contains(st.LastError, "nothing is delivered") {
		t.Errorf("last_error %q; want it to say the card must be signed and nothing is delivered", st.LastError)
	}
	if n := sr.seen.times(first); n != 0 || w.entry(first) == nil || w.entry(first).State != mailbox.TaskQueued {
		t.Errorf("with an unsigned card the remote took the task %d times; want 0, the task queued", n)
	}

	sr.serve("signed")
	if r := w.result("boss@local", first); text(r) != "done" {
		t.Errorf("the first task's result once the card verifies: %+v", r)
	}
	w.waitRemote("signed@remote", "healthy", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteHealthy })

	for _, bad := range []struct{ how, says string }{
		{"tampered", "does not verify"},
		{"other-key", "not signed by a trusted key"},
	} {
		sr.serve(bad.how)
		w.waitRemote("signed@remote", bad.how+": circuit open", func(st *mailbox.RemoteStatus) bool {
			return st.State == mailbox.RemoteCircuitOpen && strings.Contains(st.LastError, bad.says)
		})
		task := w.send("boss@local", "signed@remote", bad.how, false)
		// Still open, read again at least once since the task was sent:
		// the task waits in the queue.
		w.waitRemote("signed@remote", bad.how+": still open", func(st *mailbox.RemoteStatus) bool {
			return st.State == mailbox.RemoteCircuitOpen && st.NextProbeMs > time.Now().UnixMilli()
		})
		if n := sr.seen.times(task); n != 0 {
			t.Errorf("%s: the remote took a task %d times while its card did not verify; want 0", bad.how, n)
		}
		sr.serve("signed")
		if r := w.result("boss@local", task); text(r) != "done" {
			t.Errorf("%s: the task's result once the card verifies again: %+v", bad.how, r)
		}
	}
}
