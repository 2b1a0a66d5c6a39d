package handoff

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/outboxlab/handoff/faults"
)

// The files of an Env's databases.
const (
	appFile = "app.db"
	crmFile = "crm.db"
)

// busyTimeout is how long the system's writes wait for another
// connection's write lock in the simulation: only a busy fault holds one
// (the handles of one process commit their writes one batch at a time),
// and a busy step then waits a millisecond instead of the default's
// seconds.
const busyTimeout = time.Millisecond

// withDatabaseFault runs do with the database fault k (see
// faultEffect.database) held on its file, then lifts it and checks the
// file with SQLite's integrity check: whatever the fault refused must
// have left nothing half-written. A fault that is not a database's just
// runs do. app is the handle the step writes the app database through.
//
// Busy: another connection of the harness's, its own handle on the file,
// holds the write lock (BEGIN IMMEDIATE) while do runs. Full: the
// connection that writes the file (app's, or the receiver's) is pinned at
// the file's size (PRAGMA max_page_count, which SQLite keeps per
// connection), and given its limit back after.
func (e *Env) withDatabaseFault(ctx context.Context, k faults.Kind, app any, do func()) error {
	f := faultTable[k]
	if f.database == "" {
		do()
		return nil
	}
	var lift func() error
	var err error
	if k == faults.AppBusy || k == faults.CRMBusy {
		lift, err = e.holdWriteLock(ctx, f.database)
	} else {
		handle := app
		if f.database == crmFile {
			handle = e.crm
			if h, ok := handle.(*httpCRM); ok {
				handle = h.CRM
			}
		}
		lift, err = pinSize(ctx, handle, f.database)
	}
	if err != nil {
		return err
	}
	do()
	if err := lift(); err != nil {
		return err
	}
	return e.checkIntegrity(ctx, f.database)
}

// holder is the harness's own connection on file, opened on first use:
// another process's, as far as the system can tell.
func (e *Env) holder(file string) (*sql.DB, error) {
	if db, ok := e.holders[file]; ok {
		return db, nil
	}
	db, err := sql.Open("sqlite", filepath.Join(e.cfg.Dir, file)+"?_txlock=immediate&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("handoff: opening a connection of its own on %s: %w", file, err)
	}
	db.SetMaxOpenConns(1)
	if e.holders == nil {
		e.holders = map[string]*sql.DB{}
	}
	e.holders[file] = db
	return db, nil
}

// holdWriteLock takes file's write lock on the harness's connection; the
// returned func releases it.
func (e *Env) holdWriteLock(ctx context.Context, file string) (func() error, error) {
	db, err := e.holder(file)
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("handoff: taking the write lock of %s: %w", file, err)
	}
	return func() error {
		if err := tx.Rollback(); err != nil {
			return fmt.Errorf("handoff: releasing the write lock of %s: %w", file, err)
		}
		return nil
	}, nil
}

// pinSize pins the connection of handle, which must have one (a DB
// method, as system's Outbox and CRM have), at the file's size; the
// returned func gives it its limit back.
func pinSize(ctx context.Context, handle any, file string) (func() error, error) {
	h, ok := handle.(interface{ DB() *sql.DB })
	if !ok {
		return nil, fmt.Errorf("%w: %s's handle (%T) has no connection to pin at its size", ErrScenario, file, handle)
	}
	db := h.DB()
	var limit, pinned int64
	if err := db.QueryRowContext(ctx, "PRAGMA max_page_count").Scan(&limit); err != nil {
		return nil, fmt.Errorf("handoff: reading the page limit of %s: %w", file, err)
	}
	// SQLite never sets the limit below the file's size: 1 pins it there.
	if err := db.QueryRowContext(ctx, "PRAGMA max_page_count = 1").Scan(&pinned); err != nil {
		return nil, fmt.Errorf("handoff: pinning %s at its size: %w", file, err)
	}
	return func() error {
		if err := db.QueryRowContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", limit)).Scan(&pinned); err != nil || pinned != limit {
			return fmt.Errorf("handoff: giving %s its page limit %d back: got %d, %v", file, limit, pinned, err)
		}
		return nil
	}, nil
}

// checkIntegrity runs SQLite's integrity check of file on the harness's
// connection and returns an error when it reports anything.
func (e *Env) checkIntegrity(ctx context.Context, file string) error {
	db, err := e.holder(file)
	if err != nil {
		return err
	}
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("handoff: checking %s: %w", file, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("handoff: checking %s: %w", file, err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("handoff: checking %s: %w", file, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("handoff: %s fails SQLite's integrity check after a fault: %s", file, strings.Join(problems, "; "))
	}
	return nil
}

// closeHolders closes the harness's own connections.
func (e *Env) closeHolders() error {
	var err error
	for file, db := range e.holders {
		err = errors.Join(err, db.Close())
		delete(e.holders, file)
	}
	return err
}
