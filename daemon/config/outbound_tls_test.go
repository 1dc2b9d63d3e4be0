package config

import (
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/testpki"
)

// push_ca_file is added to the system's CAs (it serves every receiver);
// push_cert_file and push_key_file go together; each wrong file is named
// by its key when the config is checked.
func TestPushTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "push CA")
	caFile := ca.WriteFile(t, dir, "ca.pem")
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "mailroom", Client: true}).WriteFiles(t, dir, "client")

	c := base()
	if cfg, err := c.PushTLSConfig(); cfg != nil || err != nil {
		t.Fatalf("PushTLSConfig without keys = %v, %v; want nil, nil", cfg, err)
	}
	for k, v := range map[string]string{"push_ca_file": caFile, "push_cert_file": certFile, "push_key_file": keyFile} {
		if err := Set(&c, k, v); err != nil {
			t.Fatalf("Set(%s): %v", k, err)
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	cfg, err := c.PushTLSConfig()
	if err != nil || cfg.RootCAs == nil || cfg.GetClientCertificate == nil {
		t.Fatalf("PushTLSConfig = %v, %v; want roots and a client certificate", cfg, err)
	}
	if err := ApplyEnv(&c, func(k string) string {
		return map[string]string{"MAILROOM_PUSH_CA_FILE": caFile}[k]
	}); err != nil {
		t.Fatalf("MAILROOM_PUSH_CA_FILE refused: %v", err)
	}

	for _, tc := range []struct {
		name     string
		set      map[string]string
		want     []string
		validate bool
	}{
		{"missing CA", map[string]string{"push_ca_file": dir + "/none.pem"}, []string{"push_ca_file", "none.pem", "cannot read it"}, true},
		{"cert alone", map[string]string{"push_cert_file": certFile}, []string{"push_key_file: empty", "set both or neither"}, true},
		{"key alone", map[string]string{"push_key_file": keyFile}, []string{"push_cert_file: empty"}, true},
		{"cert as key", map[string]string{"push_cert_file": certFile, "push_key_file": certFile}, []string{"push_key_file", "expected a PEM file holding the private key"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			for k, v := range tc.set {
				if err := Set(&c, k, v); err != nil {
					t.Fatalf("Set(%s): %v", k, err)
				}
			}
			err := c.Validate()
			if err == nil {
				t.Fatalf("Validate accepted %v", tc.set)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to say %q", err, w)
				}
			}
		})
	}
}
