// Package backend says where the harness keeps an app database: a SQLite
// file, or a PostgreSQL schema of its own on a server it shares with
// others; how such a database is made, emptied back to new between
// sequences, and dropped.
package backend

import (
	"fmt"
	"os"

	"github.com/outboxlab/handoff/system"
)

// Backend is where an Env keeps the app database. The receiver's CRM is
// a SQLite file on either. Nothing a step prints names the backend, so a
// scenario file expects the same output on both.
type Backend string

const (
	// SQLite keeps the app database in the file app.db of the Env's Dir.
	SQLite Backend = "sqlite"
	// Postgres keeps it in a PostgreSQL schema of the Env's own, made on
	// the server that Config.PostgresURL names and dropped when the Env
	// closes.
	Postgres Backend = "postgres"
)

// All are the backends, the default first.
var All = []Backend{SQLite, Postgres}

// Parse returns the backend called s.
func Parse(s string) (Backend, error) {
	for _, b := range All {
		if string(b) == s {
			return b, nil
		}
	}
	return "", fmt.Errorf("handoff: unknown backend %q, want %s or %s", s, SQLite, Postgres)
}

// PostgresURLEnv names the variable that gives the PostgreSQL server's
// URL, for the tests and for the CLI's --postgres-url.
const PostgresURLEnv = "HANDOFF_POSTGRES_URL"

// LocalPostgres is the server a machine set up for handoff's tests runs,
// on loopback and without TLS, which protects nothing there and costs a
// handshake at every new connection.
const LocalPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Server is the URL of the PostgreSQL server to run on when none
// is given: PostgresURLEnv's value, or LocalPostgres when it is unset or
// "off", which turns off the test suite's PostgreSQL part and is no URL.
func Server() string {
	if u := os.Getenv(PostgresURLEnv); u != "" && u != "off" {
		return u
	}
	return LocalPostgres
}

// Check returns an error when b is not a backend, or is Postgres
// without a server URL.
func Check(b Backend, postgresURL string) error {
	if _, err := Parse(string(b)); err != nil {
		return err
	}
	if b == Postgres && !system.IsPostgres(postgresURL) {
		return fmt.Errorf("handoff: the postgres backend needs a server URL postgres://…, got %q", system.Redact(postgresURL))
	}
	return nil
}
