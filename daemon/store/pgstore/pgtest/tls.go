package pgtest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/testpki"
)

// TLSServer is a PostgreSQL of the test's own that accepts only TLS
// connections, serving a certificate the test's CA issued for localhost
// alone: reached as localhost it verifies, reached as 127.0.0.1 its name
// does not match. The shared server of MAILROOM_TEST_PG cannot be told to
// serve a test's certificate, hence a server per test.
type TLSServer struct {
	// CA issued the server's certificate; CAFile is its PEM, what
	// sslrootcert names.
	CA     *testpki.CA
	CAFile string
	Port   int

	dir   string // owned by the server's user: data/, the log, the socket
	bin   string // where initdb and pg_ctl are
	owner *user.User
}

// StartTLS initdbs and starts a PostgreSQL with ssl = on on localhost and
// a free port, its certificate issued by ca, and stops it and removes its
// files when tb ends. Without PostgreSQL's server binaries it skips,
// saying what is missing, or fails on CI (CI=true), where they must be.
func StartTLS(tb testing.TB, ca *testpki.CA) *TLSServer {
	tb.Helper()
	s := &TLSServer{CA: ca, bin: serverBin()}
	if s.bin == "" {
		missing(tb, "PostgreSQL's server binaries (initdb, pg_ctl) are not installed: looked at pg_config --bindir, /usr/lib/postgresql/*/bin and $PATH")
	}
	// initdb refuses to run as root: as root, the server runs as the
	// postgres user, in a directory of its own outside t.TempDir (whose
	// parent only root may enter).
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			missing(tb, "running as root, the server must run as the postgres user, which does not exist: "+err.Error())
		}
		s.owner = u
	}
	dir, err := os.MkdirTemp("", "mailroom-pgtls-")
	if err != nil {
		tb.Fatal(err)
	}
	s.dir = dir
	tb.Cleanup(func() { os.RemoveAll(dir) })
	s.chown(tb, dir)
	s.Port = freePort(tb)
	s.CAFile = filepath.Join(dir, "root.crt")
	if err := os.WriteFile(s.CAFile, ca.PEM, 0o644); err != nil {
		tb.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	s.run(tb, "initdb", "-D", data, "--auth=trust", "-U", "postgres", "--no-sync", "--no-instructions", "-E", "UTF8", "--locale=C")
	s.configure(tb, data)
	s.run(tb, "pg_ctl", "-D", data, "-l", filepath.Join(dir, "server.log"), "-w", "-t", "60", "start")
	tb.Cleanup(func() { s.run(tb, "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop") })
	return s
}

// URL is the server's database reached at host (localhost, or 127.0.0.1
// for a name the certificate does not hold), verify-full against the CA
// in rootCert.
func (s *TLSServer) URL(host, rootCert string) string {
	q := url.Values{"sslmode": {"verify-full"}, "sslrootcert": {rootCert}}
	return fmt.Sprintf("postgres://postgres@%s/postgres?%s", net.JoinHostPort(host, strconv.Itoa(s.Port)), q.Encode())
}

// configure gives the data dir its certificate, TLS and the address, and
// takes every connection but TLS ones away: a test that connects proves
// it went over TLS.
func (s *TLSServer) configure(tb testing.TB, data string) {
	tb.Helper()
	leaf := s.CA.Issue(tb, testpki.Options{CN: "localhost", DNS: []string{"localhost"}})
	files := map[string][]byte{
		"server.crt": leaf.CertPEM,
		"server.key": leaf.KeyPEM,
		"pg_hba.conf": []byte("local all all trust\n" +
			"hostssl all all 127.0.0.1/32 trust\n" +
			"hostssl all all ::1/128 trust\n"),
	}
	for name, body := range files {
		p := filepath.Join(data, name)
		if err := os.WriteFile(p, body, 0o600); err != nil {
			tb.Fatal(err)
		}
		s.chown(tb, p)
	}
	conf := fmt.Sprintf("\nlisten_addresses = 'localhost'\nport = %d\nunix_socket_directories = '%s'\n"+
		"ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\nfsync = off\n", s.Port, s.dir)
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(conf); err != nil {
		tb.Fatal(err)
	}
}

// run runs one of the server's binaries, as the postgres user when the
// test runs as root.
func (s *TLSServer) run(tb testing.TB, name string, args ...string) {
	tb.Helper()
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	if s.owner != nil {
		cmd = exec.Command("runuser", append([]string{"-u", s.owner.Username, "--", cmd.Path}, args...)...)
	}
	cmd.Dir = s.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		tb.Fatalf("%s %s: %v\n%s\nserver log:\n%s", name, strings.Join(args, " "), err, out, log)
	}
}

// chown gives p to the server's user, when the test runs as root.
func (s *TLSServer) chown(tb testing.TB, p string) {
	tb.Helper()
	if s.owner == nil {
		return
	}
	uid, _ := strconv.Atoi(s.owner.Uid)
	gid, _ := strconv.Atoi(s.owner.Gid)
	if err := os.Chown(p, uid, gid); err != nil {
		tb.Fatal(err)
	}
}

// serverBin is the directory holding initdb and pg_ctl, or "".
func serverBin() string {
	var dirs []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(found) - 1; i >= 0; i-- { // the newest first, as the glob sorts
		dirs = append(dirs, found[i])
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "pg_ctl")) {
			return d
		}
	}
	return ""
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// freePort is a port nothing listens on now, for the server to take.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// missing skips tb off CI and fails it on CI, where PostgreSQL's tests
// must never be skipped.
func missing(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("PostgreSQL TLS tests: %s", why)
	}
	tb.Skipf("PostgreSQL TLS tests: %s (on CI this fails)", why)
}
