// Package backend says where the harness keeps an app database: a SQLite
// file, or a PostgreSQL schema of its own on a server it shares with
// others; how such a database is made, emptied back to new between
// sequences, and dropped; how many connections a run holds on the
// server; and which failures are the environment's, not the design's.
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

// PostgresConnections is the most connections to the PostgreSQL server
// a sim.Env holds at once: the schema's owner, the lane's emptier, the
// harness's own (for app-busy), one session for each worker's pool (the
// lane's unused handle, the default worker, A, B, C and P; see sim's
// pool), which the Env's sessions.Keeper keeps across the connections
// the commit faults end, and one to spare. It lives here, beside the
// server's URL, so that the command lines can size a run's connections
// against the server's limit without linking the harness.
// TestPostgresConnectionBudget measures what an exploration holds.
const PostgresConnections = 10

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
