package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/sessions"
)

// makeAppDatabase readies the place of the Env's app database: on
// PostgreSQL, a schema of its own, and the Keeper of the sessions of its
// workers' connections.
func (e *Env) makeAppDatabase(ctx context.Context) error {
	if err := backend.Check(e.cfg.Backend, e.cfg.PostgresURL); err != nil {
		return err
	}
	if e.cfg.Backend != backend.Postgres {
		return nil
	}
	var err error
	if e.schema, err = backend.NewSchema(ctx, e.cfg.PostgresURL, e.cfg.ConnectWait); err != nil {
		return err
	}
	if e.keeper, err = sessions.New(e.cfg.PostgresURL); err != nil {
		return errors.Join(err, e.schema.Close(ctx))
	}
	return nil
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
