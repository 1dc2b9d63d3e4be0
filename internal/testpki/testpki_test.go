package testpki

import (
	"crypto/x509"
	"testing"
	"time"
)

// What a CA issues verifies against it for the use it was made for, and
// an expired leaf or one from another CA does not.
func TestIssuedLeavesVerifyAsMade(t *testing.T) {
	ca := NewCA(t, "test CA")
	server := ca.Issue(t, Options{})
	if _, err := server.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "localhost"}); err != nil {
		t.Errorf("the server leaf for localhost: %v", err)
	}
	if _, err := server.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "example.com"}); err == nil {
		t.Error("the server leaf verifies for example.com")
	}
	client := ca.Issue(t, Options{Client: true, URIs: []string{"spiffe://example.org/worker"}})
	if _, err := client.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the client leaf: %v", err)
	}
	if len(client.Cert.URIs) != 1 || client.Cert.URIs[0].String() != "spiffe://example.org/worker" {
		t.Errorf("the client leaf's URIs are %v", client.Cert.URIs)
	}
	expired := ca.Issue(t, Options{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	if _, err := expired.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "localhost"}); err == nil {
		t.Error("the expired leaf verifies")
	}
	other := NewCA(t, "another CA").Issue(t, Options{})
	if _, err := other.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "localhost"}); err == nil {
		t.Error("a leaf of another CA verifies")
	}
}
