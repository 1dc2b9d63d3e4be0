// Package webhook holds which URLs the daemon may call back (push
// notifications): the hosts its configuration allows, and never the
// daemon itself. The same policy is asked when a webhook is configured and
// again before each delivery (a name may resolve elsewhere by then).
package webhook

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// DefaultAllow is the allowed hosts when none are configured: loopback
// only, for development. A deployment lists its receivers' hosts.
const DefaultAllow = "loopback"

// rule is one entry of the allowed hosts.
type rule struct {
	any      bool         // *
	loopback bool         // loopback: 127.0.0.0/8, ::1, localhost
	suffix   string       // *.example.com: any name under example.com
	name     string       // hooks.example.com, exactly
	prefix   netip.Prefix // 10.0.0.0/8, or one address
}

// Allow is a parsed list of allowed hosts.
type Allow struct {
	rules []rule
	text  string
}

// ParseAllow reads a comma-separated list of allowed hosts: `*` (any),
// `loopback`, a host name (`hooks.example.com`), a domain's names
// (`*.example.com`), an IP address or a CIDR prefix (`10.0.0.0/8`).
func ParseAllow(s string) (Allow, error) {
	a := Allow{text: s}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch {
		case f == "":
			return a, fmt.Errorf("an empty entry in %q; expected a comma-separated list of hosts such as loopback, hooks.example.com, *.example.com, 10.0.0.0/8 or *", s)
		case f == "*":
			a.rules = append(a.rules, rule{any: true})
		case f == "loopback":
			a.rules = append(a.rules, rule{loopback: true})
		case strings.HasPrefix(f, "*."):
			if !validName(f[2:]) {
				return a, fmt.Errorf("%q: expected *. and a domain name, such as *.example.com", f)
			}
			a.rules = append(a.rules, rule{suffix: f[1:]})
		default:
			if p, err := netip.ParsePrefix(f); err == nil {
				a.rules = append(a.rules, rule{prefix: p.Masked()})
			} else if ip, err := netip.ParseAddr(f); err == nil {
				a.rules = append(a.rules, rule{prefix: netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen())})
			} else if validName(f) {
				a.rules = append(a.rules, rule{name: f})
			} else {
				return a, fmt.Errorf("%q: expected a host name, *.domain, an IP address, a CIDR prefix, loopback or *", f)
			}
		}
	}
	return a, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// String is the list as configured.
func (a Allow) String() string { return a.text }

// allows reports whether host (a name or an IP address, lowercase, without
// brackets) is allowed.
func (a Allow) allows(host string) bool {
	ip, ipErr := netip.ParseAddr(host)
	for _, r := range a.rules {
		switch {
		case r.any:
			return true
		case r.loopback:
			if host == "localhost" || ipErr == nil && ip.Unmap().IsLoopback() {
				return true
			}
		case r.suffix != "":
			if ipErr != nil && strings.HasSuffix(host, r.suffix) {
				return true
			}
		case r.name != "":
			if host == r.name {
				return true
			}
		case r.prefix.IsValid():
			if ipErr == nil && r.prefix.Contains(ip.Unmap()) {
				return true
			}
		}
	}
	return false
}

// Policy decides which webhook URLs the daemon calls: an allowed host,
// and not the daemon's own address.
type Policy struct {
	allow Allow
	mu    sync.RWMutex
	self  []string // host:port the daemon answers on
}

// NewPolicy returns the policy of allow; the daemon's own addresses are
// added with Self once it listens.
func NewPolicy(allow Allow) *Policy { return &Policy{allow: allow} }

// Self records an address the daemon answers on: a listen address
// (host:port, where an unspecified host means every local address) or
// an advertised URL.
func (p *Policy) Self(addr string) {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		addr = hostPort(u)
	}
	p.mu.Lock()
	p.self = append(p.self, strings.ToLower(addr))
	p.mu.Unlock()
}

// hostPort is u's host and port, the scheme's port when it names none.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// Check says why the daemon will not call u, or nil. The message names
// field and says what to change.
func (p *Policy) Check(field string, u *url.URL) error {
	host := strings.ToLower(u.Hostname())
	if err := p.CheckSelf(field, u, "a receiver", "a daemon that notifies itself would loop"); err != nil {
		return err
	}
	if !p.allow.allows(host) {
		return fmt.Errorf("%s: host %q is not among the hosts webhooks may name (push_allow_hosts: %s); expected one of them, or an operator adds the host to push_allow_hosts", field, host, p.allow)
	}
	return nil
}

// CheckSelf says why u is the daemon's own address, whatever its
// spelling (127.1, 0x7f000001, [::ffff:127.0.0.1], localhost, 0.0.0.0, the
// advertised URL), or nil. It is the one self check: push webhooks (Check)
// and remote agents, which the allowed hosts do not bound, both ask it.
// what is what the URL should name instead, why what calling itself
// would do.
func (p *Policy) CheckSelf(field string, u *url.URL, what, why string) error {
	target := hostPort(u)
	if p.isSelf(target) {
		return fmt.Errorf("%s: %s is this daemon's own address; expected the URL of %s elsewhere (%s)", field, target, what, why)
	}
	return nil
}

// inetAton reads the IPv4 spellings a resolver (inet_aton) takes that
// netip does not: fewer than four parts (127.1, 2130706433) and parts in
// hex (0x7f) or octal (0177).
func inetAton(h string) (netip.Addr, bool) {
	parts := strings.Split(h, ".")
	if len(parts) > 4 || h == "" {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, s := range parts {
		base := 10
		switch {
		case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
			base, s = 16, s[2:]
		case len(s) > 1 && s[0] == '0':
			base, s = 8, s[1:]
		}
		v, err := strconv.ParseUint(s, base, 32)
		if err != nil || s == "" && base != 8 {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	// The last part fills the bytes the others leave.
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(32-8*(len(vals)-1)) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// hostAddr reads a URL's host as an address when it is one, in any
// spelling a resolver takes; "localhost" (and "localhost.") is a name.
func hostAddr(h string) (netip.Addr, error) {
	ip, err := netip.ParseAddr(h)
	if err == nil {
		return ip.Unmap(), nil
	}
	if a, ok := inetAton(h); ok {
		return a, nil
	}
	return ip, err
}

func (p *Policy) isSelf(target string) bool {
	th, tport, _ := net.SplitHostPort(target)
	th = strings.TrimSuffix(th, ".")
	tip, terr := hostAddr(th)
	if terr == nil && tip.IsUnspecified() {
		// Connecting to 0.0.0.0 (or ::) reaches this machine's loopback.
		tip = netip.MustParseAddr("127.0.0.1")
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, s := range p.self {
		if s == target {
			return true
		}
		sh, sport, err := net.SplitHostPort(s)
		if err != nil || sport != tport {
			continue
		}
		sip, serr := netip.ParseAddr(sh)
		switch {
		case serr == nil && sip.IsUnspecified():
			// Listening on every address: any local one reaches it.
			if th == "localhost" || terr == nil && (tip.Unmap().IsLoopback() || tip.IsUnspecified() || isLocal(tip)) {
				return true
			}
		case serr == nil && sip.Unmap().IsLoopback():
			if th == "localhost" || terr == nil && tip.Unmap().IsLoopback() {
				return true
			}
		case sh == "localhost":
			if terr == nil && tip.Unmap().IsLoopback() {
				return true
			}
		}
	}
	return false
}

// isLocal reports whether ip is one of this machine's addresses.
func isLocal(ip netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if x, ok := netip.AddrFromSlice(n.IP); ok && x.Unmap() == ip.Unmap() {
				return true
			}
		}
	}
	return false
}
