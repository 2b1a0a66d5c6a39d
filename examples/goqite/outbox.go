// Package outbox is a transactional outbox built on goqite
// (maragu.dev/goqite), a message queue in a SQLite or PostgreSQL table,
// as an app outside the handoff module would write it, through goqite's
// public API: the approval and its goqite message are written in one
// transaction (SendAndGetIDTx), a worker receives the message
// (ReceiveTx), whose visibility timeout is its lease, sends the action's
// stable key to the receiver, and records the answer in the app's own
// table while it deletes the message (DeleteTx) or hides it for the
// backoff (ExtendTx) in the same transaction. Its tests verify it with
// the handoff harness (handoff.Verify).
package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx" driver, as goqite's README uses it
	"github.com/outboxlab/handoff/system"
	"maragu.dev/goqite"
	_ "modernc.org/sqlite" // database/sql's "sqlite" driver
)

// Queue is the name of the goqite queue that carries the approvals.
const Queue = "handoff"

// Variant says how the app uses goqite where a user has a choice. The
// zero value is goqite used as its documentation reads; Recommended
// makes the three choices that the harness shows are needed.
type Variant struct {
	// SpareReceive sets goqite's MaxReceive to the attempt budget plus
	// one, so that the receive after the last attempt still returns the
	// message and the app blocks the row. Without it MaxReceive is the
	// budget, and a message whose attempts all ended in crashes is never
	// returned again: its row stays pending, blocked for nobody.
	SpareReceive bool
	// Fenced makes a settle write only under the fence its claim took,
	// a counter of the app's own: goqite's DeleteTx and ExtendTx take a
	// message id and no receipt, so a worker whose visibility timeout
	// ran out would settle, delete or hide a message that another worker
	// received since.
	Fenced bool
	// Ordered sends every message with minus its row's number as
	// priority, so that goqite (order by priority desc, created) hands
	// rows out in insertion order, a requeued row too. Without it a
	// requeued row's new message goes behind every message created
	// before it.
	Ordered bool
}

// Recommended is the variant that holds what the harness checks.
var Recommended = Variant{SpareReceive: true, Fenced: true, Ordered: true}

// Clock runs f at the instant now: every time.Now that goqite reads in f
// must return now. goqite reads the wall clock itself (time.Now) for
// every send, receive and extend; a caller with a clock of its own (the
// harness's virtual one) passes a Clock that makes time.Now read it, as
// a testing/synctest bubble does. nil runs f on the wall clock.
type Clock func(now time.Time, f func())

// App is the app database: approvals, the app's outbox rows, and the
// goqite queue, with one worker's handle on them.
type App struct {
	db      *sql.DB
	q       *goqite.Queue
	f       flavor
	opts    system.Options
	variant Variant
	clock   Clock
	// maxReceive is goqite's receive budget.
	maxReceive int
}

// Open opens the app database at target, a SQLite file or a
// postgres:// URL whose schema parameter names an existing schema,
// creating goqite's table and the app's own. opts gives the worker's
// name, clock, fault hook, attempt budget, lease (goqite's visibility
// timeout), send timeout, backoff, time budget and the receiver's
// retention; clock makes goqite read opts.Harness.Now (see Clock).
func Open(ctx context.Context, target string, opts system.Options, v Variant, clock Clock) (*App, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	db, f, err := openDB(target)
	if err != nil {
		return nil, err
	}
	if err := makeTables(ctx, db, f); err != nil {
		db.Close()
		return nil, err
	}
	if clock == nil {
		clock = func(_ time.Time, f func()) { f() }
	}
	a := &App{db: db, f: f, opts: opts, variant: v, clock: clock, maxReceive: opts.MaxAttempts}
	if v.SpareReceive {
		a.maxReceive++
	}
	a.q = goqite.New(goqite.NewOpts{DB: db, Name: Queue, MaxReceive: a.maxReceive, Timeout: opts.Lease, SQLFlavor: f.goqite})
	return a, nil
}

// openDB opens the database at target with a small pool: on SQLite a
// file whose transactions begin immediately, on PostgreSQL the URL's
// schema on the search path (system.SplitPostgres).
func openDB(target string) (*sql.DB, flavor, error) {
	driver, source, f := "sqlite", "file:"+target+"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)", sqliteFlavor
	if system.IsPostgres(target) {
		connect, _, err := system.SplitPostgres(target)
		if err != nil {
			return nil, flavor{}, err
		}
		driver, source, f = "pgx", connect, postgresFlavor
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		return nil, flavor{}, err
	}
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	return db, f, nil
}

// makeTables creates goqite's table, once, and the app's own.
func makeTables(ctx context.Context, db *sql.DB, f flavor) error {
	rows, err := db.QueryContext(ctx, f.tables)
	if err != nil {
		return fmt.Errorf("outbox: listing tables: %w", err)
	}
	found := false
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		found = found || name == "goqite"
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	if !found {
		if _, err := db.ExecContext(ctx, f.goqiteSchema); err != nil {
			return fmt.Errorf("outbox: creating goqite's table: %w", err)
		}
	}
	if _, err := db.ExecContext(ctx, f.appSchema); err != nil {
		return fmt.Errorf("outbox: creating the app's tables: %w", err)
	}
	return nil
}

// Close closes the database handle.
func (a *App) Close() error { return a.db.Close() }

// pass reports fault point p to the hook: an error means the process
// dies there.
func (a *App) pass(p system.FaultPoint) error {
	if a.opts.Harness.Hook == nil {
		return nil
	}
	return a.opts.Harness.Hook(p)
}

// inTx runs f in one transaction at the instant now, on goqite's clock
// too, and commits when f returns nil. f gets a context without
// cancellation: a Clock may run it where the caller's context's channels
// must not be touched. On PostgreSQL the transaction is serializable, as
// goqite's own Receive begins it: at read committed two concurrent
// receives can return the same message (see TestPostgresReceivesTwice).
// A serialization failure rolls it back, and it runs again.
func (a *App) inTx(ctx context.Context, now time.Time, f func(ctx context.Context, tx *sql.Tx) error) error {
	var err error
	for range maxRuns {
		if err = a.inTxOnce(ctx, now, f); !serializationFailure(err) {
			return err
		}
	}
	return err
}

// maxRuns is how often inTx runs a transaction that fails to serialize.
const maxRuns = 10

func (a *App) inTxOnce(ctx context.Context, now time.Time, f func(ctx context.Context, tx *sql.Tx) error) error {
	var err error
	var panicked any
	a.clock(now, func() {
		defer func() { panicked = recover() }()
		ctx := context.WithoutCancel(ctx)
		var tx *sql.Tx
		if tx, err = a.db.BeginTx(ctx, a.f.txOptions); err != nil {
			return
		}
		if err = f(ctx, tx); err != nil {
			tx.Rollback()
			return
		}
		err = tx.Commit()
	})
	if panicked != nil {
		panic(panicked)
	}
	return err
}

// serializationFailure reports whether err is PostgreSQL's serialization
// failure (SQLSTATE 40001): nothing of the transaction was written.
func serializationFailure(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40001"
}

func (a *App) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	return tx.ExecContext(ctx, a.f.sql(query), args...)
}

func (a *App) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	return tx.QueryRowContext(ctx, a.f.sql(query), args...)
}

// priority is the goqite priority of the message of row seq.
func (a *App) priority(seq int64) int {
	if a.variant.Ordered {
		return int(-seq)
	}
	return 0
}

// RecordApproval records the approval, its outbox row and its goqite
// message in one transaction. An approval repeated with the same payload
// changes nothing; one with another payload is a key conflict.
func (a *App) RecordApproval(ctx context.Context, caseID, title string) (string, error) {
	ap, err := system.NewApproval(caseID, title) // SPEC's validation, key and canonical payload
	if err != nil {
		return "", err
	}
	now := a.opts.Harness.Now()
	err = a.inTx(ctx, now, func(ctx context.Context, tx *sql.Tx) error {
		var held string
		switch err := a.queryRow(ctx, tx, sqlFindApproval, ap.Key).Scan(&held); {
		case err == nil && held == ap.Payload:
			return nil
		case err == nil:
			return fmt.Errorf("%w: %s holds another payload", system.ErrKeyConflict, ap.Key)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if _, err := a.exec(ctx, tx, sqlInsertApproval, ap.Key, ap.CaseID, a.f.title(ap.Title), ap.Payload); err != nil {
			return err
		}
		if err := a.pass(system.PointBetweenApprovalInserts); err != nil {
			return err
		}
		var seq int64
		if err := a.queryRow(ctx, tx, sqlInsertRow, ap.Key, now.UnixMilli()).Scan(&seq); err != nil {
			return err
		}
		id, err := a.q.SendAndGetIDTx(ctx, tx, goqite.Message{Body: []byte(ap.Key), Priority: a.priority(seq)})
		if err != nil {
			return err
		}
		_, err = a.exec(ctx, tx, sqlSetMessage, string(id), seq)
		return err
	})
	if err != nil {
		return "", err
	}
	return ap.Key, nil
}

// row is an outbox row as a claim or an operator action reads it.
type row struct {
	seq                   int64
	key                   string
	state                 system.State
	attempts              int
	message, lastError    string
	created, firstClaimed int64
	leaseOwner            string
	fence                 int64
	payload               string
	visibleAt             int64 // goqite's timeout of the row's message; 0 when it has none
}

// readRow reads key's row in tx, or sql.ErrNoRows.
func (a *App) readRow(ctx context.Context, tx *sql.Tx, key string) (row, error) {
	r := row{key: key}
	var timeout any
	err := a.queryRow(ctx, tx, sqlRow, key).Scan(&r.seq, &r.state, &r.attempts, &r.message, &r.lastError, &r.created,
		&r.firstClaimed, &r.leaseOwner, &r.fence, &r.payload, &timeout)
	if err != nil {
		return r, err
	}
	r.visibleAt, err = goqiteTime(timeout)
	return r, err
}

// ClaimNext receives the next visible message from goqite, which hides it
// for the lease, and in the same transaction counts the attempt on its
// row and takes the lease under this worker's name; or blocks the row
// (attempt budget, time budget, the receiver's retention) and deletes
// its message. The claim's Handle is the message's id: goqite deletes
// and extends by id.
func (a *App) ClaimNext(ctx context.Context) (system.Claim, system.Delivery, error) {
	var c system.Claim
	var d system.Delivery
	now := a.opts.Harness.Now()
	ms := now.UnixMilli()
	err := a.inTx(ctx, now, func(ctx context.Context, tx *sql.Tx) error {
		for {
			m, err := a.q.ReceiveTx(ctx, tx)
			if err != nil {
				return err
			}
			if m == nil {
				var next any
				if err := a.queryRow(ctx, tx, sqlNextVisible, Queue, a.maxReceive).Scan(&next); err != nil {
					return err
				}
				at, err := goqiteTime(next)
				d = system.Delivery{Result: system.Idle}
				if at != 0 {
					d.NextEligible = time.UnixMilli(at).UTC()
				}
				return err
			}
			key := string(m.Body)
			r, err := a.readRow(ctx, tx, key)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if err != nil || r.state != system.Pending || r.message != string(m.ID) {
				// A message whose row was settled or requeued without it:
				// nothing to send for it.
				if err := a.q.DeleteTx(ctx, tx, m.ID); err != nil {
					return err
				}
				continue
			}
			d = system.Delivery{Result: system.ResultPending, Key: key, Attempts: r.attempts, LastError: r.lastError}
			block := ""
			switch {
			case r.attempts >= a.opts.MaxAttempts:
				block = system.LastErrorBudgetExhausted
			case a.opts.MaxAge > 0 && ms >= r.created+a.opts.MaxAge.Milliseconds():
				block = system.LastErrorDeadline
			case a.pastRetention(r, now):
				block = system.LastErrorRetentionExpired
			}
			if block != "" {
				d.Result, d.LastError = system.ResultBlocked, block
				if _, err := a.exec(ctx, tx, sqlBlock, block, r.seq); err != nil {
					return err
				}
				return a.q.DeleteTx(ctx, tx, m.ID)
			}
			if _, err := a.exec(ctx, tx, sqlClaim, a.opts.Worker, ms, r.seq); err != nil {
				return err
			}
			c = system.Claim{Seq: r.seq, Key: key, Payload: r.payload, Attempt: r.attempts + 1, Fence: r.fence + 1,
				SendBy: now.Add(a.opts.SendTimeout), Handle: m.ID}
			d.Attempts = c.Attempt
			return nil
		}
	})
	if err != nil {
		return system.Claim{}, system.Delivery{}, err
	}
	return c, d, nil
}

// pastRetention reports whether a send of r's key at now could reach a
// receiver that has forgotten it: now is at or after its first claim plus
// the receiver's retention minus the send timeout.
func (a *App) pastRetention(r row, now time.Time) bool {
	return a.opts.Retention > 0 && r.firstClaimed != 0 && now.UnixMilli() >= r.firstClaimed+(a.opts.Retention-a.opts.SendTimeout).Milliseconds()
}

// Send sends c's key and payload to r, outside any transaction, if the
// claim is younger than the send timeout; a later send could reach a
// receiver past its retention, so it sends nothing and fails transiently.
func (a *App) Send(ctx context.Context, c system.Claim, r system.Receiver) (int64, error) {
	left := c.SendBy.Sub(a.opts.Harness.Now())
	if left <= 0 {
		return 0, fmt.Errorf("%w: the claim of %s is older than the send timeout; nothing was sent", system.ErrTransient, c.Key)
	}
	ctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	return r.CreateTask(ctx, c.Key, c.Payload)
}

// Settle records the answer to c's send on its row and, in the same
// transaction, deletes the message (sent, blocked) or hides it until the
// next attempt (ExtendTx by the backoff). It writes only if the row is
// still pending (and, Fenced, still carries c's fence); otherwise the
// result is stale and goqite is not touched. An error that is no answer
// of the receiver's is returned as a *system.AttemptError, and the lease
// runs out.
func (a *App) Settle(ctx context.Context, c system.Claim, taskID int64, sendErr error) (system.Delivery, error) {
	id, ok := c.Handle.(goqite.ID)
	if !ok {
		return system.Delivery{}, fmt.Errorf("outbox: the claim of %s holds no goqite message", c.Key)
	}
	d := system.Delivery{Result: system.ResultPending, Key: c.Key, Attempts: c.Attempt}
	var wait time.Duration
	switch {
	case sendErr == nil:
		d.Result, d.RemoteID = system.ResultSent, taskID
	case errors.Is(sendErr, system.ErrTransient):
		d.LastError = system.LastErrorTransient
		if c.Attempt >= a.opts.MaxAttempts {
			d.Result = system.ResultBlocked
			break
		}
		wait = a.opts.RetryWait(c.Attempt, sendErr)
		d.Backoff = wait
	case errors.Is(sendErr, system.ErrKeyConflict):
		d.Result, d.LastError = system.ResultBlocked, system.LastErrorConflict
	case errors.Is(sendErr, system.ErrRejected):
		d.Result, d.LastError = system.ResultBlocked, system.LastErrorRejected
	default:
		return d, &system.AttemptError{Key: c.Key, Attempt: c.Attempt, MaxAttempts: a.opts.MaxAttempts, Err: sendErr}
	}
	state := map[system.Result]system.State{system.ResultSent: system.Sent, system.ResultPending: system.Pending, system.ResultBlocked: system.Blocked}[d.Result]
	var task, lastError any
	if d.Result == system.ResultSent {
		task = taskID
	}
	if d.LastError != "" {
		lastError = d.LastError
	}
	now := a.opts.Harness.Now()
	query, args := sqlSettle, []any{string(state), task, lastError, now.Add(wait).UnixMilli(), c.Seq}
	if a.variant.Fenced {
		query, args = sqlSettleFenced, append(args, c.Fence)
	}
	stale := false
	err := a.inTx(ctx, now, func(ctx context.Context, tx *sql.Tx) error {
		res, err := a.exec(ctx, tx, query, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if stale = n == 0; err != nil || stale {
			return err
		}
		if d.Result == system.ResultPending {
			return a.q.ExtendTx(ctx, tx, id, wait)
		}
		return a.q.DeleteTx(ctx, tx, id)
	})
	if err != nil {
		return d, &system.AttemptError{Key: c.Key, Attempt: c.Attempt, MaxAttempts: a.opts.MaxAttempts, Err: err}
	}
	if stale {
		return system.Delivery{Result: system.ResultStale, Key: c.Key, Attempts: c.Attempt}, nil
	}
	return d, nil
}

// DeliverOne makes one delivery: ClaimNext, Send and Settle, passing the
// fault points before the send and after the reply.
func (a *App) DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error) {
	c, d, err := a.ClaimNext(ctx)
	if err != nil || d.Result != system.ResultPending {
		return d, err
	}
	if err := a.pass(system.PointBeforeSend); err != nil {
		return d, err
	}
	taskID, sendErr := a.Send(ctx, c, r)
	if err := a.pass(system.PointAfterReply); err != nil {
		return d, err
	}
	return a.Settle(ctx, c, taskID, sendErr)
}

// Recover makes visible again (ExtendTx by 0) the message of every row
// this worker's name holds, and gives up the lease: a worker that starts
// again has nothing in flight. It returns how many it released.
func (a *App) Recover(ctx context.Context) (int, error) {
	n := 0
	err := a.inTx(ctx, a.opts.Harness.Now(), func(ctx context.Context, tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, a.f.sql(sqlHeld), a.opts.Worker)
		if err != nil {
			return err
		}
		type held struct {
			seq     int64
			message string
		}
		var all []held
		for rows.Next() {
			var h held
			if err := rows.Scan(&h.seq, &h.message); err != nil {
				rows.Close()
				return err
			}
			all = append(all, h)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		for _, h := range all {
			if err := a.q.ExtendTx(ctx, tx, goqite.ID(h.message), 0); err != nil {
				return err
			}
			if _, err := a.exec(ctx, tx, sqlRelease, h.seq); err != nil {
				return err
			}
		}
		n = len(all)
		return nil
	})
	return n, err
}

// Snapshot reads every approval and outbox row in insertion order. A
// held row's lease ends when goqite shows its message again: the
// message's timeout.
func (a *App) Snapshot(ctx context.Context) (system.Snapshot, error) {
	var s system.Snapshot
	rows, err := a.db.QueryContext(ctx, a.f.sql(sqlApprovals))
	if err != nil {
		return s, err
	}
	for rows.Next() {
		var ap system.Approval
		var title []byte
		if err := rows.Scan(&ap.Key, &ap.CaseID, &title, &ap.Payload); err != nil {
			rows.Close()
			return s, err
		}
		ap.Title = string(title)
		s.Approvals = append(s.Approvals, ap)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return s, err
	}
	rows, err = a.db.QueryContext(ctx, a.f.sql(sqlRows))
	if err != nil {
		return s, err
	}
	defer rows.Close()
	for rows.Next() {
		var r system.Row
		var created, next, first int64
		var timeout any
		if err := rows.Scan(&r.Key, &r.State, &r.Attempts, &r.RemoteID, &r.LastError, &created, &next, &first,
			&r.LeaseOwner, &r.Fence, &timeout); err != nil {
			return s, err
		}
		r.CreatedAt, r.NextAttemptAt, r.FirstClaimedAt = fromMillis(created), fromMillis(next), fromMillis(first)
		if r.LeaseOwner != "" {
			until, err := goqiteTime(timeout)
			if err != nil {
				return s, err
			}
			r.LeaseUntil = fromMillis(until)
		}
		s.Outbox = append(s.Outbox, r)
	}
	return s, rows.Err()
}

// fromMillis is the time ms stands for, zero for 0.
func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
