package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/store/pgstore"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/internal/testpki"
)

// The store reaches a PostgreSQL that serves TLS with sslmode=verify-full
// and sslrootcert, as docs/postgresql.md says: it leads and appends. The
// server takes nothing but TLS, so this is TLS.
func TestVerifyFullToAServerWithTLS(t *testing.T) {
	srv := pgtest.StartTLS(t, testpki.NewCA(t, "pg test CA"))
	url := srv.URL("localhost", srv.CAFile)
	s := openLeading(t, url, "mrt_tls")
	defer s.Close()
	w := storetest.NewWorkload(3)
	storetest.AppendAll(t, s, w.Events(t, 10)...)
	st, _ := storetest.LoadState(t, s)
	storetest.SameState(t, st, w.State)
	if got := query(t, url, `SELECT count(*) FROM pg_stat_ssl WHERE ssl AND pid <> pg_backend_pid()`); got < 1 {
		t.Errorf("%d of the store's connections use TLS, want every one", got)
	}
	if got := query(t, url, `SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE NOT ssl AND backend_type = 'client backend'`); got != 0 {
		t.Errorf("%d connections without TLS, want none", got)
	}
}

// A server that cannot be verified is refused, and the error says why
// (another CA, a name the certificate does not hold) without the
// password.
func TestVerifyFullRefusesAServerItCannotVerify(t *testing.T) {
	srv := pgtest.StartTLS(t, testpki.NewCA(t, "pg test CA"))
	other := testpki.NewCA(t, "another CA").WriteFile(t, t.TempDir(), "other.crt")
	withPassword := func(u string) string {
		return strings.Replace(u, "postgres://postgres@", "postgres://postgres:s3cret-pw@", 1)
	}
	cases := []struct {
		name, url, want string
	}{
		{"another CA", withPassword(srv.URL("localhost", other)), "certificate signed by unknown authority"},
		{"a name the certificate does not hold", withPassword(srv.URL("127.0.0.1", srv.CAFile)), "cannot validate certificate for 127.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := pgstore.Open(ctx, pgstore.Options{URL: c.url, Schema: "mrt_tls"})
			if err == nil {
				s.Close()
				t.Fatal("opened a store on a server it cannot verify")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to say %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "postgres_url: ") || !strings.Contains(err.Error(), "sslrootcert") {
				t.Errorf("error %q, want it to name postgres_url and sslrootcert", err)
			}
			if strings.Contains(err.Error(), "s3cret-pw") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}
