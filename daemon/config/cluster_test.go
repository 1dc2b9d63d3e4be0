package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/testpki"
)

// TestClusterCAFileIsCheckedAtStart: cluster_ca_file must read and hold
// certificates; a refusal names the key, the path and what was expected,
// and an empty key is the system's CAs.
func TestClusterCAFileIsCheckedAtStart(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "cluster CA")
	good := ca.WriteFile(t, dir, "ca.crt")
	_, key := ca.Issue(t, testpki.Options{}).WriteFiles(t, dir, "server")
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM at all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.crt")
	tests := []struct {
		name, file string
		want       []string // in the error; none: accepted
	}{
		{"empty", "", nil},
		{"a CA", good, nil},
		{"missing", missing, []string{`cluster_ca_file: got "` + missing + `"`, "cannot read it", "no such file", "expected a PEM file"}},
		{"not PEM", garbage, []string{`cluster_ca_file: got "` + garbage + `"`, "no PEM CERTIFICATE block"}},
		{"a key", key, []string{`cluster_ca_file: got "` + key + `"`, "PEM block 1 (PRIVATE KEY) is not a certificate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultFor(func(string) string { return "" })
			c.DataDir = dir
			c.ClusterCAFile = tt.file
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want it accepted", err)
				}
				if tls, _ := c.ClusterTLS(); (tls == nil) != (tt.file == "") {
					t.Errorf("ClusterTLS = %v for %q, want nil only without the key", tls, tt.file)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted cluster_ca_file %q", tt.file)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %q, want it to say %q", err, w)
				}
			}
		})
	}
}

// TestClusterSecretFileIsCheckedAtStart: cluster_secret_file must read
// and hold at least MinClusterSecret bytes (its line end not counted); a
// refusal names the key and the path and never shows what the file
// holds.
func TestClusterSecretFileIsCheckedAtStart(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const secret = "kZ3v0pQ8sL1mN5bX7cR2tY9wE4uI6oA0hJ8gF3dS1aQ="
	good := write("secret", secret+"\n")
	short := write("short", "too-short-a-secret\n")
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name, file string
		want       []string // in the error; none: accepted
	}{
		{"empty", "", nil},
		{"a secret", good, nil},
		{"missing", missing, []string{`cluster_secret_file: got "` + missing + `"`, "cannot read it", "no such file", "at least 32 bytes"}},
		{"short", short, []string{`cluster_secret_file: got "` + short + `"`, "it holds 18 bytes", "at least 32 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultFor(func(string) string { return "" })
			c.DataDir = dir
			c.ClusterSecretFile = tt.file
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want it accepted", err)
				}
				got, _ := c.ClusterSecret()
				if want := map[bool]string{true: "", false: secret}[tt.file == ""]; string(got) != want {
					t.Errorf("ClusterSecret = %q, want %q (the line end dropped)", got, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted cluster_secret_file %q", tt.file)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %q, want it to say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "too-short") {
				t.Errorf("Validate = %q shows the secret", err)
			}
		})
	}
}

// TestClusterClientCertificate: cluster_cert_file and cluster_key_file
// are both set or neither, and make the certificate a follower shows the
// leader, beside cluster_ca_file's CAs.
func TestClusterClientCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "cluster CA")
	caFile := ca.WriteFile(t, dir, "ca.crt")
	cert, key := ca.Issue(t, testpki.Options{CN: "mailroom instance", Client: true}).WriteFiles(t, dir, "instance")
	c := DefaultFor(func(string) string { return "" })
	c.DataDir = dir
	c.ClusterCAFile, c.ClusterCertFile, c.ClusterKeyFile = caFile, cert, key
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate = %v, want it accepted", err)
	}
	tls, err := c.ClusterTLS()
	if err != nil || tls == nil || (len(tls.Certificates) != 1 && tls.GetClientCertificate == nil) || tls.RootCAs == nil {
		t.Fatalf("ClusterTLS = %+v, %v; want the certificate and the CAs", tls, err)
	}
	c.ClusterKeyFile = ""
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "cluster_key_file: empty") || !strings.Contains(err.Error(), "both or neither") {
		t.Errorf("Validate with cluster_cert_file alone = %v, want cluster_key_file named", err)
	}
}
