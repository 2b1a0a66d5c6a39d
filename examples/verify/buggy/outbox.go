// Package buggy is package outbox (see its doc) with one plausible bug:
// the attempt is counted in the transaction that records the answer,
// after the send, "so that a failed send costs no attempt". A worker that
// dies between the reply and that transaction has sent without counting
// it, and sends again: the receiver sees more sends than the row's
// attempts, and the budget never runs out. Its test shows the harness
// catching it.
package buggy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
	_ "modernc.org/sqlite"
)

// Design is this outbox as the harness runs it: in front of the handoff's
// durable receiver, with none of the capabilities beyond one worker.
var Design = designs.Design{
	Name:    "compact-outbox-buggy",
	Summary: "package outbox, with the attempt counted after the send",
	OpenApp: func(ctx context.Context, path string, opts system.Options) (designs.App, error) {
		return Open(ctx, path, opts)
	},
	OpenCRM: func(ctx context.Context, path string, opts system.CRMOptions) (designs.CRM, error) {
		return system.OpenCRMWith(ctx, path, opts)
	},
}

const schema = `
CREATE TABLE IF NOT EXISTS approvals (
	key TEXT PRIMARY KEY, case_id TEXT NOT NULL, title TEXT NOT NULL, payload TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outbox (
	seq INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE REFERENCES approvals (key),
	state TEXT NOT NULL, attempts INTEGER NOT NULL, remote_id INTEGER, last_error TEXT);`

// Outbox is the app database: approvals and their outbox rows.
type Outbox struct {
	db          *sql.DB
	maxAttempts int
	hook        system.Hook
}

// Open opens the outbox in the SQLite file at path, creating its tables.
// It honours opts' attempt budget and passes every fault point through
// opts' hook, where the harness crashes it.
func Open(ctx context.Context, path string, opts system.Options) (*Outbox, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("outbox: creating the tables: %w", err)
	}
	o := &Outbox{db: db, maxAttempts: opts.MaxAttempts, hook: opts.Harness.Hook}
	if o.maxAttempts == 0 {
		o.maxAttempts = system.DefaultMaxAttempts
	}
	return o, nil
}

// Close closes the database.
func (o *Outbox) Close() error { return o.db.Close() }

// pass reports the fault point p to the hook: a non-nil error means the
// process dies there.
func (o *Outbox) pass(p system.FaultPoint) error {
	if o.hook == nil {
		return nil
	}
	return o.hook(p)
}

// RecordApproval records the approval and its pending outbox row in one
// transaction. An approval repeated with the same payload changes
// nothing; one with another payload is a key conflict.
func (o *Outbox) RecordApproval(ctx context.Context, caseID, title string) (string, error) {
	a, err := system.NewApproval(caseID, title) // the spec's validation and canonical payload
	if err != nil {
		return "", err
	}
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	var held string
	switch err := tx.QueryRowContext(ctx, `SELECT payload FROM approvals WHERE key = ?`, a.Key).Scan(&held); {
	case err == nil && held == a.Payload:
		return a.Key, nil
	case err == nil:
		return "", fmt.Errorf("%w: %s holds another payload", system.ErrKeyConflict, a.Key)
	case !errors.Is(err, sql.ErrNoRows):
		return "", err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO approvals (key, case_id, title, payload) VALUES (?, ?, ?, ?)`,
		a.Key, a.CaseID, a.Title, a.Payload); err != nil {
		return "", err
	}
	if err := o.pass(system.PointBetweenApprovalInserts); err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO outbox (key, state, attempts) VALUES (?, 'pending', 0)`, a.Key); err != nil {
		return "", err
	}
	return a.Key, tx.Commit()
}

// DeliverOne sends the oldest pending row: it counts the attempt and
// commits before sending, sends the row's key and payload, then records
// the answer in a second transaction.
func (o *Outbox) DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error) {
	var (
		key, payload string
		attempts     int
	)
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return system.Delivery{}, err
	}
	defer tx.Rollback()
	err = tx.QueryRowContext(ctx, `SELECT o.key, a.payload, o.attempts FROM outbox o JOIN approvals a USING (key)
		WHERE o.state = 'pending' ORDER BY o.seq LIMIT 1`).Scan(&key, &payload, &attempts)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return system.Delivery{Result: system.Idle}, nil
	case err != nil:
		return system.Delivery{}, err
	case attempts >= o.maxAttempts:
		return o.finish(ctx, tx, system.Delivery{Result: system.ResultBlocked, Key: key, Attempts: attempts,
			LastError: system.LastErrorBudgetExhausted})
	}
	attempts++ // the bug: counted here, written only with the answer (see finish)
	if err := tx.Commit(); err != nil {
		return system.Delivery{}, err
	}
	d := system.Delivery{Result: system.ResultPending, Key: key, Attempts: attempts}
	if err := o.pass(system.PointBeforeSend); err != nil {
		return d, err
	}
	id, sendErr := r.CreateTask(ctx, key, payload)
	if err := o.pass(system.PointAfterReply); err != nil {
		return d, err
	}
	switch {
	case sendErr == nil:
		d.Result, d.RemoteID = system.ResultSent, id
	case errors.Is(sendErr, system.ErrTransient) && attempts < o.maxAttempts:
		d.LastError = system.LastErrorTransient
	case errors.Is(sendErr, system.ErrTransient):
		d.Result, d.LastError = system.ResultBlocked, system.LastErrorTransient
	case errors.Is(sendErr, system.ErrKeyConflict):
		d.Result, d.LastError = system.ResultBlocked, system.LastErrorConflict
	case errors.Is(sendErr, system.ErrRejected):
		d.Result, d.LastError = system.ResultBlocked, system.LastErrorRejected
	default:
		return d, sendErr // nothing recorded: the row stays pending with its attempt counted
	}
	tx, err = o.db.BeginTx(ctx, nil)
	if err != nil {
		return d, err
	}
	defer tx.Rollback()
	return o.finish(ctx, tx, d)
}

// finish writes d's state, attempts, remote id and last error to its row
// and commits.
func (o *Outbox) finish(ctx context.Context, tx *sql.Tx, d system.Delivery) (system.Delivery, error) {
	state := map[system.Result]system.State{system.ResultSent: system.Sent, system.ResultPending: system.Pending,
		system.ResultBlocked: system.Blocked}[d.Result]
	if _, err := tx.ExecContext(ctx, `UPDATE outbox SET state = ?, attempts = ?, remote_id = nullif(?, 0), last_error = nullif(?, '') WHERE key = ?`,
		state, d.Attempts, d.RemoteID, d.LastError, d.Key); err != nil {
		return d, err
	}
	return d, tx.Commit()
}

// Snapshot reads every approval and outbox row, in insertion order.
func (o *Outbox) Snapshot(ctx context.Context) (system.Snapshot, error) {
	var snap system.Snapshot
	rows, err := o.db.QueryContext(ctx, `SELECT key, case_id, title, payload FROM approvals ORDER BY rowid`)
	if err != nil {
		return snap, err
	}
	for rows.Next() {
		var a system.Approval
		if err := rows.Scan(&a.Key, &a.CaseID, &a.Title, &a.Payload); err != nil {
			rows.Close()
			return snap, err
		}
		snap.Approvals = append(snap.Approvals, a)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return snap, err
	}
	rows, err = o.db.QueryContext(ctx, `SELECT key, state, attempts, coalesce(remote_id, 0), coalesce(last_error, '') FROM outbox ORDER BY seq`)
	if err != nil {
		return snap, err
	}
	defer rows.Close()
	for rows.Next() {
		var r system.Row
		if err := rows.Scan(&r.Key, &r.State, &r.Attempts, &r.RemoteID, &r.LastError); err != nil {
			return snap, err
		}
		snap.Outbox = append(snap.Outbox, r)
	}
	return snap, rows.Err()
}
