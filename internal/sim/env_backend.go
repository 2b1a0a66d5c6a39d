package sim

import (
	"context"
	"os"
	"path/filepath"

	"github.com/outboxlab/handoff/internal/backend"
)

// PostgresConnections is the most connections to the PostgreSQL server
// an Env holds at once: the schema's owner, the lane's emptier, the
// harness's own (for app-busy and the end of a crashed worker's
// sessions), one for each worker's pool (the lane's unused handle, the
// default worker, A, B, C and P; see pool), and one more for the session
// of a crashed worker that the server is still ending while its
// successor connects. TestPostgresConnectionBudget measures what an
// exploration holds.
const PostgresConnections = 10

// makeAppDatabase readies the place of the Env's app database: on
// PostgreSQL, a schema of its own.
func (e *Env) makeAppDatabase(ctx context.Context) error {
	if err := backend.Check(e.cfg.Backend, e.cfg.PostgresURL); err != nil {
		return err
	}
	if e.cfg.Backend != backend.Postgres {
		return nil
	}
	var err error
	e.schema, err = backend.NewSchema(ctx, e.cfg.PostgresURL, e.cfg.ConnectWait)
	return err
}

// appTarget is what the Env opens its app database with: the file
// app.db in Dir, or the URL of its schema.
func (e *Env) appTarget() string {
	if e.schema != nil {
		return e.schema.Target()
	}
	return filepath.Join(e.cfg.Dir, appFile)
}

// removeDatabases removes what a closed Env leaves of its databases, so
// that the next open makes them new: the files in Dir (Close dropped the
// schema of an app database on PostgreSQL).
func (e *Env) removeDatabases() error {
	files := laneFiles
	if e.schema != nil {
		files = files[1:]
	}
	for _, f := range files {
		if err := os.Remove(filepath.Join(e.cfg.Dir, f)); err != nil {
			return err
		}
	}
	return nil
}
