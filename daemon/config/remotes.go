package config

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mailroom/mailroom/mailbox"
)

// Remote credentials are secrets, like tokens: they are set in the file
// only, and nothing here puts a value read from a remotes entry other than
// its agent and header name into an error.

// RemoteCredential is how the daemon calls one remote agent: what it
// sends with every request (a bearer token, or a header and its value, or
// a token it gets with OAuth 2.0 client credentials from the token URL
// the remote's card declares), and the TLS it speaks (the CA that signs
// the remote's certificate, a client certificate it presents). Agent is
// the registered agent id it is for.
type RemoteCredential struct {
	Agent  string `yaml:"agent"`
	Bearer string `yaml:"bearer"`
	Header string `yaml:"header"`
	Value  string `yaml:"value"`
	// ClientID and ClientSecret are the OAuth 2.0 client credentials,
	// used when the remote's card declares a clientCredentials flow.
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"`
	// CAFile replaces the system's CAs for this remote (as the CLI's
	// --ca-file does); CertFile and KeyFile are the client certificate it
	// is shown when it asks for one.
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// String hides the secrets, so printing a credential by mistake shows
// none: it names the kinds of credential and the TLS files only.
func (r RemoteCredential) String() string {
	var what []string
	switch {
	case r.Bearer != "":
		what = append(what, "bearer [redacted]")
	case r.Header != "":
		what = append(what, r.Header+": [redacted]")
	}
	if r.ClientID != "" {
		what = append(what, "client_id "+r.ClientID+" with client_secret [redacted]")
	}
	for _, f := range []struct{ key, path string }{{"ca_file", r.CAFile}, {"cert_file", r.CertFile}, {"key_file", r.KeyFile}} {
		if f.path != "" {
			what = append(what, f.key+" "+f.path)
		}
	}
	return r.Agent + ": " + strings.Join(what, ", ")
}

// GoString hides the secret from %#v too.
func (r RemoteCredential) GoString() string { return "config.RemoteCredential{" + r.String() + "}" }

// remoteFields are the keys of one remotes entry.
const remoteFields = "agent, and bearer or header with value, client_id with client_secret, ca_file, cert_file with key_file"

// fileOnly reports whether key holds secrets and is set in the config file
// only: a secret in argv or the environment ends up in process listings
// and shell histories.
func fileOnly(key string) bool {
	return key == "tokens" || key == "remotes" || key == "revoked_certificates" || key == "push_receivers"
}

// ValidateRemotes checks the remotes list: each entry names a valid agent
// id, once, and holds at most one kind of credential (and something: a
// credential or TLS settings); its TLS files are read and checked. Its
// errors name remotes[i] and the agent, never a secret.
func ValidateRemotes(rs []RemoteCredential) error {
	seen := map[string]int{}
	for i, r := range rs {
		name := fmt.Sprintf("remotes[%d]", i)
		if err := mailbox.ValidateAgentID(name+".agent", r.Agent); err != nil {
			return fmt.Errorf("%s.agent: expected the registered agent id the credential is for, such as coder@remote: %s", name, mailbox.ErrorMessage(err))
		}
		if j, dup := seen[r.Agent]; dup {
			return fmt.Errorf("%s.agent: %s already has a credential in remotes[%d]; expected one entry per agent", name, r.Agent, j)
		}
		seen[r.Agent] = i
		if err := checkRemoteCredential(name, r); err != nil {
			return err
		}
		if err := checkOAuthClient(name, r); err != nil {
			return err
		}
		if _, err := r.TLSConfig(i); err != nil {
			return err
		}
	}
	return nil
}

// checkRemoteCredential checks the static credential of entry name: at
// most one kind, well formed. An entry may have none when it holds TLS
// settings or OAuth client credentials.
func checkRemoteCredential(name string, r RemoteCredential) error {
	hasHeader := r.Header != "" || r.Value != ""
	other := r.ClientID != "" || r.ClientSecret != "" || r.CAFile != "" || r.CertFile != "" || r.KeyFile != ""
	switch {
	case r.Bearer != "" && hasHeader:
		return fmt.Errorf("%s (%s): both bearer and header are set; expected exactly one kind of credential", name, r.Agent)
	case r.Bearer == "" && !hasHeader && !other:
		return fmt.Errorf("%s (%s): no credential; expected bearer, or header with value", name, r.Agent)
	case r.Bearer == "" && !hasHeader:
		return nil
	case r.Bearer != "":
		if !printable(r.Bearer) {
			return fmt.Errorf("%s (%s).bearer: holds a space or a control character; expected the token alone", name, r.Agent)
		}
	default:
		if !headerName(r.Header) {
			return fmt.Errorf("%s (%s).header: got %q, expected an HTTP header name such as X-Api-Key", name, r.Agent, bounded(r.Header))
		}
		if strings.EqualFold(r.Header, "Authorization") {
			// Allowed, but a bearer token says what it is.
			if strings.HasPrefix(strings.ToLower(r.Value), "bearer ") {
				return fmt.Errorf("%s (%s): header Authorization with a Bearer value; write bearer: with the token alone", name, r.Agent)
			}
		}
		if r.Value == "" || !printableOrSpace(r.Value) {
			return fmt.Errorf("%s (%s).value: empty or holds a control character; expected the header's value", name, r.Agent)
		}
	}
	return nil
}

// checkOAuthClient checks the OAuth 2.0 client credentials of entry name:
// both or neither, and not beside another Authorization header, since the
// token it gets goes in that header.
func checkOAuthClient(name string, r RemoteCredential) error {
	switch {
	case r.ClientID == "" && r.ClientSecret == "":
		return nil
	case r.ClientID == "":
		return fmt.Errorf("%s (%s).client_id: empty; expected the OAuth 2.0 client id that goes with client_secret", name, r.Agent)
	case r.ClientSecret == "":
		return fmt.Errorf("%s (%s).client_secret: empty; expected the OAuth 2.0 client secret of client_id %q", name, r.Agent, bounded(r.ClientID))
	case !printable(r.ClientID):
		return fmt.Errorf("%s (%s).client_id: holds a space or a control character; expected the client id alone", name, r.Agent)
	case !printable(r.ClientSecret):
		return fmt.Errorf("%s (%s).client_secret: holds a space or a control character; expected the secret alone", name, r.Agent)
	case r.Bearer != "" || strings.EqualFold(r.Header, "Authorization"):
		return fmt.Errorf("%s (%s): client_id with a bearer token (or an Authorization header); expected one or the other: the token the client credentials get goes in the Authorization header", name, r.Agent)
	}
	return nil
}

func bounded(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// headerName reports whether s is an HTTP field name (RFC 9110 token).
func headerName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func printable(s string) bool {
	for _, c := range []byte(s) {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

func printableOrSpace(s string) bool {
	for _, c := range []byte(s) {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// parseRemotesNode reads the remotes list. Errors carry their own line.
func parseRemotesNode(c *Config, n *yaml.Node) (err error) {
	c.Remotes, err = parseList("remotes", remoteFields, n, parseRemote, ValidateRemotes)
	return err
}

func parseRemote(i int, n *yaml.Node) (RemoteCredential, error) {
	var r RemoteCredential
	name := fmt.Sprintf("remotes[%d]", i)
	if n.Kind != yaml.MappingNode {
		return r, fmt.Errorf("line %d: %s: expected a mapping with %s, got %s", n.Line, name, remoteFields, describe(n))
	}
	seen := map[string]bool{}
	for j := 0; j+1 < len(n.Content); j += 2 {
		kn, vn := n.Content[j], n.Content[j+1]
		field := name + "." + kn.Value
		if seen[kn.Value] {
			return r, fmt.Errorf("line %d: %s: set twice", kn.Line, field)
		}
		seen[kn.Value] = true
		var err error
		switch kn.Value {
		case "agent":
			r.Agent, err = scalar(field, vn)
		case "bearer":
			r.Bearer, err = scalar(field, vn)
		case "header":
			r.Header, err = scalar(field, vn)
		case "value":
			r.Value, err = scalar(field, vn)
		case "client_id":
			r.ClientID, err = scalar(field, vn)
		case "client_secret":
			r.ClientSecret, err = scalar(field, vn)
		case "ca_file":
			r.CAFile, err = scalar(field, vn)
		case "cert_file":
			r.CertFile, err = scalar(field, vn)
		case "key_file":
			r.KeyFile, err = scalar(field, vn)
		default:
			// The key is named, its value is not: a misspelt "bearer" holds a secret.
			return r, fmt.Errorf("line %d: %s: unknown key %q; expected %s", kn.Line, name, kn.Value, remoteFields)
		}
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

var errRemotesFileOnly = errors.New("remotes: set in the config file only")
