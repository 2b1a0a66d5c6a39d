package system

import (
	"context"
	"database/sql"
	"errors"
)

// Result is what one call of DeliverOne did. Idle is a worker result, not a
// row state: blocked rows may exist when the worker is idle.
type Result string

const (
	// Idle: no pending row; nothing was sent.
	Idle Result = "idle"
	// ResultSent: the receiver's task id is recorded; the row is Sent.
	ResultSent Result = "sent"
	// ResultPending: the row stays Pending for a retry.
	ResultPending Result = "pending"
	// ResultBlocked: the row is Blocked; a person must reconcile it.
	ResultBlocked Result = "blocked"
)

// Delivery reports one call of DeliverOne: which row it worked on and where
// that row now stands.
type Delivery struct {
	Result    Result
	Key       string // empty when Idle
	Attempts  int    // the row's attempts after this call
	RemoteID  int64  // the receiver's task id when Sent
	LastError string // the row's last error after this call
}

// Receiver is the remote system that creates a task for an action key. It
// must store the key with the task atomically and answer a replayed key
// with the existing task id. An adapter for a real CRM wraps a failure that
// may or may not have reached the CRM in ErrTransient, and a key the CRM
// holds with other content in ErrKeyConflict.
type Receiver interface {
	CreateTask(ctx context.Context, key, payload string) (taskID int64, err error)
}

// The queries of a delivery.
const (
	sqlClaim = `SELECT o.seq, o.key, a.payload, o.attempts, coalesce(o.last_error, '')
		FROM outbox o JOIN approvals a ON a.key = o.key
		WHERE o.state = 'pending' ORDER BY o.seq LIMIT 1`
	sqlCountAttempt = `UPDATE outbox SET attempts = ?, last_attempt_at = ? WHERE seq = ?`
	sqlSettle       = `UPDATE outbox SET state = ?, remote_id = ?, last_error = ?, sent_at = ? WHERE seq = ?`
	sqlLocalError   = `UPDATE outbox SET last_error = ? WHERE seq = ? AND state = 'pending' AND attempts = ?`
)

// claimed is the row a delivery works on.
type claimed struct {
	seq      int64
	key      string
	payload  string
	attempts int
}

// DeliverOne makes one delivery attempt for the oldest pending row, as SPEC
// says: it counts the attempt and commits before sending, sends outside any
// local transaction, and records the answer in a new transaction. A row that
// has used its budget is blocked without a send.
//
// A failure after the attempt is committed (an error from r that is
// neither ErrTransient nor ErrKeyConflict, or a failure to record the
// answer) is returned as an *AttemptError wrapping the cause: the row
// stays pending with the attempt counted, and its last error names the
// cause ("local: database is busy") where the app database takes the
// write. An error from the Hook, a simulated crash, is returned unchanged
// and nothing more is written, as after a real crash.
func (o *Outbox) DeliverOne(ctx context.Context, r Receiver) (Delivery, error) {
	if r == nil {
		return Delivery{}, invalid("receiver is nil")
	}
	c, d, err := o.claim(ctx)
	if err != nil || d.Result != ResultPending {
		return d, err
	}
	if err := o.hook.pass(PointBeforeSend); err != nil {
		return d, err
	}
	taskID, sendErr := r.CreateTask(ctx, c.key, c.payload)
	if err := o.hook.pass(PointAfterReply); err != nil {
		return d, err
	}
	switch {
	case sendErr == nil:
		d = Delivery{Result: ResultSent, Key: c.key, Attempts: c.attempts, RemoteID: taskID}
	case errors.Is(sendErr, ErrTransient):
		d.LastError = LastErrorTransient
		if c.attempts >= o.maxAttempts {
			d.Result = ResultBlocked
		}
	case errors.Is(sendErr, ErrKeyConflict):
		d.Result, d.LastError = ResultBlocked, LastErrorConflict
	default:
		return d, o.attemptFailed(ctx, c, sendErr)
	}
	if err := o.settle(ctx, c.seq, d); err != nil {
		return d, o.attemptFailed(ctx, c, err)
	}
	return d, nil
}

// attemptFailed records, if the database takes it, the cause of a failure
// after c's attempt was counted as the row's last error, and returns the
// error that says the attempt is spent.
func (o *Outbox) attemptFailed(ctx context.Context, c claimed, cause error) error {
	// Best effort: when the app database itself failed, this fails too,
	// and the returned error still says what happened. It is written even
	// when ctx was cancelled: an interrupt is a cause worth recording.
	ctx = context.WithoutCancel(ctx)
	_ = o.write(ctx, "recording the cause", func(tx *sql.Tx) error {
		return o.q.exec(ctx, tx, sqlLocalError, localCause(cause), c.seq, c.attempts)
	})
	return &AttemptError{Key: c.key, Attempt: c.attempts, MaxAttempts: o.maxAttempts, Err: cause}
}

// claim takes the oldest pending row in one transaction: it blocks the row
// if its budget is spent, and otherwise counts one more attempt. The
// returned Delivery is ResultPending when a send must follow.
func (o *Outbox) claim(ctx context.Context) (claimed, Delivery, error) {
	var c claimed
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return c, Delivery{}, driverError("beginning the claim", err)
	}
	defer tx.Rollback()
	var lastError string
	err = o.q.queryRow(ctx, tx, sqlClaim, nil, &c.seq, &c.key, &c.payload, &c.attempts, &lastError)
	if errors.Is(err, sql.ErrNoRows) {
		return c, Delivery{Result: Idle}, nil
	}
	if err != nil {
		return c, Delivery{}, driverError("claiming the oldest pending row", err)
	}
	d := Delivery{Result: ResultPending, Key: c.key, Attempts: c.attempts, LastError: lastError}
	if c.attempts >= o.maxAttempts {
		d.Result, d.LastError = ResultBlocked, LastErrorBudgetExhausted
		if err := o.settleTx(ctx, tx, c.seq, d); err != nil {
			return c, Delivery{}, err
		}
	} else {
		c.attempts++
		d.Attempts = c.attempts
		if err := o.q.exec(ctx, tx, sqlCountAttempt, c.attempts, millis(o.now()), c.seq); err != nil {
			return c, Delivery{}, driverError("counting the attempt", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return c, Delivery{}, driverError("committing the claim", err)
	}
	return c, d, nil
}

// settle records d for the row seq in a new transaction.
func (o *Outbox) settle(ctx context.Context, seq int64, d Delivery) error {
	return o.write(ctx, "recording the delivery", func(tx *sql.Tx) error { return o.settleTx(ctx, tx, seq, d) })
}

// write runs fn in a new write transaction and commits it.
func (o *Outbox) write(ctx context.Context, doing string, fn func(*sql.Tx) error) error {
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return driverError(doing, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return driverError(doing, tx.Commit())
}

// settleTx writes d's state, remote id and last error to the row seq.
func (o *Outbox) settleTx(ctx context.Context, tx *sql.Tx, seq int64, d Delivery) error {
	var remoteID, lastError any
	var sentAt int64
	if d.Result == ResultSent {
		remoteID, sentAt = d.RemoteID, millis(o.now())
	}
	if d.LastError != "" {
		lastError = d.LastError
	}
	err := o.q.exec(ctx, tx, sqlSettle, string(d.state()), remoteID, lastError, sentAt, seq)
	return driverError("recording the delivery", err)
}

// state is the row state a non-idle result leaves.
func (d Delivery) state() State {
	switch d.Result {
	case ResultSent:
		return Sent
	case ResultBlocked:
		return Blocked
	}
	return Pending
}
