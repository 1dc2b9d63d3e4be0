package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/testpki"
)

// A connection's client certificate is verified once while that holds:
// again when the pool served changes or the chain expires, every time when
// it was refused or when the request has no connection of its own.
func TestVerifyOnceKeepsAnAcceptanceWhileItHolds(t *testing.T) {
	p1, p2 := x509.NewCertPool(), x509.NewCertPool()
	now := time.Now()
	checks := 0
	accept := func() (time.Time, error) { checks++; return now.Add(time.Hour), nil }
	refuse := func() (time.Time, error) { checks++; return time.Time{}, errors.New("expired") }
	ctx := ConnContext(context.Background(), nil)
	for i, c := range []struct {
		pool  *x509.CertPool
		at    time.Time
		check func() (time.Time, error)
		want  int // checks so far
	}{
		{p1, now, accept, 1},
		{p1, now.Add(time.Minute), accept, 1},   // kept
		{p2, now.Add(time.Minute), accept, 2},   // the pool was reloaded
		{p2, now.Add(2 * time.Hour), refuse, 3}, // the chain expired
		{p2, now.Add(2 * time.Hour), refuse, 4}, // a refusal is not kept
	} {
		verifyOnce(ctx, c.pool, c.at, c.check)
		if checks != c.want {
			t.Fatalf("step %d: %d checks, want %d", i, checks, c.want)
		}
	}
	checks = 0
	for range 2 {
		if err := verifyOnce(context.Background(), p1, now, accept); err != nil {
			t.Fatal(err)
		}
	}
	if checks != 2 {
		t.Errorf("without a connection's memo: %d checks for 2 requests, want 2", checks)
	}
}

// Through AuthenticateRequest on one connection: a certificate accepted
// once is refused when the client CAs reloaded no longer vouch for it, and
// when it has expired.
func TestAConnectionsCertificateFollowsTheServedPool(t *testing.T) {
	ca, other := testpki.NewCA(t, "clients"), testpki.NewCA(t, "other")
	leaf := ca.Issue(t, testpki.Options{Client: true, URIs: []string{"spiffe://example.org/worker"}})
	pool := ca.Pool()
	a, err := New([]Token{{Principal: "worker@local", SPIFFEID: "spiffe://example.org/worker", Caps: []string{"a2a.recv"}}},
		WithClientCAs(func() *x509.CertPool { return pool }))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a.now = func() time.Time { return now }
	r := httptest.NewRequest("GET", "/a2a/queue", nil).WithContext(ConnContext(context.Background(), nil))
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf.Cert}}
	for range 2 {
		if id, err := a.AuthenticateRequest(r); err != nil || id.Principal != "worker@local" {
			t.Fatalf("the mapped certificate: %v, %v", id.Principal, err)
		}
	}
	pool = other.Pool()
	if _, err := a.AuthenticateRequest(r); err == nil {
		t.Error("accepted after the client CAs were reloaded without its CA")
	}
	pool = ca.Pool()
	if _, err := a.AuthenticateRequest(r); err != nil {
		t.Fatalf("its CA served again: %v", err)
	}
	now = leaf.Cert.NotAfter.Add(time.Minute)
	if _, err := a.AuthenticateRequest(r); err == nil {
		t.Error("accepted on the same connection after it expired")
	}
}
