package config

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/testpki"
)

func TestRemotesFromTheFile(t *testing.T) {
	doc := `remotes:
  - agent: coder@remote
    bearer: s3cret-bearer
  - agent: writer@remote
    header: X-Api-Key
    value: s3cret-key
`
	c, err := Parse(base(), []byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []RemoteCredential{{Agent: "coder@remote", Bearer: "s3cret-bearer"}, {Agent: "writer@remote", Header: "X-Api-Key", Value: "s3cret-key"}}
	if fmt.Sprint(len(c.Remotes)) != "2" || c.Remotes[0] != want[0] || c.Remotes[1] != want[1] {
		t.Fatalf("Remotes = %d entries, want %d", len(c.Remotes), len(want))
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	for _, shown := range []string{fmt.Sprint(c.Remotes), fmt.Sprintf("%+v", c.Remotes), fmt.Sprintf("%#v", c.Remotes)} {
		if strings.Contains(shown, "s3cret") {
			t.Errorf("printing the remotes shows a secret: %s", shown)
		}
	}
}

func TestRemotesRefused(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"no agent", "remotes:\n  - bearer: s3cret-x\n", []string{"line 2", "remotes[0].agent"}},
		{"bad agent", "remotes:\n  - agent: 'a b'\n    bearer: s3cret-x\n", []string{"remotes[0].agent"}},
		{"both kinds", "remotes:\n  - agent: a@r\n    bearer: s3cret-x\n    header: X-K\n    value: s3cret-y\n", []string{"remotes[0] (a@r)", "exactly one kind"}},
		{"none", "remotes:\n  - agent: a@r\n", []string{"no credential"}},
		{"header without value", "remotes:\n  - agent: a@r\n    header: X-K\n", []string{"value"}},
		{"bad header", "remotes:\n  - agent: a@r\n    header: 'X K'\n    value: s3cret-y\n", []string{"header name"}},
		{"twice", "remotes:\n  - agent: a@r\n    bearer: s3cret-x\n  - agent: a@r\n    bearer: s3cret-z\n", []string{"line 4", "remotes[1].agent", "remotes[0]"}},
		{"unknown key", "remotes:\n  - agent: a@r\n    baerer: s3cret-x\n", []string{`unknown key "baerer"`}},
		{"not a list", "remotes: s3cret-x\n", []string{"expected a list"}},
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
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}

func TestRemotesAreFileOnly(t *testing.T) {
	c := base()
	if err := Set(&c, "remotes", "x"); err == nil || !strings.Contains(err.Error(), "config file only") {
		t.Errorf("Set(remotes) = %v, want a refusal saying config file only", err)
	}
	if err := CheckEnv([]string{"MAILROOM_REMOTES=x"}); err == nil || !strings.Contains(err.Error(), "config file only") {
		t.Errorf("CheckEnv(MAILROOM_REMOTES) = %v, want a refusal saying config file only", err)
	}
}

// A remotes entry may say how the remote is reached over TLS (its CA, a
// client certificate) and hold OAuth 2.0 client credentials; the files
// are read when the config is checked, and nothing printed or refused
// shows the client secret.
func TestRemotesTLSAndClientCredentials(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "remotes CA")
	caFile := ca.WriteFile(t, dir, "ca.pem")
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "mailroom", Client: true}).WriteFiles(t, dir, "client")
	doc := fmt.Sprintf(`remotes:
  - agent: coder@remote
    ca_file: %s
    cert_file: %s
    key_file: %s
    client_id: mailroom-daemon
    client_secret: s3cret-client
  - agent: writer@remote
    ca_file: %s
`, caFile, certFile, keyFile, caFile)
	c, err := Parse(base(), []byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	cfg, err := c.Remotes[0].TLSConfig(0)
	if err != nil || cfg == nil || cfg.RootCAs == nil || cfg.GetClientCertificate == nil {
		t.Fatalf("TLSConfig = %v, %v; want the CA as roots and one client certificate", cfg, err)
	}
	if cfg, err := c.Remotes[1].TLSConfig(1); err != nil || cfg == nil || cfg.GetClientCertificate != nil {
		t.Fatalf("writer's TLSConfig = %v, %v; want the CA alone", cfg, err)
	}
	for _, shown := range []string{fmt.Sprint(c.Remotes), fmt.Sprintf("%+v", c.Remotes), fmt.Sprintf("%#v", c.Remotes)} {
		if strings.Contains(shown, "s3cret") {
			t.Errorf("printing the remotes shows a secret: %s", shown)
		}
		if !strings.Contains(shown, "mailroom-daemon") || !strings.Contains(shown, caFile) {
			t.Errorf("printing the remotes hides what is no secret (the client id, the CA file): %s", shown)
		}
	}
}

func TestRemotesTLSAndClientCredentialsRefused(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "remotes CA")
	caFile := ca.WriteFile(t, dir, "ca.pem")
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "mailroom", Client: true}).WriteFiles(t, dir, "client")
	otherKey := func() string {
		_, k := ca.Issue(t, testpki.Options{CN: "other", Client: true}).WriteFiles(t, dir, "other")
		return k
	}()
	expiredCert, expiredKey := ca.Issue(t, testpki.Options{CN: "old", Client: true,
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)}).WriteFiles(t, dir, "expired")
	entry := "remotes:\n  - agent: a@r\n"
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"no CA file", entry + "    ca_file: " + dir + "/missing.pem\n", []string{"remotes[0] (a@r).ca_file", "missing.pem", "cannot read it", "expected a PEM file"}},
		{"a key as CA", entry + "    ca_file: " + keyFile + "\n", []string{"remotes[0] (a@r).ca_file", "PRIVATE KEY, not a certificate"}},
		{"cert without key", entry + "    cert_file: " + certFile + "\n", []string{"remotes[0] (a@r).key_file: empty", "set both or neither"}},
		{"key without cert", entry + "    key_file: " + keyFile + "\n", []string{"remotes[0] (a@r).cert_file: empty"}},
		{"another's key", entry + "    cert_file: " + certFile + "\n    key_file: " + otherKey + "\n", []string{"remotes[0] (a@r).key_file", "private key does not match"}},
		{"expired cert", entry + "    cert_file: " + expiredCert + "\n    key_file: " + expiredKey + "\n", []string{"remotes[0] (a@r).cert_file", "not now; expected a current one"}},
		{"id without secret", entry + "    client_id: x\n", []string{"remotes[0] (a@r).client_secret: empty"}},
		{"secret without id", entry + "    client_secret: s3cret-z\n", []string{"remotes[0] (a@r).client_id: empty"}},
		{"bearer and client", entry + "    bearer: s3cret-x\n    client_id: x\n    client_secret: s3cret-z\n", []string{"client_id with a bearer token"}},
		{"ca beside an unknown key", entry + "    ca_file: " + caFile + "\n    ca_flie: x\n", []string{`unknown key "ca_flie"`}},
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
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}
