package system

import (
	"context"
	"database/sql"
)

// State is where an outbox row stands. The schema enforces the three values.
type State string

const (
	// Pending: no final acknowledgment is recorded. The worker retries the
	// row with its original key and payload.
	Pending State = "pending"

	// Sent: the receiver's task id is recorded. It does not mean an employee
	// did the work. Final for the worker.
	Sent State = "sent"

	// Blocked: a key conflict or an exhausted attempt budget. A person must
	// reconcile by key before anything else is sent for it; the task may
	// exist at the receiver all the same. Final for the worker.
	Blocked State = "blocked"
)

// Last errors a row can carry; empty means none.
const (
	LastErrorTransient       = "transient"
	LastErrorConflict        = "conflict"
	LastErrorBudgetExhausted = "budget-exhausted"
)

// DefaultMaxAttempts is the attempt budget of a row when Options leaves it 0.
const DefaultMaxAttempts = 3

// appDatabaseID marks an app database: "HOFF" in its application_id field.
const appDatabaseID = 0x484f4646

const appSchema = `
CREATE TABLE IF NOT EXISTS approvals (
	key     TEXT PRIMARY KEY,
	case_id TEXT NOT NULL,
	title   TEXT NOT NULL,
	payload TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS outbox (
	seq        INTEGER PRIMARY KEY,
	key        TEXT NOT NULL UNIQUE REFERENCES approvals (key),
	state      TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'blocked')),
	attempts   INTEGER NOT NULL CHECK (attempts >= 0),
	remote_id  INTEGER CHECK ((state = 'sent') = (remote_id IS NOT NULL)),
	last_error TEXT CHECK (last_error IN ('transient', 'conflict', 'budget-exhausted'))
) STRICT;
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (seq) WHERE state = 'pending';
`

// Options configure an Outbox. The zero value is the durable default.
type Options struct {
	// MaxAttempts is how many sends a row gets before it is blocked; 0 means
	// DefaultMaxAttempts.
	MaxAttempts int

	// Durability of every commit; the zero value is Durable.
	Durability Durability

	// Hook is called at every FaultPoint; nil lets everything pass.
	Hook Hook
}

// Outbox is the app's side of the handoff: approvals, their outbox rows and
// the worker that delivers them. It is safe for one worker; open it once
// per process.
type Outbox struct {
	db          *sql.DB
	q           *statements
	maxAttempts int
	hook        Hook
}

// Open opens (creating if needed) the app database at path. It refuses a
// file that is another kind of SQLite database with ErrWrongDatabase and bad
// options with ErrInvalidInput.
func Open(ctx context.Context, path string, opts Options) (*Outbox, error) {
	switch {
	case opts.MaxAttempts < 0:
		return nil, invalid("max attempts is %d, want 0 (the default) or more", opts.MaxAttempts)
	case opts.MaxAttempts == 0:
		opts.MaxAttempts = DefaultMaxAttempts
	}
	db, err := openDB(ctx, path, appDatabaseID, appSchema, opts.Durability)
	if err != nil {
		return nil, err
	}
	q, err := prepareAll(ctx, db, sqlFindApproval, sqlInsertApproval, sqlInsertRow,
		sqlClaim, sqlCountAttempt, sqlSettle, sqlApprovals, sqlRows)
	if err != nil {
		return nil, err
	}
	return &Outbox{db: db, q: q, maxAttempts: opts.MaxAttempts, hook: opts.Hook}, nil
}

// DB is the outbox's database, for a caller that wants its own business
// write in the approval's transaction (see RecordApprovalTx). Transactions
// begun on it are BEGIN IMMEDIATE.
func (o *Outbox) DB() *sql.DB { return o.db }

// MaxAttempts is the attempt budget of every row.
func (o *Outbox) MaxAttempts() int { return o.maxAttempts }

// Close closes the database handle; nothing in memory needs saving.
func (o *Outbox) Close() error { return o.q.close() }

// Row is one outbox row as the worker sees it.
type Row struct {
	Key       string
	State     State
	Attempts  int
	RemoteID  int64  // the receiver's task id; 0 when none is recorded
	LastError string // one of the LastError constants, or empty
}

// Snapshot is everything observable in the app database, in insertion order.
type Snapshot struct {
	Approvals []Approval
	Outbox    []Row
}

// The queries of a snapshot.
const (
	sqlApprovals = `SELECT key, case_id, title, payload FROM approvals ORDER BY rowid`
	sqlRows      = `SELECT key, state, attempts, coalesce(remote_id, 0), coalesce(last_error, '') FROM outbox ORDER BY seq`
)

// Snapshot reads every approval and outbox row in one read transaction.
func (o *Outbox) Snapshot(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	tx, err := o.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s, driverError("beginning the snapshot", err)
	}
	defer tx.Rollback()
	rows, err := o.q.query(ctx, tx, sqlApprovals)
	if err != nil {
		return s, driverError("reading approvals", err)
	}
	for rows.Next() {
		var a Approval
		if err := rows.Scan(&a.Key, &a.CaseID, &a.Title, &a.Payload); err != nil {
			rows.Close()
			return s, driverError("reading approvals", err)
		}
		s.Approvals = append(s.Approvals, a)
	}
	if err := rows.Close(); err != nil {
		return s, driverError("reading approvals", err)
	}
	rows, err = o.q.query(ctx, tx, sqlRows)
	if err != nil {
		return s, driverError("reading the outbox", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r Row
		if err := rows.Scan(&r.Key, &r.State, &r.Attempts, &r.RemoteID, &r.LastError); err != nil {
			return s, driverError("reading the outbox", err)
		}
		s.Outbox = append(s.Outbox, r)
	}
	return s, driverError("reading the outbox", rows.Err())
}
