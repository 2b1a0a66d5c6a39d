package system

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Result is what one claim, settle or delivery did. Idle and Stale are
// worker results, not row states.
type Result string

const (
	// Idle: no row is eligible; nothing was sent. Delivery.NextEligible
	// says when one becomes eligible, if any is pending.
	Idle Result = "idle"
	// ResultSent: the receiver's task id is recorded; the row is Sent.
	ResultSent Result = "sent"
	// ResultPending: the row stays Pending for a retry (after a claim: a
	// send must follow).
	ResultPending Result = "pending"
	// ResultBlocked: the row is Blocked; a person must reconcile it.
	ResultBlocked Result = "blocked"
	// ResultStale: the settle lost its fence (the lease ran out and another
	// worker claimed the row, or a person acted, or the worker restarted):
	// nothing was written.
	ResultStale Result = "stale"
)

// Delivery reports one claim, settle or delivery: which row it worked on
// and where that row now stands.
type Delivery struct {
	Result    Result
	Key       string // empty when Idle
	Attempts  int    // the row's attempts after this call
	RemoteID  int64  // the receiver's task id when Sent
	LastError string // the row's last error after this call
	// NextEligible, for Idle, is the earliest time a pending row becomes
	// eligible; zero when no row is pending.
	NextEligible time.Time
	// TookOver names the other worker whose lease on the row had run out
	// when this delivery's claim took it (a worker that died, or stalled
	// past its lease); empty when the row was free.
	TookOver string
	// Backoff, for a transient failure that keeps the row pending, is how
	// long the row waits before it is eligible again: the jitter drawn,
	// or the receiver's retry hint when longer.
	Backoff time.Duration
}

// Receiver is the remote system that creates a task for an action key. It
// must store the key with the task atomically and answer a replayed key
// with the existing task id. An adapter for a real CRM wraps a failure that
// may or may not have reached the CRM in ErrTransient (with a RetryHint
// when the CRM said when to come back), a key the CRM holds with other
// content in ErrKeyConflict, and a request the CRM refused for good in
// ErrRejected.
type Receiver interface {
	CreateTask(ctx context.Context, key, payload string) (taskID int64, err error)
}

// Retainer is implemented by a receiver that forgets a key some time after
// it first stored it. A claim never leads to a send at or after
// first_claimed_at + Retention − SendTimeout: a later send could reach a
// receiver that has forgotten the key and make a second task.
type Retainer interface {
	Retention() time.Duration
}

// RetryHint is a transient failure with the receiver's not-before hint
// (an HTTP Retry-After): the retry waits at least After.
type RetryHint struct {
	After time.Duration
	Err   error
}

func (h *RetryHint) Error() string { return fmt.Sprintf("%v (retry after %v)", h.Err, h.After) }

// Unwrap returns the failure the hint came with.
func (h *RetryHint) Unwrap() error { return h.Err }

// The queries of a delivery. Every time is a parameter: SQL never reads a
// clock.
const (
	sqlEligible = `SELECT o.seq, o.key, a.payload, o.attempts, coalesce(o.last_error, ''), o.created_at, o.first_claimed_at, o.fence,
		coalesce(o.lease_owner, '')
		FROM outbox o JOIN approvals a ON a.key = o.key
		WHERE o.state = 'pending' AND o.next_attempt_at <= ?1 AND (o.lease_owner IS NULL OR o.lease_until <= ?1)
		ORDER BY o.seq LIMIT 1`
	// sqlNextDue is how many rows are pending and the earliest time one
	// becomes eligible: what an idle claim says, and what an idle worker
	// reads (the count tells no row pending from one due at the epoch).
	sqlNextDue = `SELECT count(*), coalesce(min(max(next_attempt_at, CASE WHEN lease_owner IS NULL THEN 0 ELSE lease_until END)), 0)
		FROM outbox WHERE state = 'pending'`
	sqlRelease = `UPDATE outbox SET lease_owner = NULL, lease_until = 0, fence = fence + 1
		WHERE lease_owner = ? AND state = 'pending'`
	sqlLeaseOwners = `SELECT DISTINCT lease_owner FROM outbox WHERE lease_owner IS NOT NULL`
	sqlClaimRow    = `UPDATE outbox SET attempts = attempts + 1, fence = fence + 1, lease_owner = ?, lease_until = ?,
		first_claimed_at = CASE WHEN first_claimed_at = 0 THEN ?3 ELSE first_claimed_at END, last_attempt_at = ?3
		WHERE seq = ?`
	sqlBlockRow = `UPDATE outbox SET state = 'blocked', last_error = ?, lease_owner = NULL, lease_until = 0, fence = fence + 1
		WHERE seq = ?`
	sqlSettle = `UPDATE outbox SET state = ?1, remote_id = ?2, last_error = ?3, sent_at = ?4,
		next_attempt_at = CASE WHEN ?1 = 'pending' THEN ?5 ELSE next_attempt_at END, retry_hinted = ?8, lease_owner = NULL, lease_until = 0
		WHERE seq = ?6 AND state = 'pending' AND fence = ?7`
	sqlLocalError = `UPDATE outbox SET last_error = ? WHERE seq = ? AND state = 'pending' AND fence = ?`
)

// claimQueries are the queries a claim prepares: finding a row, or when
// the next one is due, and claiming it. Blocking a row and recording a
// larger budget are rare, and parsed when they run: a handle opened at
// every restart prepares only what it will most likely run.
var claimQueries = []string{sqlEligible, sqlNextDue, sqlClaimRow}

// Claim is a row a worker holds a lease on: the send that must follow,
// and the fence its settle must still find.
type Claim struct {
	Seq     int64 // the row's place in the outbox
	Key     string
	Payload string
	Attempt int       // the attempt this claim counted
	Fence   int64     // the row's fence after the claim
	SendBy  time.Time // the claim's time plus the send timeout: no send starts later
	// TookOver names the other worker whose lease on the row had run out
	// when this claim took it; empty when the row was free.
	TookOver string
	// Handle is an outbox's own token for the claim (a message id, a
	// receipt), carried from ClaimNext to Send and Settle; this package's
	// outbox needs none.
	Handle any

	note *replayNote // what the receiver said of its answer (NoteReplay)
}

// Recover releases every lease held under this Outbox's worker name,
// adding one to each row's fence: a worker that starts, or starts again
// after a crash, calls it before its first claim, since nothing it had in
// flight survived, and a zombie with the same name can then no longer
// settle. It returns how many leases it released.
func (o *Outbox) Recover(ctx context.Context) (int, error) {
	n := 0
	err := o.q.write(ctx, "releasing leases", []string{sqlRelease}, func(ctx context.Context, tx *sql.Tx, q *statements) error {
		res, err := q.execResult(ctx, tx, sqlRelease, o.opts.Worker)
		if err != nil {
			return driverError("releasing leases", err)
		}
		released, err := res.RowsAffected()
		n = int(released)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// ReleaseGone releases, as Recover does for this worker's own name,
// every lease held by a worker that gone says is gone for good: a worker
// of a process that died, whose name no worker will start under again,
// and whose leases would otherwise keep its rows from every other worker
// until they run out. gone is asked once for each worker that holds a
// lease; it must say true only of a worker that can no longer send, so
// that no live worker's lease is released (its settle would go stale and
// its attempt be spent). It returns how many leases it released, by
// worker.
func (o *Outbox) ReleaseGone(ctx context.Context, gone func(worker string) bool) (map[string]int, error) {
	var released map[string]int
	err := o.q.write(ctx, "releasing the leases of workers gone", []string{sqlLeaseOwners, sqlRelease}, func(ctx context.Context, tx *sql.Tx, q *statements) error {
		released = map[string]int{}
		rows, err := q.query(ctx, tx, sqlLeaseOwners)
		if err != nil {
			return driverError("reading the lease holders", err)
		}
		var owners []string
		for rows.Next() {
			var owner string
			if err := rows.Scan(&owner); err != nil {
				rows.Close()
				return driverError("reading the lease holders", err)
			}
			owners = append(owners, owner)
		}
		if err := rows.Close(); err != nil {
			return driverError("reading the lease holders", err)
		}
		for _, owner := range owners {
			if owner == o.opts.Worker || !gone(owner) {
				continue
			}
			res, err := q.execResult(ctx, tx, sqlRelease, owner)
			if err != nil {
				return driverError("releasing leases", err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return driverError("releasing leases", err)
			}
			released[owner] = int(n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return released, nil
}

// ClaimNext takes the oldest eligible row in one transaction, as the spec
// says: eligible is pending, due (next_attempt_at ≤ now) and not leased
// by a live lease. A row whose budget is spent, whose time budget
// (MaxAge) ran out, or whose receiver may have forgotten its key
// (retention) is blocked instead, and nothing is to be sent; otherwise the
// attempt is counted, the fence raised and the lease taken, and the
// Delivery is ResultPending: Send must follow. retention is the
// receiver's, 0 for forever.
func (o *Outbox) ClaimNext(ctx context.Context, retention time.Duration) (Claim, Delivery, error) {
	cl := o.claiming(retention)
	return cl.done(o.q.write(ctx, "claiming a row", claimQueries, cl.run))
}

// claiming is one claim of the next row: the body of its transaction
// (run) and what it came to (done), so that a claim can share its
// transaction with a settle (settleThenClaim).
type claiming struct {
	o            *Outbox
	retention    time.Duration
	recordBudget bool // this claim records a budget above the default, if it counts an attempt
	c            Claim
	d            Delivery
}

// claiming starts a claim of the next row, under the receiver's
// retention.
func (o *Outbox) claiming(retention time.Duration) *claiming {
	return &claiming{o: o, retention: retention, recordBudget: o.opts.MaxAttempts > DefaultMaxAttempts && !o.budgetRecorded.Load()}
}

// run is the claim's transaction body (see ClaimNext).
func (cl *claiming) run(ctx context.Context, tx *sql.Tx, q *statements) error {
	o, c := cl.o, &cl.c
	*c, cl.d = Claim{}, Delivery{}
	now := millis(o.opts.Harness.Now())
	var lastError string
	var created, firstClaimed int64
	var holder string
	err := q.queryRow(ctx, tx, sqlEligible, []any{now}, &c.Seq, &c.Key, &c.Payload, &c.Attempt, &lastError, &created, &firstClaimed, &c.Fence, &holder)
	if errors.Is(err, sql.ErrNoRows) {
		var pending, earliest int64
		if err := q.queryRow(ctx, tx, sqlNextDue, nil, &pending, &earliest); err != nil {
			return driverError("finding the next eligible row", err)
		}
		cl.d = Delivery{Result: Idle, NextEligible: fromMillis(earliest)}
		return nil
	}
	if err != nil {
		return driverError("finding the oldest eligible row", err)
	}
	if holder != o.opts.Worker {
		c.TookOver = holder
	}
	cl.d = Delivery{Result: ResultPending, Key: c.Key, Attempts: c.Attempt, LastError: lastError, TookOver: c.TookOver}
	block := ""
	switch {
	case c.Attempt >= o.opts.MaxAttempts:
		block = LastErrorBudgetExhausted
	case o.opts.MaxAge > 0 && now >= created+o.opts.MaxAge.Milliseconds():
		block = LastErrorDeadline
	case cl.retention > 0 && firstClaimed != 0 && now >= firstClaimed+(cl.retention-o.opts.SendTimeout).Milliseconds():
		block = LastErrorRetentionExpired
	}
	if block != "" {
		cl.d.Result, cl.d.LastError = ResultBlocked, block
		if err := q.exec(ctx, tx, sqlBlockRow, block, c.Seq); err != nil {
			return driverError("blocking the row", err)
		}
		return writeHistory(ctx, tx, q, fromMillis(now), c.Key, o.opts.Worker, EventBlocked, "%s at a claim, after %d attempts: nothing sent", block, c.Attempt)
	}
	c.Attempt++
	c.note = &replayNote{}
	c.Fence++
	c.SendBy = fromMillis(now).Add(o.opts.SendTimeout)
	cl.d.Attempts = c.Attempt
	leaseUntil := now + o.opts.Lease.Milliseconds()
	if err := q.exec(ctx, tx, sqlClaimRow, o.opts.Worker, leaseUntil, now, c.Seq); err != nil {
		return driverError("counting the attempt", err)
	}
	if err := writeHistory(ctx, tx, q, fromMillis(now), c.Key, o.opts.Worker, EventClaim, "attempt %d of %d counted, fence %d", c.Attempt, o.opts.MaxAttempts, c.Fence); err != nil {
		return err
	}
	if cl.recordBudget {
		return driverError("recording the attempt budget", q.exec(ctx, tx, sqlRaiseBudget, strconv.Itoa(o.opts.MaxAttempts)))
	}
	return nil
}

// done is what the claim came to, given how its transaction ended.
func (cl *claiming) done(err error) (Claim, Delivery, error) {
	if err != nil {
		return Claim{}, Delivery{}, err
	}
	if cl.recordBudget && cl.d.Result == ResultPending {
		cl.o.budgetRecorded.Store(true)
	}
	return cl.c, cl.d, nil
}

// NextDue is when the earliest pending row becomes eligible (due and
// not leased by a live lease), read in one statement outside any
// transaction; pending is false when no row is pending. It is what a
// ClaimNext that finds nothing says in Delivery.NextEligible, for the
// price of one read: a worker with nothing due reads it before each
// claim, instead of a write transaction that takes nothing, and a read
// goes through where a write would wait for the file (SQLite) or for a
// lock (PostgreSQL).
func (o *Outbox) NextDue(ctx context.Context) (due time.Time, pending bool, err error) {
	var n, earliest int64
	if err := o.q.queryRow(ctx, nil, sqlNextDue, nil, &n, &earliest); err != nil {
		return time.Time{}, false, driverError("reading when the next row is due", err)
	}
	return time.UnixMilli(earliest).UTC(), n > 0, nil
}

// Send sends c to r outside any transaction. The send must be over by
// the claim's time plus the send timeout: that is what makes the
// retention rule of ClaimNext safe. A worker that comes to send later (it
// was paused since the claim) sends nothing and returns ErrTransient.
func (o *Outbox) Send(ctx context.Context, c Claim, r Receiver) (int64, error) {
	left := c.SendBy.Sub(o.opts.Harness.Now())
	if left <= 0 {
		return 0, fmt.Errorf("%w: the claim of %s is older than the send timeout (%v); nothing was sent", ErrTransient, c.Key, o.opts.SendTimeout)
	}
	ctx, cancel := context.WithTimeout(withReplayNote(ctx, c.note), left)
	defer cancel()
	return r.CreateTask(ctx, c.Key, c.Payload)
}

// Settle records the answer of c's send in one transaction, fenced: only
// if the row is still pending and still carries c's fence. Otherwise the
// result is ResultStale and nothing is written. A task id makes the row
// sent; a transient failure keeps it pending with the backoff (the jitter
// drawn within the ceiling, or the receiver's RetryHint if longer), or
// blocks it on the last attempt; a key conflict or a rejection blocks it.
// Any other error is returned as an *AttemptError, with the cause as the
// row's last error and the lease left to run out.
func (o *Outbox) Settle(ctx context.Context, c Claim, taskID int64, sendErr error) (Delivery, error) {
	st, ok := o.settling(c, taskID, sendErr)
	if !ok {
		return st.d, o.attemptFailed(ctx, c, sendErr)
	}
	return st.done(ctx, o.q.write(ctx, "recording the delivery", settleQueries, st.run))
}

// settleQueries are the queries a settle runs.
var settleQueries = []string{sqlSettle, sqlHistory}

// settleThenClaim records c's answer, as Settle does, and then claims the
// next row, as ClaimNext does, in one write transaction: a worker that
// pipelines its deliveries commits once for both. Each returns what it
// would have returned alone; when the transaction fails, both fail, and
// the answer's attempt is spent as Settle says.
func (o *Outbox) settleThenClaim(ctx context.Context, c Claim, taskID int64, sendErr error, retention time.Duration) (settledAs Delivery, settleErr error, next Claim, claimed Delivery, claimErr error) {
	st, ok := o.settling(c, taskID, sendErr)
	if !ok {
		settleErr = o.attemptFailed(ctx, c, sendErr)
		next, claimed, claimErr = o.ClaimNext(ctx, retention)
		return st.d, settleErr, next, claimed, claimErr
	}
	cl := o.claiming(retention)
	err := o.q.write(ctx, "recording the delivery and claiming a row", pipelineQueries, func(ctx context.Context, tx *sql.Tx, q *statements) error {
		if err := st.run(ctx, tx, q); err != nil {
			return err
		}
		return cl.run(ctx, tx, q)
	})
	settledAs, settleErr = st.done(ctx, relabel(err, "recording the delivery"))
	next, claimed, claimErr = cl.done(relabel(err, "claiming a row"))
	return settledAs, settleErr, next, claimed, claimErr
}

// pipelineQueries are the queries of settleThenClaim.
var pipelineQueries = slices.Concat(settleQueries, claimQueries)

// relabel is err, the failure of a write shared by several, said as the
// failure of the one that was doing what doing says.
func relabel(err error, doing string) error {
	var de *DatabaseError
	if errors.As(err, &de) {
		again := *de
		again.Doing = doing
		return &again
	}
	return err
}

// settling is one settle of a claim's answer: what it writes, worked out
// before its transaction, the body of that transaction (run), and what
// it came to (done).
type settling struct {
	o           *Outbox
	c           Claim
	taskID      int64
	sendErr     error
	d           Delivery
	now         time.Time
	nextAttempt int64
	hinted      bool // the next attempt waits for the receiver's retry hint
	stale       bool
}

// settling works out what c's answer writes; ok is false when the answer
// is no outcome of the send (a local failure), which writes none: its
// Delivery is then d.
func (o *Outbox) settling(c Claim, taskID int64, sendErr error) (st *settling, ok bool) {
	st = &settling{o: o, c: c, taskID: taskID, sendErr: sendErr, now: o.opts.Harness.Now(),
		d: Delivery{Result: ResultPending, Key: c.Key, Attempts: c.Attempt, TookOver: c.TookOver}}
	switch {
	case sendErr == nil:
		st.d.Result, st.d.RemoteID = ResultSent, taskID
	case errors.Is(sendErr, ErrTransient):
		st.d.LastError = LastErrorTransient
		if c.Attempt >= o.opts.MaxAttempts {
			st.d.Result = ResultBlocked
			break
		}
		wait, hinted := o.opts.retryWait(c.Attempt, sendErr)
		st.nextAttempt, st.hinted = millis(st.now.Add(wait)), hinted
		st.d.Backoff = wait
	case errors.Is(sendErr, ErrKeyConflict):
		st.d.Result, st.d.LastError = ResultBlocked, LastErrorConflict
	case errors.Is(sendErr, ErrRejected):
		st.d.Result, st.d.LastError = ResultBlocked, LastErrorRejected
	default:
		return st, false
	}
	return st, true
}

// run is the settle's transaction body (see Settle).
func (st *settling) run(ctx context.Context, tx *sql.Tx, q *statements) error {
	o, c, d, now := st.o, st.c, st.d, st.now
	var remoteID, lastError any
	var sentAt int64
	if d.Result == ResultSent {
		remoteID, sentAt = d.RemoteID, millis(now)
	}
	if d.LastError != "" {
		lastError = d.LastError
	}
	hinted := 0
	if st.hinted {
		hinted = 1
	}
	res, err := q.execResult(ctx, tx, sqlSettle, string(d.state()), remoteID, lastError, sentAt, st.nextAttempt, c.Seq, c.Fence, hinted)
	if err != nil {
		return driverError("recording the delivery", err)
	}
	n, err := res.RowsAffected()
	if st.stale = n == 0; err != nil || st.stale {
		return err
	}
	switch {
	case d.Result == ResultSent:
		if c.note != nil && c.note.replayed.Load() {
			return writeHistory(ctx, tx, q, now, c.Key, o.opts.Worker, EventSent, "attempt %d: CRM task %d, a replay: the receiver had the task from an earlier attempt whose answer was lost", c.Attempt, st.taskID)
		}
		return writeHistory(ctx, tx, q, now, c.Key, o.opts.Worker, EventSent, "attempt %d: CRM task %d", c.Attempt, st.taskID)
	case d.Result == ResultPending:
		return writeHistory(ctx, tx, q, now, c.Key, o.opts.Worker, EventRetry, "attempt %d: %s; the next attempt in %v", c.Attempt, OneLine(st.sendErr.Error()), d.Backoff.Round(time.Millisecond))
	}
	return writeHistory(ctx, tx, q, now, c.Key, o.opts.Worker, EventBlocked, "attempt %d: %s: %s", c.Attempt, d.LastError, OneLine(st.sendErr.Error()))
}

// done is what the settle came to, given how its transaction ended: a
// failure spends the attempt (see Settle).
func (st *settling) done(ctx context.Context, err error) (Delivery, error) {
	c := st.c
	if err != nil {
		return st.d, st.o.attemptFailed(ctx, c, err)
	}
	if st.stale {
		return Delivery{Result: ResultStale, Key: c.Key, Attempts: c.Attempt, TookOver: c.TookOver}, nil
	}
	return st.d, nil
}

// RetryWait is how long a row waits after a transient failure, sendErr,
// on the given attempt: the full-jitter backoff, drawn from Jitter within
// BackoffCeiling(BackoffBase, BackoffCap, attempt) (nothing with
// NoBackoff), or the receiver's RetryHint in sendErr when it is longer.
// Options must have their defaults (see WithDefaults).
func (opts Options) RetryWait(attempt int, sendErr error) time.Duration {
	wait, _ := opts.retryWait(attempt, sendErr)
	return wait
}

// retryWait is RetryWait, and whether the wait is the receiver's hint
// rather than the drawn backoff.
func (opts Options) retryWait(attempt int, sendErr error) (wait time.Duration, hinted bool) {
	if !opts.NoBackoff {
		ceiling := BackoffCeiling(opts.BackoffBase, opts.BackoffCap, attempt)
		wait = max(0, min(opts.Harness.Jitter(ceiling), ceiling))
	}
	var hint *RetryHint
	if errors.As(sendErr, &hint) && hint.After > wait {
		return hint.After, true
	}
	return wait, false
}

// BackoffCeiling is min(cap, base·2^(n−1)): the most a retry after
// attempt n waits before the receiver's own hint.
func BackoffCeiling(base, cap time.Duration, n int) time.Duration {
	c := base
	for i := 1; i < n && c < cap; i++ {
		c *= 2
	}
	return min(c, cap)
}

// cryptoJitter returns a uniform jitter source seeded from crypto/rand.
func cryptoJitter() func(time.Duration) time.Duration {
	var seed [32]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails on supported platforms
	r := mrand.New(mrand.NewChaCha8(seed))
	var mu sync.Mutex
	return func(ceiling time.Duration) time.Duration {
		if ceiling <= 0 {
			return 0
		}
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(r.Int64N(int64(ceiling) + 1))
	}
}

// DeliverOne makes one delivery: ClaimNext, Send and Settle, as the spec says.
// It counts the attempt and commits before sending, sends outside any
// local transaction, and records the answer in a new, fenced transaction.
// The receiver's retention comes from r if it is a Retainer, else from
// Options.Retention.
//
// A failure after the attempt is committed is returned as an
// *AttemptError wrapping the cause (see Settle). An error from the Hook, a
// simulated crash, is returned unchanged and nothing more is written, as
// after a real crash.
func (o *Outbox) DeliverOne(ctx context.Context, r Receiver) (Delivery, error) {
	if r == nil {
		return Delivery{}, invalid("receiver is nil")
	}
	retention := o.opts.Retention
	if rt, ok := r.(Retainer); ok {
		retention = rt.Retention()
	}
	c, d, err := o.ClaimNext(ctx, retention)
	if err != nil || d.Result != ResultPending {
		return d, err
	}
	if err := o.opts.Harness.Hook.pass(PointBeforeSend); err != nil {
		return d, err
	}
	taskID, sendErr := o.Send(ctx, c, r)
	if err := o.opts.Harness.Hook.pass(PointAfterReply); err != nil {
		return d, err
	}
	return o.Settle(ctx, c, taskID, sendErr)
}

// attemptFailed records, if the database takes it and the row still
// carries c's fence, the cause of a failure after c's attempt was counted
// as the row's last error, and returns the error that says the attempt is
// spent.
func (o *Outbox) attemptFailed(ctx context.Context, c Claim, cause error) error {
	// Best effort: when the app database itself failed, this fails too,
	// and the returned error still says what happened. It is written even
	// when ctx was cancelled: an interrupt is a cause worth recording.
	ctx = context.WithoutCancel(ctx)
	_ = o.q.write(ctx, "recording the cause", []string{sqlLocalError, sqlHistory}, func(ctx context.Context, tx *sql.Tx, q *statements) error {
		res, err := q.execResult(ctx, tx, sqlLocalError, localCause(cause), c.Seq, c.Fence)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		return writeHistory(ctx, tx, q, o.opts.Harness.Now(), c.Key, o.opts.Worker, EventFailed, "attempt %d failed here after it was counted: %s", c.Attempt, localCause(cause))
	})
	return &AttemptError{Key: c.Key, Attempt: c.Attempt, MaxAttempts: o.opts.MaxAttempts, Err: cause}
}

// state is the row state a settled result leaves.
func (d Delivery) state() State {
	switch d.Result {
	case ResultSent:
		return Sent
	case ResultBlocked:
		return Blocked
	}
	return Pending
}
