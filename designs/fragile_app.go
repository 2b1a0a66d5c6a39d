package designs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/outboxlab/handoff/system"
)

// The fragile app sides: the real system.Outbox with one method replaced,
// or wrapped around the receiver it is given. They write the real schema
// with plain SQL, one statement per step, so each reads as the shortcut it
// takes; written for SQLite, and said in the Outbox's dialect (see
// Outbox.Query), a title bound as the Outbox's column takes it (see
// Outbox.TitleArg), so that each runs on PostgreSQL too.

// querier is what *sql.DB and *sql.Tx both offer: on a *sql.DB every
// statement commits on its own.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// heldPayload returns the payload approved for key, and whether there is
// one, reading through q (o's database or a transaction on it).
func heldPayload(ctx context.Context, o *system.Outbox, q querier, key string) (string, bool, error) {
	var held string
	err := q.QueryRowContext(ctx, o.Query(`SELECT payload FROM approvals WHERE key = ?`), key).Scan(&held)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return held, err == nil, err
}

// insertApproval inserts a's approval through q (o's database or a
// transaction on it), passes the fault point between the two inserts,
// then inserts its pending outbox row, created (and eligible) at the time
// opts' clock says.
func insertApproval(ctx context.Context, o *system.Outbox, q querier, opts system.Options, a system.Approval) error {
	if _, err := q.ExecContext(ctx, o.Query(`INSERT INTO approvals (key, case_id, title, payload) VALUES (?, ?, ?, ?)`),
		a.Key, a.CaseID, o.TitleArg(a.Title), a.Payload); err != nil {
		return err
	}
	if err := pass(opts.Harness.Hook, system.PointBetweenApprovalInserts); err != nil {
		return err
	}
	now := time.Now
	if opts.Harness.Now != nil {
		now = opts.Harness.Now
	}
	created := now().UnixMilli()
	_, err := q.ExecContext(ctx, o.Query(`INSERT INTO outbox (key, state, attempts, created_at, next_attempt_at) VALUES (?, 'pending', 0, ?, ?)`), a.Key, created, created)
	return err
}

// twoWrites records the approval and its outbox row in two transactions.
type twoWrites struct {
	*system.Outbox
	opts system.Options
}

func (w twoWrites) RecordApproval(ctx context.Context, caseID, title string) (string, error) {
	a, err := system.NewApproval(caseID, title)
	if err != nil {
		return "", err
	}
	switch held, ok, err := heldPayload(ctx, w.Outbox, w.DB(), a.Key); {
	case err != nil:
		return "", err
	case ok && held == a.Payload:
		return a.Key, nil
	case ok:
		return "", fmt.Errorf("%w: %s", system.ErrKeyConflict, a.Key)
	}
	// The shortcut: no transaction, so the approval commits on its own.
	return a.Key, insertApproval(ctx, w.Outbox, w.DB(), w.opts, a)
}

// overwrite replaces the approved payload when a case is approved again.
type overwrite struct {
	*system.Outbox
	opts system.Options
}

func (o overwrite) RecordApproval(ctx context.Context, caseID, title string) (string, error) {
	a, err := system.NewApproval(caseID, title)
	if err != nil {
		return "", err
	}
	tx, err := o.DB().BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	switch held, ok, err := heldPayload(ctx, o.Outbox, tx, a.Key); {
	case err != nil:
		return "", err
	case ok && held != a.Payload:
		// The shortcut: the newest instruction wins.
		if _, err := tx.ExecContext(ctx, o.Query(`UPDATE approvals SET title = ?, payload = ? WHERE key = ?`), o.TitleArg(a.Title), a.Payload, a.Key); err != nil {
			return "", err
		}
	case !ok:
		if err := insertApproval(ctx, o.Outbox, tx, o.opts, a); err != nil {
			return "", err
		}
	}
	return a.Key, tx.Commit()
}

// freshKey sends every attempt under a newly made key. The new part is the
// attempt number, not a random one, so that runs stay deterministic.
type freshKey struct {
	*system.Outbox
}

func (f freshKey) DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error) {
	return f.Outbox.DeliverOne(ctx, receiverFunc(func(ctx context.Context, key, payload string) (int64, error) {
		var attempt int
		if err := f.DB().QueryRowContext(ctx, f.Query(`SELECT attempts FROM outbox WHERE key = ?`), key).Scan(&attempt); err != nil {
			return 0, err
		}
		return r.CreateTask(ctx, fmt.Sprintf("%s:attempt-%d", key, attempt), payload)
	}))
}

// timeoutMeansSent takes a transient failure for success.
type timeoutMeansSent struct {
	*system.Outbox
}

func (t timeoutMeansSent) DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error) {
	return t.Outbox.DeliverOne(ctx, receiverFunc(func(ctx context.Context, key, payload string) (int64, error) {
		id, err := r.CreateTask(ctx, key, payload)
		if errors.Is(err, system.ErrTransient) {
			return 0, nil // the shortcut: no error means it arrived
		}
		return id, err
	}))
}

// dropOnError discards an action whose send failed.
type dropOnError struct {
	*system.Outbox
}

func (d dropOnError) DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error) {
	got, err := d.Outbox.DeliverOne(ctx, r)
	if err == nil && got.LastError == system.LastErrorTransient {
		// The shortcut: log it and move on.
		_, err = d.DB().ExecContext(ctx, d.Query(`DELETE FROM outbox WHERE key = ?`), got.Key)
	}
	return got, err
}

// openNoBudget is the real worker with a budget that never runs out.
func openNoBudget(ctx context.Context, path string, opts system.Options) (App, error) {
	opts.MaxAttempts = math.MaxInt32
	return system.Open(ctx, path, opts)
}

// naiveWorker is a worker written without the outbox discipline; exactly one
// of its flags is set in each design that uses it.
type naiveWorker struct {
	*system.Outbox
	opts system.Options

	countAfterSend bool // the attempt is counted with the answer, not before the send
	txAcrossSend   bool // one transaction from the claim to the record
	sentBeforeSend bool // the row is marked sent before the request goes out
}

func (w naiveWorker) DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error) {
	tx, err := w.DB().BeginTx(ctx, nil)
	if err != nil {
		return system.Delivery{}, err
	}
	defer func() { tx.Rollback() }() // the transaction open when it returns
	var seq int64
	var d system.Delivery
	var payload string
	err = tx.QueryRowContext(ctx, w.Query(`SELECT o.seq, o.key, a.payload, o.attempts FROM outbox o
		JOIN approvals a ON a.key = o.key WHERE o.state = 'pending' ORDER BY o.seq LIMIT 1`)).
		Scan(&seq, &d.Key, &payload, &d.Attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return system.Delivery{Result: system.Idle}, nil
	}
	if err != nil {
		return system.Delivery{}, err
	}
	// The lease and fence bookkeeping is the real worker's: the one
	// shortcut of each design is elsewhere.
	if d.Attempts >= w.MaxAttempts() {
		d.Result, d.LastError = system.ResultBlocked, system.LastErrorBudgetExhausted
		if _, err := tx.ExecContext(ctx, w.Query(`UPDATE outbox SET fence = fence + 1 WHERE seq = ?`), seq); err != nil {
			return d, err
		}
		return d, record(ctx, w.Outbox, tx, seq, d)
	}
	now := time.Now
	if w.opts.Harness.Now != nil {
		now = w.opts.Harness.Now
	}
	lease := w.opts.Lease
	if lease == 0 {
		lease = system.DefaultLease
	}
	state, remote, owner := "pending", any(nil), any(w.Worker())
	if w.sentBeforeSend {
		state, remote, owner = "sent", 0, nil
	}
	if !w.countAfterSend {
		d.Attempts++
	}
	at := now().UnixMilli()
	if _, err := tx.ExecContext(ctx, w.Query(`UPDATE outbox SET state = ?, attempts = ?, remote_id = ?, fence = fence + 1,
		lease_owner = ?, lease_until = ?, first_claimed_at = CASE WHEN first_claimed_at = 0 THEN ? ELSE first_claimed_at END
		WHERE seq = ?`), state, d.Attempts, remote, owner, at+lease.Milliseconds(), at, seq); err != nil {
		return d, err
	}
	if !w.txAcrossSend {
		if err := tx.Commit(); err != nil {
			return d, err
		}
	}
	if err := pass(w.opts.Harness.Hook, system.PointBeforeSend); err != nil {
		return d, err
	}
	id, sendErr := r.CreateTask(ctx, d.Key, payload)
	if err := pass(w.opts.Harness.Hook, system.PointAfterReply); err != nil {
		return d, err
	}
	if !w.txAcrossSend {
		if tx, err = w.DB().BeginTx(ctx, nil); err != nil {
			return d, err
		}
	}
	if w.countAfterSend {
		d.Attempts++
	}
	switch {
	case sendErr == nil:
		d.Result, d.RemoteID = system.ResultSent, id
	case errors.Is(sendErr, system.ErrTransient):
		d.Result, d.LastError = system.ResultPending, system.LastErrorTransient
		if d.Attempts >= w.MaxAttempts() {
			d.Result = system.ResultBlocked
		}
	case errors.Is(sendErr, system.ErrKeyConflict):
		d.Result, d.LastError = system.ResultBlocked, system.LastErrorConflict
	default:
		return d, sendErr
	}
	return d, record(ctx, w.Outbox, tx, seq, d)
}

// record writes d to the row seq and commits tx, a transaction on o's
// database.
func record(ctx context.Context, o *system.Outbox, tx *sql.Tx, seq int64, d system.Delivery) error {
	state, remote, lastError := string(d.Result), any(nil), any(nil)
	if d.Result == system.ResultSent {
		remote = d.RemoteID
	}
	if d.LastError != "" {
		lastError = d.LastError
	}
	if _, err := tx.ExecContext(ctx, o.Query(`UPDATE outbox SET state = ?, attempts = ?, remote_id = ?, last_error = ?,
		lease_owner = NULL, lease_until = 0 WHERE seq = ?`),
		state, d.Attempts, remote, lastError, seq); err != nil {
		return err
	}
	return tx.Commit()
}

// pass calls hook at p, as system does at its fault points.
func pass(hook system.Hook, p system.FaultPoint) error {
	if hook == nil {
		return nil
	}
	return hook(p)
}

// receiverFunc adapts a function to system.Receiver.
type receiverFunc func(ctx context.Context, key, payload string) (int64, error)

func (f receiverFunc) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	return f(ctx, key, payload)
}
