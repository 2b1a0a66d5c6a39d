package system

import (
	"context"
	"database/sql"
	"time"
)

// HastenWithin is how soon, at most, Hasten makes rows due: each at its
// own jitter within it, so that the workers of many processes do not
// all send at once to a receiver that has just come back.
const HastenWithin = 5 * time.Second

// The queries of Hasten and RetryNow: the rows waiting in backoff (a
// leased row is not one: it was due when it was claimed), those of them
// whose wait the worker drew after a transient failure, and the move of
// one's next attempt under the fence read.
const (
	sqlWaiting = `SELECT seq, key, fence FROM outbox
		WHERE state = 'pending' AND next_attempt_at > ?1
		ORDER BY seq`
	sqlBackingOff = `SELECT seq, key, fence FROM outbox
		WHERE state = 'pending' AND next_attempt_at > ?1 AND last_error = ?2 AND retry_hinted = 0
		ORDER BY seq`
	sqlHasten   = `UPDATE outbox SET next_attempt_at = ?1 WHERE seq = ?2 AND fence = ?3 AND state = 'pending' AND next_attempt_at > ?1`
	sqlRetryNow = `UPDATE outbox SET next_attempt_at = ?1, fence = fence + 1 WHERE seq = ?2 AND fence = ?3 AND state = 'pending'`
)

// waitingRow is a row waiting in backoff.
type waitingRow struct {
	seq   int64
	key   string
	fence int64
}

// waiting reads the rows that query (sqlWaiting or sqlBackingOff, with
// args) finds waiting.
func waiting(ctx context.Context, tx *sql.Tx, q *statements, query string, args ...any) ([]waitingRow, error) {
	rows, err := q.query(ctx, tx, query, args...)
	if err != nil {
		return nil, driverError("reading the rows that wait", err)
	}
	defer rows.Close()
	var ws []waitingRow
	for rows.Next() {
		var w waitingRow
		if err := rows.Scan(&w.seq, &w.key, &w.fence); err != nil {
			return nil, driverError("reading the rows that wait", err)
		}
		ws = append(ws, w)
	}
	return ws, driverError("reading the rows that wait", rows.Err())
}

// Hasten makes every row that waits in backoff after a transient
// failure due within HastenWithin: a worker calls it when the receiver
// answers again after failing, so that rows it pushed out by up to the
// backoff's cap go now, not minutes later. Each row's new time is the
// jitter drawn within HastenWithin (Options.Harness.Jitter); a row due
// sooner keeps its time, a leased row (due already) is left to its
// holder, and so is a row whose wait is the receiver's own retry hint
// (Retry-After), however short: the row records which its wait is. It is
// the worker's own scheduling: no fence moves, nothing is audited. It
// returns how many rows it moved.
func (o *Outbox) Hasten(ctx context.Context) (int, error) {
	// A read first, which waits for no writer: most answers find no row
	// waiting, and need no write transaction.
	ws, err := waiting(ctx, nil, o.q, sqlBackingOff, millis(o.opts.Harness.Now()), LastErrorTransient)
	if err != nil || len(ws) == 0 {
		return 0, err
	}
	n := 0
	err = o.q.write(ctx, "hastening the rows that wait", []string{sqlBackingOff, sqlHasten}, func(ctx context.Context, tx *sql.Tx, q *statements) error {
		n = 0
		now := o.opts.Harness.Now()
		ws, err := waiting(ctx, tx, q, sqlBackingOff, millis(now), LastErrorTransient)
		if err != nil {
			return err
		}
		for _, w := range ws {
			due := millis(now.Add(max(0, min(o.opts.Harness.Jitter(HastenWithin), HastenWithin))))
			res, err := q.execResult(ctx, tx, sqlHasten, due, w.seq, w.fence)
			if err != nil {
				return driverError("hastening "+w.key, err)
			}
			if moved, err := res.RowsAffected(); err == nil {
				n += int(moved)
			}
		}
		return nil
	})
	return n, err
}

// RetryNow is the operator action that makes every pending row that
// waits in backoff due now, whatever its last error, adding one to each
// row's fence and an audit line each, in one transaction: after an
// outage the person on call need not wait for the backoff. A leased row
// is due already, and left to its holder. It returns the keys it made due.
func (o *Outbox) RetryNow(ctx context.Context, actor, reason string) ([]string, error) {
	switch {
	case actor == "":
		return nil, invalid("the actor is empty: say who acts")
	case reason == "":
		return nil, invalid("the reason is empty: say why, for the audit log")
	}
	var keys []string
	err := o.q.write(ctx, "making the rows that wait due now", []string{sqlWaiting, sqlRetryNow, sqlAudit}, func(ctx context.Context, tx *sql.Tx, q *statements) error {
		keys = nil
		now := millis(o.opts.Harness.Now())
		ws, err := waiting(ctx, tx, q, sqlWaiting, now)
		if err != nil {
			return err
		}
		for _, w := range ws {
			if err := q.exec(ctx, tx, sqlRetryNow, now, w.seq, w.fence); err != nil {
				return driverError("retry-now "+w.key, err)
			}
			if err := q.exec(ctx, tx, sqlAudit, now, actor, string(ActionRetryNow), w.key, reason); err != nil {
				return driverError("writing the audit log", err)
			}
			keys = append(keys, w.key)
		}
		return nil
	})
	return keys, err
}
