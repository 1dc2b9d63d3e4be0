package auth

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"time"

	"github.com/mailroom/mailroom/internal/tlsreload"
	"github.com/mailroom/mailroom/mailbox"
)

// A client certificate names its workload in one of three places, by the
// conventions of whoever issued it: a SPIFFE ID (a URI SAN, SPIFFE/SPIRE
// and the meshes built on it), a DNS SAN (service meshes, private CAs) or
// the subject's CN (older private CAs). An entry names exactly one, and
// matches it exactly: never a substring, never a wildcard, since a
// certificate for "billing.example" must not pass as "billing".

// certKind is where an entry looks in a certificate, in the order a
// certificate is matched: a SPIFFE ID is the most specific statement of a
// workload, a CN the least.
type certKind int

const (
	bySPIFFE certKind = iota
	byDNS
	byCN
)

func (k certKind) String() string { return [...]string{"spiffe_id", "dns", "cn"}[k] }

type certEntry struct {
	kind    certKind
	value   string
	id      Identity
	revoked bool
}

func isCertEntry(t Token) bool { return t.SPIFFEID != "" || t.DNS != "" || t.CN != "" }

// addCert checks a certificate entry: its name well formed, and no other
// entry with the same name (which of the two would it be?).
func (a *Authenticator) addCert(key string, t Token) error {
	e := certEntry{revoked: t.Revoked}
	switch {
	case t.SPIFFEID != "":
		e.kind, e.value = bySPIFFE, t.SPIFFEID
		if u, err := url.Parse(t.SPIFFEID); err != nil || u.Scheme != "spiffe" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("%s.spiffe_id: got %q, expected a SPIFFE ID such as spiffe://example.org/billing", key, t.SPIFFEID)
		}
	case t.DNS != "":
		e.kind, e.value = byDNS, strings.ToLower(t.DNS)
		if strings.ContainsAny(t.DNS, "*/: ") {
			return fmt.Errorf("%s.dns: got %q, expected a DNS name such as billing.prod.example (matched exactly: no wildcards)", key, t.DNS)
		}
	default:
		e.kind, e.value = byCN, t.CN
	}
	id, err := identityOf(key, t)
	if err != nil {
		return err
	}
	e.id = id
	for _, other := range a.certs {
		if other.kind == e.kind && other.value == e.value {
			return fmt.Errorf("%s.%s: got %q, already mapped by an entry before it", key, e.kind, t.SPIFFEID+t.DNS+t.CN)
		}
	}
	a.certs = append(a.certs, e)
	return nil
}

// RevokedCertificate names one certificate no longer accepted, by its
// serial number (hex, as `openssl x509 -serial` prints it) or the SHA-256
// fingerprint of its DER (as `openssl x509 -fingerprint -sha256` prints
// it); colons and case do not matter. Exactly one is set.
type RevokedCertificate struct {
	Serial string `yaml:"serial,omitempty"`
	SHA256 string `yaml:"sha256,omitempty"`
}

type revocations struct {
	serials      []*big.Int
	fingerprints map[[sha256.Size]byte]bool
}

// WithRevoked refuses the certificates listed. A serial is unique per
// issuing CA only; with several client CAs, prefer fingerprints.
func WithRevoked(list []RevokedCertificate) Option {
	return func(a *Authenticator) { a.revokedList = list }
}

// parseRevoked checks the revocation list; its errors name
// revoked_certificates[i].
func parseRevoked(list []RevokedCertificate) (revocations, error) {
	r := revocations{fingerprints: map[[sha256.Size]byte]bool{}}
	for i, c := range list {
		key := fmt.Sprintf("revoked_certificates[%d]", i)
		if (c.Serial == "") == (c.SHA256 == "") {
			return r, fmt.Errorf("%s: expected exactly one of serial and sha256", key)
		}
		digits := strings.ToLower(strings.ReplaceAll(c.Serial+c.SHA256, ":", ""))
		if len(digits)%2 == 1 {
			digits = "0" + digits // a serial written without its leading zero
		}
		b, err := hex.DecodeString(digits)
		if c.Serial != "" {
			if err != nil || len(b) == 0 || len(b) > 20 {
				return r, fmt.Errorf("%s.serial: got %q, expected a serial number in hex (at most 20 bytes), as 'openssl x509 -noout -serial' prints it", key, c.Serial)
			}
			r.serials = append(r.serials, new(big.Int).SetBytes(b))
			continue
		}
		if err != nil || len(b) != sha256.Size {
			return r, fmt.Errorf("%s.sha256: got %q, expected 64 hex digits (colons allowed), as 'openssl x509 -noout -fingerprint -sha256' prints them", key, c.SHA256)
		}
		r.fingerprints[[sha256.Size]byte(b)] = true
	}
	return r, nil
}

// ValidateRevoked checks a revocation list as the daemon would.
func ValidateRevoked(list []RevokedCertificate) error {
	_, err := parseRevoked(list)
	return err
}

func (r revocations) has(c *x509.Certificate) (string, bool) {
	if r.fingerprints[sha256.Sum256(c.Raw)] {
		return "its SHA-256 fingerprint", true
	}
	for _, s := range r.serials {
		if s.Cmp(c.SerialNumber) == 0 {
			return "its serial", true
		}
	}
	return "", false
}

// clientCert is the verified certificate of the connection, nil when the
// client sent none. A certificate that was sent and fails (another CA's,
// expired, not for client authentication, revoked) is an error whatever
// else the request carries: it is either an attack or a client about to
// break, and either is better seen now.
func (a *Authenticator) clientCert(ctx context.Context, cs *tls.ConnectionState) (*x509.Certificate, error) {
	if cs == nil || len(cs.PeerCertificates) == 0 || a.clientCAs == nil {
		return nil, nil
	}
	leaf := cs.PeerCertificates[0]
	if len(cs.VerifiedChains) == 0 {
		// tls_client_auth: request asks for a certificate without
		// verifying it at the handshake, so that a bad one is a 401 with
		// a reason rather than a handshake failure the client reads as a
		// network error. It is verified here, against the pool served
		// now, once per connection while that verdict holds (connmemo.go).
		pool, now := a.clientCAs(), a.now()
		err := verifyOnce(ctx, pool, now, func() (time.Time, error) { return verifyClient(cs, pool, now) })
		if err != nil {
			return nil, a.refuseCert(leaf, fmt.Sprintf("not valid (%v)", err))
		}
	}
	if how, ok := a.revoked.has(leaf); ok {
		return nil, a.refuseCert(leaf, "revoked by "+how+" in revoked_certificates")
	}
	return leaf, nil
}

// verifyClient verifies the connection's client certificate against
// pool at now, and says until when the chain it was verified through
// stays valid (the soonest expiry in it).
func verifyClient(cs *tls.ConnectionState, pool *x509.CertPool, now time.Time) (time.Time, error) {
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	chains, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter,
		CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return time.Time{}, err
	}
	until := chains[0][0].NotAfter
	for _, c := range chains[0][1:] {
		if c.NotAfter.Before(until) {
			until = c.NotAfter
		}
	}
	return until, nil
}

// certIdentity maps a verified certificate to its entry: the first kind
// (SPIFFE ID, then DNS SAN, then CN) with a match decides, and two
// entries of that kind matching is a refusal, not a choice.
func (a *Authenticator) certIdentity(c *x509.Certificate) (Identity, error) {
	for _, kind := range []certKind{bySPIFFE, byDNS, byCN} {
		var found []certEntry
		for _, e := range a.certs {
			if e.kind == kind && certNames(c, kind, e.value) {
				found = append(found, e)
			}
		}
		switch {
		case len(found) > 1:
			return Identity{}, a.refuseCert(c, fmt.Sprintf("its %s names match %d entries of tokens (%s and %s); expected one", kind, len(found), found[0].id.Principal, found[1].id.Principal))
		case len(found) == 1 && found[0].revoked:
			return Identity{}, a.refuseCert(c, fmt.Sprintf("the entry mapping %s %q to %s is revoked", kind, found[0].value, found[0].id.Principal))
		case len(found) == 1:
			return found[0].id, nil
		}
	}
	return Identity{}, a.refuseCert(c, "maps to no principal: no entry of tokens has its spiffe_id, one of its dns names or its cn")
}

// certNames reports whether c carries the name v of kind exactly. DNS
// names compare without case, as DNS does.
func certNames(c *x509.Certificate, kind certKind, v string) bool {
	switch kind {
	case bySPIFFE:
		for _, u := range c.URIs {
			if u.String() == v {
				return true
			}
		}
	case byDNS:
		for _, d := range c.DNSNames {
			if strings.ToLower(d) == v {
				return true
			}
		}
	case byCN:
		return c.Subject.CommonName == v
	}
	return false
}

// refuseCert logs which certificate was refused and why (the operator's
// only view of it), and is the 401 the client gets, saying why too: the
// certificate is the client's own, so naming it tells nothing new.
func (a *Authenticator) refuseCert(c *x509.Certificate, why string) error {
	a.log.Info("client certificate refused", append([]any{"reason", why, "serial_hex", fmt.Sprintf("%x", c.SerialNumber), "sha256", fingerprint(c)}, tlsreload.Describe(c)...)...)
	return mailbox.Errorf(mailbox.CodeUnauthorized, "client certificate (subject %q, serial %x): %s", c.Subject.String(), c.SerialNumber, why)
}

func fingerprint(c *x509.Certificate) string {
	h := sha256.Sum256(c.Raw)
	return hex.EncodeToString(h[:])
}
