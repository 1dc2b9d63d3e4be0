package config

import (
	"crypto/tls"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/internal/tlsreload"
)

// Client certificates (tls_client_ca_file, tls_client_auth) and the
// certificates revoked (revoked_certificates). Which certificate is which
// principal is said by tokens entries with spiffe_id, dns or cn: see
// daemon/auth/cert.go and docs/access-control.md.

// The tls_client_auth modes. "" is none: the zero Config asks for no
// certificate.
const (
	ClientAuthNone    = "none"
	ClientAuthRequest = "request"
	ClientAuthRequire = "require"
)

func validClientAuth(s string) bool {
	return s == "" || s == ClientAuthNone || s == ClientAuthRequest || s == ClientAuthRequire
}

// ClientAuth is tls_client_auth's mode, "" when no certificate is asked
// for.
func (c Config) ClientAuth() string {
	if c.TLSClientAuth == ClientAuthNone {
		return ""
	}
	return c.TLSClientAuth
}

// withClientCA adds the client CA file and how the handshake asks for a
// certificate to the files the daemon serves TLS from. request asks
// without verifying at the handshake (auth verifies it, so a bad one is a
// 401 with its reason); require verifies at the handshake, so nothing
// unverified reaches HTTP.
func (c Config) withClientCA(f tlsreload.Files) tlsreload.Files {
	switch c.ClientAuth() {
	case ClientAuthRequest:
		f.ClientAuth = tls.RequestClientCert
	case ClientAuthRequire:
		f.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return f
	}
	f.ClientCA, f.ClientCAName = c.TLSClientCAFile, "tls_client_ca_file"
	return f
}

// checkClientAuth refuses client certificate settings that could not
// work: asked for without TLS, or without the CAs to check them against,
// or a CA file nobody asks certificates of (set, it says the operator
// believes certificates are checked). The CA file is read and parsed.
func checkClientAuth(c Config) error {
	mode := c.ClientAuth()
	switch {
	case mode == "" && c.TLSClientCAFile != "":
		return fmt.Errorf("tls_client_ca_file: got %q but tls_client_auth is %q; set tls_client_auth to request or require, or remove tls_client_ca_file", c.TLSClientCAFile, c.TLSClientAuth)
	case mode == "":
		return nil
	case !c.TLS():
		return fmt.Errorf("tls_client_auth: got %q without tls_cert_file; client certificates need the daemon to serve TLS itself (a proxy that ends TLS keeps them): set tls_cert_file and tls_key_file", c.TLSClientAuth)
	case c.TLSClientCAFile == "":
		return fmt.Errorf("tls_client_auth: got %q without tls_client_ca_file; expected tls_client_ca_file naming a PEM file of the CAs client certificates are issued by", c.TLSClientAuth)
	}
	_, err := tlsreload.LoadClientCAs(c.withClientCA(tlsreload.Files{}))
	return err
}

// revokedFields are the keys of one revoked_certificates entry.
const revokedFields = "serial, sha256"

// parseRevokedNode reads the revoked_certificates list; errors carry the
// entry's own line, as tokens' do.
func parseRevokedNode(c *Config, n *yaml.Node) (err error) {
	c.RevokedCertificates, err = parseList("revoked_certificates", revokedFields, n, parseRevoked, auth.ValidateRevoked)
	return err
}

func parseRevoked(i int, item *yaml.Node) (auth.RevokedCertificate, error) {
	var r auth.RevokedCertificate
	name := fmt.Sprintf("revoked_certificates[%d]", i)
	if item.Kind != yaml.MappingNode {
		return r, fmt.Errorf("line %d: %s: expected a mapping with %s, got %s", item.Line, name, revokedFields, describe(item))
	}
	for j := 0; j+1 < len(item.Content); j += 2 {
		kn, vn := item.Content[j], item.Content[j+1]
		field := name + "." + kn.Value
		var p *string
		switch kn.Value {
		case "serial":
			p = &r.Serial
		case "sha256":
			p = &r.SHA256
		default:
			return r, fmt.Errorf("line %d: %s: unknown key %q; expected %s", kn.Line, name, kn.Value, revokedFields)
		}
		if *p != "" {
			return r, fmt.Errorf("line %d: %s: set twice", kn.Line, field)
		}
		v, err := scalar(field, vn)
		if err != nil {
			return r, err
		}
		*p = v
	}
	return r, nil
}
