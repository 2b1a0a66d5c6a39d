package riveroutbox

import (
	"context"
	"database/sql"
	"fmt"

	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL for database/sql
	"github.com/outboxlab/handoff/system"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	_ "modernc.org/sqlite" // SQLite for database/sql
)

// maxConns is the most connections a PostgreSQL pool of the outbox opens.
const maxConns = 2

// The app's own table, beside River's: the approval, its job, and the
// task id the worker recorded. The title is bytes: a title may hold what
// PostgreSQL's text refuses (NUL).
const (
	sqliteApprovals = `CREATE TABLE IF NOT EXISTS followup_approvals (
	seq INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, case_id TEXT NOT NULL,
	title BLOB NOT NULL, payload TEXT NOT NULL, job_id INTEGER, task_id INTEGER)`
	pgApprovals = `CREATE TABLE IF NOT EXISTS followup_approvals (
	seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE, key TEXT PRIMARY KEY, case_id TEXT NOT NULL,
	title BYTEA NOT NULL, payload TEXT NOT NULL, job_id BIGINT, task_id BIGINT)`
)

// store is the app database: one database/sql handle on either backend,
// River's driver on it, and whether it is PostgreSQL.
type store struct {
	db     *sql.DB
	driver riverdriver.Driver[*sql.Tx]
	pg     bool
}

// openStore opens the app database at path (a SQLite file, or a
// postgres:// URL whose schema exists) and creates the app's table.
// River's tables are made by River's migrations (see open).
func openStore(ctx context.Context, path string) (*store, error) {
	s := &store{pg: system.IsPostgres(path)}
	var err error
	if s.pg {
		connect, _, perr := system.SplitPostgres(path)
		if perr != nil {
			return nil, perr
		}
		if s.db, err = sql.Open("pgx", connect); err != nil {
			return nil, err
		}
		s.db.SetMaxOpenConns(maxConns)
		s.driver = riverdatabasesql.New(s.db)
	} else {
		// One connection; writes are BEGIN IMMEDIATE and wait for the lock.
		if s.db, err = sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)"); err != nil {
			return nil, err
		}
		s.db.SetMaxOpenConns(1)
		s.driver = riversqlite.New(s.db)
	}
	table := sqliteApprovals
	if s.pg {
		table = pgApprovals
	}
	if _, err := s.db.ExecContext(ctx, table); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("riveroutbox: creating the approvals table: %w", err)
	}
	return s, nil
}

// readTx begins a transaction that reads one state of the database:
// repeatable read on PostgreSQL (SQLite's transactions are serializable).
func (s *store) readTx(ctx context.Context) (*sql.Tx, error) {
	if s.pg {
		return s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	}
	return s.db.BeginTx(ctx, nil)
}

// inTx runs f in a transaction, committed if f returns nil.
func (s *store) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}
