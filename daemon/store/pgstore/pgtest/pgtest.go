// Package pgtest gives tests a real PostgreSQL: the URL in
// MAILROOM_TEST_PG, and a fresh schema per test, dropped when it ends; or
// a server of the test's own that serves TLS with the test's CA
// (StartTLS, tls.go).
package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the variable that holds the test database's URL.
const EnvVar = "MAILROOM_TEST_PG"

// URL returns the test database's URL, or skips the test saying how to
// run it. .ci/run sets the variable, so CI never skips.
func URL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(EnvVar)
	if u == "" {
		tb.Skipf("PostgreSQL tests need %s, e.g. %s=postgres://postgres@127.0.0.1:5432/test (.ci/run sets it)", EnvVar, EnvVar)
	}
	return u
}

// Schema returns a schema name for key (a test's dir, say), the same for
// the same key, and drops the schema when tb ends.
func Schema(tb testing.TB, url, key string) string {
	tb.Helper()
	sum := sha256.Sum256([]byte(key))
	name := "mrt_" + hex.EncodeToString(sum[:8])
	tb.Cleanup(func() { Drop(tb, url, name) })
	return name
}

// Drop removes schema and everything in it.
func Drop(tb testing.TB, url, schema string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Errorf("dropping schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		tb.Errorf("dropping schema %s: %v", schema, err)
	}
}

// Exec runs sql on a connection of its own, failing tb on error.
func Exec(tb testing.TB, url, sql string, args ...any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}
