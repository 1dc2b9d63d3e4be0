package a2a

import (
	"encoding/json"
	"net/http"

	"github.com/mailroom/mailroom/daemon/a2a/cardsig"
	"github.com/mailroom/mailroom/mailbox"
)

// cardBytes is the card as served: with a signer, signed over the
// canonical form (RFC 8785) of exactly the card served, signatures left
// out, so that a client canonicalizing what it read computes the same
// bytes.
func (e *Edge) cardBytes(card obj) ([]byte, error) {
	body, err := encodeCard(card)
	if err != nil || e.opts.Card.Signer == nil {
		return body, err
	}
	sig, err := e.opts.Card.Signer.Sign(body)
	if err != nil {
		return nil, err
	}
	card[cardsig.Field] = []cardsig.Signature{sig}
	return encodeCard(card)
}

// jwks serves the public keys that verify the cards' signatures, kept
// and revalidated as the card is; they change only with the daemon's
// configuration, so their Last-Modified is the edge's start.
func (e *Edge) jwks(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeRESTError(w, r, mailbox.Errorf(mailbox.CodeMethodNotAllowed, "%s %s: method not allowed; read the keys with GET", r.Method, r.URL.Path))
		return
	}
	if e.opts.Card.Signer == nil {
		writeRESTError(w, r, mailbox.Errorf(mailbox.CodeNotFound, "%s: this daemon does not sign its cards (card_signing_key_file is not set), so it serves no keys", r.URL.Path))
		return
	}
	body, err := json.Marshal(e.opts.Card.Signer.JWKS())
	if err != nil {
		writeRESTError(w, r, err)
		return
	}
	modified, dated := e.cardModified(mailbox.RegisteredAgent{})
	serveRevalidatable(w, r, append(body, '\n'), modified, dated)
}
