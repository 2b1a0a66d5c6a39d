package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/outboxlab/handoff/system"
)

// errMissing says that a database file that must exist does not.
var errMissing = errors.New("does not exist")

// appMustExist refuses an app database that is not there, as mustExist
// does a file; one named by a PostgreSQL URL must be there in its schema,
// which is only read, so that a refused one is not created.
func appMustExist(ctx context.Context, path string) error {
	if !system.IsPostgres(path) {
		return mustExist("app", path)
	}
	app, err := system.OpenReadOnly(ctx, path)
	if err != nil {
		return err
	}
	return app.Close()
}

// shown is the app database's path or URL as a message shows it: a URL
// without its password.
func shown(path string) string {
	if system.IsPostgres(path) {
		return system.Redact(path)
	}
	return path
}

// mustExist refuses a database file that is not there: only approve, crm
// init and deliver --create-crm create one.
func mustExist(what, path string) error {
	if err := system.CheckPath(path); err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("the %s database %s %w", what, path, errMissing)
		}
		return err
	}
	return nil
}

// openCRMFile opens the durable CRM database at path; creating says the
// file is new, and then w hears where it was made, with its identity.
func openCRMFile(ctx context.Context, path string, creating bool, w io.Writer) (*system.CRM, error) {
	crm, err := system.OpenCRM(ctx, path, system.Durable)
	if err != nil || !creating {
		return crm, err
	}
	id, err := crm.Identity(ctx)
	if err != nil {
		crm.Close()
		return nil, err
	}
	fmt.Fprintf(w, "created the CRM database %s (identity %s)\n", path, id)
	return crm, nil
}
