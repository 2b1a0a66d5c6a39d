package riveroutbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	_ "modernc.org/sqlite"
)

// errNoRows is a query of one row that found none, on either backend.
var errNoRows = errors.New("riveroutbox: no rows")

// store is the app's database as the outbox uses it, on one backend:
// River's driver on it, transactions of the driver's type, and the app's
// own statements, written with $1… placeholders.
type store[TTx any] interface {
	driver() riverdriver.Driver[TTx]
	// schema is River's schema ("" on SQLite).
	schema() string
	begin(ctx context.Context, snapshot bool) (TTx, error)
	commit(ctx context.Context, tx TTx) error
	rollback(ctx context.Context, tx TTx) error
	exec(ctx context.Context, tx TTx, query string, args ...any) error
	queryRow(ctx context.Context, tx TTx, query string, args []any, dest ...any) error
	query(ctx context.Context, tx TTx, query string, args []any, row func(scan func(dest ...any) error) error) error
	// titleArg is how a title is bound: text, or its bytes where the
	// column is BYTEA.
	titleArg(title string) any
	close() error
}

// sqliteStore is the app database in a SQLite file, through database/sql
// and River's riversqlite driver.
type sqliteStore struct {
	db *sql.DB
	d  *riversqlite.Driver
}

const sqliteApprovals = `CREATE TABLE IF NOT EXISTS followup_approvals (
	seq     INTEGER PRIMARY KEY,
	key     TEXT NOT NULL UNIQUE,
	case_id TEXT NOT NULL,
	title   TEXT NOT NULL,
	payload TEXT NOT NULL,
	job_id  INTEGER,
	task_id INTEGER
)`

// openSQLite opens the SQLite file at path with one connection (writes
// are BEGIN IMMEDIATE and wait for the lock), creating the app's table.
func openSQLite(ctx context.Context, path string) (*sqliteStore, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, sqliteApprovals); err != nil {
		db.Close()
		return nil, fmt.Errorf("riveroutbox: creating the approvals table: %w", err)
	}
	return &sqliteStore{db: db, d: riversqlite.New(db)}, nil
}

func (s *sqliteStore) driver() riverdriver.Driver[*sql.Tx] { return s.d }
func (s *sqliteStore) schema() string                      { return "" }

func (s *sqliteStore) begin(ctx context.Context, snapshot bool) (*sql.Tx, error) {
	return s.db.BeginTx(ctx, nil)
}
func (s *sqliteStore) commit(_ context.Context, tx *sql.Tx) error   { return tx.Commit() }
func (s *sqliteStore) rollback(_ context.Context, tx *sql.Tx) error { return tx.Rollback() }

// sqliteQuery writes $n placeholders as SQLite's ?n.
func sqliteQuery(q string) string { return strings.ReplaceAll(q, "$", "?") }

func (s *sqliteStore) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	_, err := tx.ExecContext(ctx, sqliteQuery(query), args...)
	return err
}

func (s *sqliteStore) queryRow(ctx context.Context, tx *sql.Tx, query string, args []any, dest ...any) error {
	err := tx.QueryRowContext(ctx, sqliteQuery(query), args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoRows
	}
	return err
}

func (s *sqliteStore) query(ctx context.Context, tx *sql.Tx, query string, args []any, row func(scan func(dest ...any) error) error) error {
	rows, err := tx.QueryContext(ctx, sqliteQuery(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *sqliteStore) titleArg(title string) any { return title }
func (s *sqliteStore) close() error              { return s.db.Close() }

// pgStore is the app database in a PostgreSQL schema, through a pgx pool
// and River's riverpgxv5 driver; River's tables are in the same schema.
type pgStore struct {
	pool *pgxpool.Pool
	d    *riverpgxv5.Driver
	name string
}

// maxConns is the most connections a pool of the outbox opens.
const maxConns = 2

const pgApprovals = `CREATE TABLE IF NOT EXISTS followup_approvals (
	seq     BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	key     TEXT PRIMARY KEY,
	case_id TEXT NOT NULL,
	title   BYTEA NOT NULL,
	payload TEXT NOT NULL,
	job_id  BIGINT,
	task_id BIGINT
)`

// openPostgres connects to target, a postgres:// URL whose schema=
// parameter names the schema of the app's tables and River's, and
// creates the schema and the app's table.
func openPostgres(ctx context.Context, target string) (*pgStore, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("riveroutbox: %s is not a URL", target)
	}
	q := u.Query()
	schema := q.Get("schema")
	if schema == "" {
		return nil, fmt.Errorf("riveroutbox: %s names no schema (?schema=…)", u.Redacted())
	}
	q.Del("schema")
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()+`; `+pgApprovals); err != nil {
		pool.Close()
		return nil, fmt.Errorf("riveroutbox: creating schema %s: %w", schema, err)
	}
	return &pgStore{pool: pool, d: riverpgxv5.New(pool), name: schema}, nil
}

func (s *pgStore) driver() riverdriver.Driver[pgx.Tx] { return s.d }
func (s *pgStore) schema() string                     { return s.name }

func (s *pgStore) begin(ctx context.Context, snapshot bool) (pgx.Tx, error) {
	opts := pgx.TxOptions{}
	if snapshot {
		opts.IsoLevel, opts.AccessMode = pgx.RepeatableRead, pgx.ReadOnly
	}
	return s.pool.BeginTx(ctx, opts)
}
func (s *pgStore) commit(ctx context.Context, tx pgx.Tx) error   { return tx.Commit(ctx) }
func (s *pgStore) rollback(ctx context.Context, tx pgx.Tx) error { return tx.Rollback(ctx) }

func (s *pgStore) exec(ctx context.Context, tx pgx.Tx, query string, args ...any) error {
	_, err := tx.Exec(ctx, query, args...)
	return err
}

func (s *pgStore) queryRow(ctx context.Context, tx pgx.Tx, query string, args []any, dest ...any) error {
	err := tx.QueryRow(ctx, query, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoRows
	}
	return err
}

func (s *pgStore) query(ctx context.Context, tx pgx.Tx, query string, args []any, row func(scan func(dest ...any) error) error) error {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *pgStore) titleArg(title string) any { return []byte(title) }
func (s *pgStore) close() error              { s.pool.Close(); return nil }
