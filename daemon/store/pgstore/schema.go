package pgstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// SchemaVersion is the newest schema this binary knows. A database whose
// schema_version is higher was migrated by a newer binary: Open refuses it
// rather than write what that binary may read differently.
const SchemaVersion = 1

// DefaultSchema is the PostgreSQL schema the tables live in by default.
const DefaultSchema = "mailroom"

// schemaName is what postgres_schema accepts: a plain lowercase
// identifier, so it is never quoted differently in two places.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// ValidateSchema says what is wrong with a postgres_schema value.
func ValidateSchema(s string) error {
	if !schemaName.MatchString(s) {
		return fmt.Errorf("postgres_schema: got %q, expected a lowercase identifier (a-z, 0-9, _; not starting with a digit; at most 63 bytes)", s)
	}
	return nil
}

// lockClass is the first key of the leader's session advisory lock,
// 'MRLD'; the second is lockKey(schema), so instances of different
// schemas in one database never contend.
const lockClass = 0x4D524C44

// migrateClass keys the transaction lock migrations take, so two instances
// starting at once do not both create the tables.
const migrateClass = 0x4D524D47 // 'MRMG'

// lockKey is the FNV-32a hash of the schema as a PostgreSQL int4.
func lockKey(schema string) int32 {
	h := fnv.New32a()
	h.Write([]byte(schema))
	return int32(h.Sum32())
}

// migrations[i] takes a schema at version i to version i+1. {{s}} is the
// quoted schema name.
var migrations = []string{
	// 1: the leader row, the events, the snapshots.
	`CREATE TABLE {{s}}.leader (
	   id         smallint    PRIMARY KEY DEFAULT 1 CHECK (id = 1),
	   epoch      bigint      NOT NULL,
	   holder     text        NOT NULL,
	   advertise  text        NOT NULL,
	   elected_at timestamptz NOT NULL
	 );
	 INSERT INTO {{s}}.leader VALUES (1, 0, '', '', now());
	 CREATE TABLE {{s}}.events (
	   seq   bigint PRIMARY KEY CHECK (seq > 0),
	   epoch bigint NOT NULL,
	   at_ms bigint NOT NULL,
	   type  text   NOT NULL,
	   body  bytea  NOT NULL
	 );
	 CREATE TABLE {{s}}.snapshots (
	   seq   bigint PRIMARY KEY CHECK (seq >= 0),
	   epoch bigint NOT NULL,
	   at_ms bigint NOT NULL,
	   body  bytea  NOT NULL
	 );`,
}

// migrate brings the schema to SchemaVersion under a transaction lock, or
// refuses a schema newer than this binary. It returns the version found
// before.
func migrate(ctx context.Context, conn *pgx.Conn, schema string) (from int, err error) {
	q := pgx.Identifier{schema}.Sanitize()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(migrateClass), lockKey(schema)); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+q); err != nil {
		return 0, fmt.Errorf("creating schema %s: %w", schema, err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+q+`.schema_version (version int NOT NULL)`); err != nil {
		return 0, err
	}
	var version int
	err = tx.QueryRow(ctx, `SELECT version FROM `+q+`.schema_version`).Scan(&version)
	switch {
	case err == pgx.ErrNoRows:
		if _, err := tx.Exec(ctx, `INSERT INTO `+q+`.schema_version VALUES (0)`); err != nil {
			return 0, err
		}
	case err != nil:
		return 0, err
	}
	if version > SchemaVersion {
		return version, fmt.Errorf("schema %s is at version %d, newer than this binary's %d: it was migrated by a newer mailroom; run that version (or newer)", schema, version, SchemaVersion)
	}
	for v := version; v < SchemaVersion; v++ {
		if _, err := tx.Exec(ctx, strings.ReplaceAll(migrations[v], "{{s}}", q)); err != nil {
			return version, fmt.Errorf("migrating schema %s from version %d to %d: %w", schema, v, v+1, err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE `+q+`.schema_version SET version = $1`, SchemaVersion); err != nil {
		return version, err
	}
	return version, tx.Commit(ctx)
}
