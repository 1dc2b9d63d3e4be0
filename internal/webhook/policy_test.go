package webhook

import (
	"net/url"
	"strings"
	"testing"
)

func TestParseAllow(t *testing.T) {
	for _, bad := range []string{"", "loopback,", "https://hooks.example.com", "*.", "hooks example.com", "10.0.0.0/99"} {
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) = nil error, want a refusal", bad)
		}
	}
	a, err := ParseAllow("loopback, Hooks.Example.com, *.corp.example, 10.0.0.0/8, 192.168.1.7")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"127.0.0.1", true}, {"127.9.9.9", true}, {"::1", true}, {"localhost", true},
		{"hooks.example.com", true}, {"evil.example.com", false},
		{"a.corp.example", true}, {"a.b.corp.example", true}, {"corp.example", false}, {"xcorp.example", false},
		{"10.1.2.3", true}, {"11.0.0.1", false}, {"192.168.1.7", true}, {"192.168.1.8", false},
		{"169.254.169.254", false},
	} {
		if got := a.allows(tc.host); got != tc.want {
			t.Errorf("allows(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
	if any, _ := ParseAllow("*"); !any.allows("anything.example") {
		t.Error("* does not allow every host")
	}
}

// The daemon's own address is refused whatever the allowed hosts say;
// every refusal names the field and the host.
func TestPolicyCheck(t *testing.T) {
	all, _ := ParseAllow("*")
	p := NewPolicy(all)
	p.Self("127.0.0.1:7717")
	p.Self("https://mailroom.example.com")
	for _, tc := range []struct {
		url  string
		says string // "" when allowed
	}{
		{"http://127.0.0.1:7717/hook", "own address"},
		{"http://localhost:7717/hook", "own address"},
		{"http://[::1]:7717/hook", "own address"},
		{"https://mailroom.example.com/agents/x/", "own address"},
		{"https://mailroom.example.com:443/x", "own address"},
		// Every spelling a resolver takes for this machine.
		{"http://127.1:7717/hook", "own address"},
		{"http://0x7f000001:7717/hook", "own address"},
		{"http://2130706433:7717/hook", "own address"},
		{"http://0177.0.0.1:7717/hook", "own address"},
		{"http://[::ffff:127.0.0.1]:7717/hook", "own address"},
		{"http://0.0.0.0:7717/hook", "own address"},
		{"http://[::]:7717/hook", "own address"},
		{"http://LocalHost.:7717/hook", "own address"},
		{"http://127.0.0.1:7718/hook", ""},
		{"http://127.1:7718/hook", ""},
		{"http://0x7f000001.example:7717/hook", ""},
		{"http://mailroom.example.com/x", ""}, // port 80, the daemon is on 443
	} {
		u, _ := url.Parse(tc.url)
		err := p.Check("push.url", u)
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("Check(%s) = %v, want allowed", tc.url, err)
		case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says) || !strings.HasPrefix(err.Error(), "push.url: ")):
			t.Errorf("Check(%s) = %v, want a refusal naming push.url saying %q", tc.url, err, tc.says)
		}
	}
	lo, _ := ParseAllow(DefaultAllow)
	p = NewPolicy(lo)
	p.Self("0.0.0.0:7717")
	u, _ := url.Parse("http://127.0.0.1:7717/")
	if err := p.Check("url", u); err == nil {
		t.Error("a daemon listening on every address took a webhook to itself on loopback")
	}
	u, _ = url.Parse("https://hooks.example.com/a2a")
	if err := p.Check("url", u); err == nil || !strings.Contains(err.Error(), `host "hooks.example.com" is not among`) || !strings.Contains(err.Error(), "push_allow_hosts: loopback") {
		t.Errorf("a host not allowed: %v, want a refusal naming the host and push_allow_hosts", err)
	}
	// CheckSelf refuses only the daemon itself, whatever the allowed
	// hosts: a remote agent elsewhere is not bound by push_allow_hosts.
	u, _ = url.Parse("https://hooks.example.com/a2a")
	if err := p.CheckSelf("remote.url", u, "a remote agent", "why"); err != nil {
		t.Errorf("CheckSelf of another host: %v", err)
	}
	u, _ = url.Parse("http://127.1:7717/")
	if err := p.CheckSelf("remote.url", u, "a remote agent", "it would wait on itself"); err == nil || err.Error() != "remote.url: 127.1:7717 is this daemon's own address; expected the URL of a remote agent elsewhere (it would wait on itself)" {
		t.Errorf("CheckSelf of the daemon's own address: %v", err)
	}
}

func TestInetAton(t *testing.T) {
	for in, want := range map[string]string{"127.1": "127.0.0.1", "0x7f000001": "127.0.0.1", "2130706433": "127.0.0.1", "0177.0.0.1": "127.0.0.1",
		"10.1.2": "10.1.0.2", "0": "0.0.0.0", "1.2.3.4": "1.2.3.4"} {
		if got, ok := inetAton(in); !ok || got.String() != want {
			t.Errorf("inetAton(%q) = %v %v, want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "example", "1.2.3.4.5", "256.1", "1.16777216", "0x", "08", "1..2", "-1"} {
		if got, ok := inetAton(bad); ok {
			t.Errorf("inetAton(%q) = %v, want no address", bad, got)
		}
	}
}
