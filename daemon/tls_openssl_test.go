package daemon_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
)

// TestSecurityPageOpenSSLRecipe runs the openssl recipe of
// docs/security.md as it is written and serves the daemon with what it
// makes: a client trusting the recipe's CA reaches the daemon by
// 127.0.0.1 and by localhost.
func TestSecurityPageOpenSSLRecipe(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not on PATH")
	}
	page, err := os.ReadFile(filepath.Join("..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(page), "## A test CA with openssl")
	_, block, ok2 := strings.Cut(after, "```sh\n")
	script, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/security.md has no sh block under ## A test CA with openssl")
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the recipe: %v\n%s", err, out)
	}
	d := daemontest.Start(t, daemontest.Options{Config: func(c *config.Config) {
		c.TLSCertFile, c.TLSKeyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	}})
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("the recipe's ca.crt holds no certificate")
	}
	_, port, _ := strings.Cut(d.Addr(), ":")
	for _, host := range []string{"127.0.0.1", "localhost"} {
		conn, err := tls.Dial("tcp", host+":"+port, &tls.Config{RootCAs: pool})
		if err != nil {
			t.Errorf("a client trusting the recipe's CA, to %s: %v", host, err)
			continue
		}
		conn.Close()
	}
}
