package config

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"gopkg.in/yaml.v3"
)

// push_receivers gives a push receiver a TLS of its own: the receivers
// of one daemon are often of several owners (a team's CI behind a
// private CA, a partner requiring a client certificate from its own CA,
// a public SaaS), and push_ca_file and push_cert_file serve them all, so
// they would show every receiver the certificate meant for one and trust
// each receiver's CA for all. An entry names one host exactly, as the
// webhook's URL says it and as push_allow_hosts matches it: on any port,
// without regard to case. A host listed is called with its entry alone
// (its ca_file replacing the system's CAs, as a remote's does: one
// receiver, one authority that may vouch for it); the push_* keys stay
// the TLS of every host not listed. The list is a list, so it has no
// flag or variable: the file alone sets it.

// PushReceiver is the TLS the daemon posts push notifications to one
// receiver host with.
type PushReceiver struct {
	// Host is the webhook URL's host (a name or an IP address, without
	// port or brackets).
	Host string `yaml:"host"`
	// CAFile replaces the system's CAs for this host; CertFile and
	// KeyFile, both or neither, are the client certificate shown to it.
	// An entry with none of them calls its host with the system's CAs
	// and no client certificate, whatever the push_* keys say.
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// pushReceiverFields are the keys of one push_receivers entry.
const pushReceiverFields = "host, ca_file, cert_file with key_file"

// PushReceiverName is how messages name entry i of push_receivers; the
// notifier names the entry's fields after it in a failed handshake's
// remedy.
func PushReceiverName(i int) string { return fmt.Sprintf("push_receivers[%d]", i) }

// TLSConfig is the TLS entry i's host is posted to with, or nil for the
// system's CAs and no client certificate.
func (r PushReceiver) TLSConfig(i int) (*tls.Config, error) {
	name := PushReceiverName(i)
	return clientFiles{ca: r.CAFile, cert: r.CertFile, key: r.KeyFile,
		caName: name + ".ca_file", certName: name + ".cert_file", keyName: name + ".key_file"}.load()
}

// ValidatePushReceivers checks the push_receivers list: each entry names
// a host, once, and its TLS files are read and checked. Errors name
// push_receivers[i] and the field.
func ValidatePushReceivers(rs []PushReceiver) error {
	seen := map[string]int{}
	for i, r := range rs {
		name := PushReceiverName(i)
		if err := checkReceiverHost(name+".host", r.Host); err != nil {
			return err
		}
		h := strings.ToLower(r.Host)
		if j, dup := seen[h]; dup {
			return fmt.Errorf("%s.host: %s already has an entry in %s; expected one entry per host", name, r.Host, PushReceiverName(j))
		}
		seen[h] = i
		if _, err := r.TLSConfig(i); err != nil {
			return err
		}
	}
	return nil
}

// checkReceiverHost refuses what a URL's host name could never be, and a
// port or a pattern, which an entry does not take: it serves one host on
// every port.
func checkReceiverHost(field, h string) error {
	const want = "a webhook URL's host name or IP address, exactly, such as hooks.example.com (no scheme, port or wildcard)"
	if h == "" {
		return fmt.Errorf("%s: empty; expected %s", field, want)
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return nil
	}
	if _, port, err := net.SplitHostPort(h); err == nil {
		return fmt.Errorf("%s: got %q, with port %s; expected %s: an entry serves its host on every port", field, h, port, want)
	}
	if !hostName(h) {
		return fmt.Errorf("%s: got %q, expected %s", field, bounded(h), want)
	}
	return nil
}

// hostName reports whether s is a DNS name as URLs hold them (letters,
// digits, '-' and '_' in dot-separated labels).
func hostName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// parsePushReceiversNode reads the push_receivers list, checking each
// entry as it is read. Errors carry their own line.
func parsePushReceiversNode(c *Config, n *yaml.Node) (err error) {
	c.PushReceivers, err = parseList("push_receivers", pushReceiverFields, n, parsePushReceiver, ValidatePushReceivers)
	return err
}

func parsePushReceiver(i int, n *yaml.Node) (PushReceiver, error) {
	var r PushReceiver
	name := PushReceiverName(i)
	if n.Kind != yaml.MappingNode {
		return r, fmt.Errorf("line %d: %s: expected a mapping with %s, got %s", n.Line, name, pushReceiverFields, describe(n))
	}
	seen := map[string]bool{}
	for j := 0; j+1 < len(n.Content); j += 2 {
		kn, vn := n.Content[j], n.Content[j+1]
		field := name + "." + kn.Value
		if seen[kn.Value] {
			return r, fmt.Errorf("line %d: %s: set twice", kn.Line, field)
		}
		seen[kn.Value] = true
		var p *string
		switch kn.Value {
		case "host":
			p = &r.Host
		case "ca_file":
			p = &r.CAFile
		case "cert_file":
			p = &r.CertFile
		case "key_file":
			p = &r.KeyFile
		default:
			return r, fmt.Errorf("line %d: %s: unknown key %q; expected %s", kn.Line, name, kn.Value, pushReceiverFields)
		}
		v, err := scalar(field, vn)
		if err != nil {
			return r, err
		}
		*p = v
	}
	return r, nil
}
