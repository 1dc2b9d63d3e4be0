package config

import (
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/testpki"
)

// push_receivers from the file: each entry's TLS is its own (its CA
// alone, its client certificate), an entry with its host alone is the
// system's CAs and no certificate, and the list is set by the file only.
func TestPushReceiversFromTheFile(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "hooks CA")
	caFile := ca.WriteFile(t, dir, "ca.pem")
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "mailroom", Client: true}).WriteFiles(t, dir, "client")
	doc := "push_receivers:\n" +
		"  - host: Hooks.Example.com\n    ca_file: " + caFile + "\n    cert_file: " + certFile + "\n    key_file: " + keyFile + "\n" +
		"  - host: 10.1.2.3\n    ca_file: " + caFile + "\n" +
		"  - host: public.example.org\n"
	c, err := Parse(base(), []byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	want := []PushReceiver{{Host: "Hooks.Example.com", CAFile: caFile, CertFile: certFile, KeyFile: keyFile}, {Host: "10.1.2.3", CAFile: caFile}, {Host: "public.example.org"}}
	if len(c.PushReceivers) != len(want) {
		t.Fatalf("PushReceivers = %+v, want %+v", c.PushReceivers, want)
	}
	for i, r := range c.PushReceivers {
		if r != want[i] {
			t.Errorf("PushReceivers[%d] = %+v, want %+v", i, r, want[i])
		}
	}
	first, err := c.PushReceivers[0].TLSConfig(0)
	if err != nil || first.RootCAs == nil || first.GetClientCertificate == nil {
		t.Fatalf("TLSConfig of the first = %v, %v; want its CA and a client certificate", first, err)
	}
	if !first.RootCAs.Equal(ca.Pool()) {
		t.Error("the first entry's CAs are not its ca_file alone; want it to replace the system's")
	}
	if last, err := c.PushReceivers[2].TLSConfig(2); last != nil || err != nil {
		t.Errorf("TLSConfig of a host alone = %v, %v; want nil (the system's CAs, no certificate)", last, err)
	}
	if err := Set(&c, "push_receivers", "x"); err == nil || !strings.Contains(err.Error(), "config file only") {
		t.Errorf("Set(push_receivers) = %v, want it refused as file only", err)
	}
	if err := CheckEnv([]string{"MAILROOM_PUSH_RECEIVERS=x"}); err == nil || !strings.Contains(err.Error(), "config file only") {
		t.Errorf("CheckEnv(MAILROOM_PUSH_RECEIVERS) = %v, want it refused as file only", err)
	}
}

// A bad entry is refused when the file is read, naming its line, the
// entry's field and the path or value.
func TestPushReceiversRefused(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "hooks CA")
	caFile := ca.WriteFile(t, dir, "ca.pem")
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "mailroom", Client: true}).WriteFiles(t, dir, "client")
	entry := func(fields ...string) string { return "  - " + strings.Join(fields, "\n    ") + "\n" }
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"no host", "push_receivers:\n" + entry("ca_file: "+caFile), []string{"line 2", "push_receivers[0].host: empty"}},
		{"a port", "push_receivers:\n" + entry("host: hooks.example.com:8443"), []string{"push_receivers[0].host", `"hooks.example.com:8443"`, "every port"}},
		{"a URL", "push_receivers:\n" + entry("host: https://hooks.example.com"), []string{"push_receivers[0].host", "no scheme"}},
		{"a wildcard", "push_receivers:\n" + entry("host: '*.example.com'"), []string{"push_receivers[0].host", "wildcard"}},
		{"twice", "push_receivers:\n" + entry("host: hooks.example.com") + entry("host: HOOKS.example.com"), []string{"line 3", "push_receivers[1].host", "push_receivers[0]"}},
		{"missing CA", "push_receivers:\n" + entry("host: a.example.com", "ca_file: "+dir+"/none.pem"), []string{"push_receivers[0].ca_file", "none.pem", "cannot read it"}},
		{"cert alone", "push_receivers:\n" + entry("host: a.example.com") + entry("host: b.example.com", "cert_file: "+certFile), []string{"push_receivers[1].key_file: empty", "push_receivers[1].cert_file", "set both or neither"}},
		{"key alone", "push_receivers:\n" + entry("host: a.example.com", "key_file: "+keyFile), []string{"push_receivers[0].cert_file: empty"}},
		{"cert as key", "push_receivers:\n" + entry("host: a.example.com", "cert_file: "+certFile, "key_file: "+certFile), []string{"push_receivers[0].key_file", "expected a PEM file holding the private key"}},
		{"CA not a certificate", "push_receivers:\n" + entry("host: a.example.com", "ca_file: "+keyFile), []string{"push_receivers[0].ca_file", "not a certificate"}},
		{"unknown key", "push_receivers:\n" + entry("host: a.example.com", "ca: "+caFile), []string{"line 3", `push_receivers[0]: unknown key "ca"`, "ca_file"}},
		{"set twice", "push_receivers:\n" + entry("host: a.example.com", "host: b.example.com"), []string{"push_receivers[0].host: set twice"}},
		{"not a list", "push_receivers: hooks.example.com\n", []string{"line 1", "expected a list"}},
		{"not a mapping", "push_receivers:\n  - hooks.example.com\n", []string{"push_receivers[0]: expected a mapping"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(base(), []byte(tc.doc))
			if err == nil {
				t.Fatalf("Parse accepted %q", tc.doc)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to say %q", err, w)
				}
			}
		})
	}
	// Validate refuses the same, for a config not read from a file.
	c := base()
	c.PushReceivers = []PushReceiver{{Host: "a.example.com", CAFile: dir + "/none.pem"}}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "push_receivers[0].ca_file") {
		t.Errorf("Validate = %v, want push_receivers[0].ca_file refused", err)
	}
}
