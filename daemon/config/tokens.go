package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mailroom/mailroom/daemon/auth"
)

// Tokens are secrets. Nothing in this file puts a token's value, or any
// value read from a tokens entry other than its principal, into an error:
// config errors end up in terminals, logs and bug reports.

// tokenFields are the keys of one tokens entry, as auth.Token's YAML tags.
const tokenFields = "principal, token, sha256, caps, revoked, spiffe_id, dns, cn, oidc_subject"

// parseTokensNode reads the tokens list. Errors carry their own line (the
// entry's, not the key's) because a list spans many lines.
func parseTokensNode(c *Config, n *yaml.Node) (err error) {
	// Validating the list so far pins an error to this entry's line;
	// auth.New names the entry itself.
	c.Tokens, err = parseList("tokens", tokenFields, n, parseToken, func(ts []auth.Token) error {
		_, err := auth.New(ts)
		return err
	})
	return err
}

func parseToken(i int, n *yaml.Node) (auth.Token, error) {
	var t auth.Token
	name := fmt.Sprintf("tokens[%d]", i)
	if n.Kind != yaml.MappingNode {
		return t, fmt.Errorf("line %d: %s: expected a mapping with %s, got %s", n.Line, name, tokenFields, describe(n))
	}
	seen := map[string]bool{}
	for j := 0; j+1 < len(n.Content); j += 2 {
		kn, vn := n.Content[j], n.Content[j+1]
		field := name + "." + kn.Value
		if seen[kn.Value] {
			return t, fmt.Errorf("line %d: %s: set twice", kn.Line, field)
		}
		seen[kn.Value] = true
		var err error
		switch kn.Value {
		case "principal":
			t.Principal, err = scalar(field, vn)
		case "token":
			t.Token, err = scalar(field, vn)
		case "sha256":
			t.SHA256, err = scalar(field, vn)
		case "spiffe_id":
			t.SPIFFEID, err = scalar(field, vn)
		case "dns":
			t.DNS, err = scalar(field, vn)
		case "cn":
			t.CN, err = scalar(field, vn)
		case "oidc_subject":
			t.OIDCSubject, err = scalar(field, vn)
		case "caps":
			t.Caps, err = scalars(field, vn)
		case "revoked":
			var s string
			if s, err = scalar(field, vn); err == nil {
				if t.Revoked, err = strconv.ParseBool(s); err != nil {
					err = fmt.Errorf("line %d: %s: expected true or false", vn.Line, field)
				}
			}
		default:
			// The key is named, its value is not: a misspelt "token" holds a secret.
			return t, fmt.Errorf("line %d: %s: unknown key %q; expected %s", kn.Line, name, kn.Value, tokenFields)
		}
		if err != nil {
			return t, err
		}
	}
	return t, nil
}

func scalar(field string, n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", fmt.Errorf("line %d: %s: expected a single value, got %s", n.Line, field, describe(n))
	}
	return n.Value, nil
}

func scalars(field string, n *yaml.Node) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: %s: expected a list such as [a2a.send.*, a2a.drain], got %s", n.Line, field, describe(n))
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		s, err := scalar(fmt.Sprintf("%s[%d]", field, i), item)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// checkExposure refuses to serve beyond loopback when nobody is
// authenticated (without tokens anyone who can reach the port may send,
// lease and repair), and when the tokens would cross the network in
// clear: beyond loopback, a bearer token read off the wire is the
// caller's every capability.
func checkExposure(c Config) error {
	if isLoopback(c.Addr) {
		return nil
	}
	if len(c.Tokens) == 0 && c.OIDCIssuer == "" {
		return fmt.Errorf("addr: got %q: refusing to listen beyond loopback without tokens; configure tokens (see 'mailroom token new') or listen on 127.0.0.1", c.Addr)
	}
	if !c.HTTPS() {
		return fmt.Errorf("addr: got %q: refusing to listen beyond loopback without TLS, where the tokens would cross the network in clear; set tls_cert_file and tls_key_file, or tls_terminated_by_proxy: true if a proxy in front of the daemon ends TLS, or listen on 127.0.0.1", c.Addr)
	}
	return nil
}

// isLoopback reports whether addr only listens on loopback. An empty host
// (":7717") is every interface, and a host name other than localhost could
// resolve to anything, so both are refused.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
