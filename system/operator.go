package system

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The queries of operator actions. An action reads the row, decides in Go
// whether it takes it, and writes it under the fence it read, in one
// transaction.
const (
	sqlOperate = `UPDATE outbox SET state = ?1, attempts = ?2, remote_id = ?3, last_error = NULL,
		next_attempt_at = CASE WHEN ?1 = 'pending' THEN ?4 ELSE next_attempt_at END,
		first_claimed_at = ?5, sent_at = ?6, lease_owner = NULL, lease_until = 0, fence = fence + 1
		WHERE key = ?7 AND fence = ?8`
	sqlAudit    = `INSERT INTO audit (at, actor, action, key, reason) VALUES (?, ?, ?, ?, ?)`
	sqlAuditLog = `SELECT at, actor, action, key, reason FROM audit ORDER BY seq`
	// sqlLockRow reads the row an action decides on. In SQLite the write
	// transaction already holds the lock; PostgreSQL's says FOR UPDATE,
	// so that no claim or settle moves the row between read and write.
	sqlLockRow = `SELECT ` + rowColumns + ` WHERE o.key = ?1`
)

// Action names an operator action in the audit log.
type Action string

// The operator actions of the spec.
const (
	ActionRequeue         Action = "requeue"
	ActionReconcile       Action = "reconcile"
	ActionReconcileAbsent Action = "reconcile-absent"
	ActionRetryNow        Action = "retry-now"
)

// AuditEntry is one line of the audit log: who did what to which key,
// when and why.
type AuditEntry struct {
	At     time.Time
	Actor  string
	Action Action
	Key    string
	Reason string
}

// Requeue makes a blocked row pending again, with attempts 0, eligible now,
// the same key and payload (never a new key). It refuses any other state
// with ErrWrongState, and, once the receiver may have forgotten the key
// (now ≥ first_claimed_at + retention − SendTimeout), with ErrRetention:
// reconcile first. retention is the receiver's, 0 for forever.
func (o *Outbox) Requeue(ctx context.Context, key string, retention time.Duration, actor, reason string) error {
	return o.operate(ctx, ActionRequeue, key, actor, reason, func(r Row, now time.Time) (Row, error) {
		if r.State != Blocked {
			return r, fmt.Errorf("%w: %s is %s; requeue takes a blocked row", ErrWrongState, key, r.State)
		}
		if retention > 0 && !r.FirstClaimedAt.IsZero() && !now.Before(r.FirstClaimedAt.Add(retention-o.opts.SendTimeout)) {
			return r, fmt.Errorf("%w: %s was first claimed at %s and the receiver keeps keys for %v: check the CRM, then reconcile it (--remote-id N or --absent)",
				ErrRetention, key, r.FirstClaimedAt.Format(time.RFC3339), retention)
		}
		return Row{State: Pending, NextAttemptAt: now, FirstClaimedAt: r.FirstClaimedAt}, nil
	})
}

// Reconcile records that a person found task remoteID for key in the CRM:
// a blocked row, or a pending row without a live lease, becomes sent.
func (o *Outbox) Reconcile(ctx context.Context, key string, remoteID int64, actor, reason string) error {
	if remoteID < 1 {
		return invalid("remote id is %d, want a task id of 1 or more", remoteID)
	}
	return o.operate(ctx, ActionReconcile, key, actor, reason, func(r Row, now time.Time) (Row, error) {
		if err := reconcilable(r, now); err != nil {
			return r, err
		}
		return Row{State: Sent, Attempts: r.Attempts, RemoteID: remoteID, SentAt: now, FirstClaimedAt: r.FirstClaimedAt}, nil
	})
}

// ReconcileAbsent records that a person confirmed the CRM holds no task for
// key: a blocked row, or a pending row without a live lease, becomes
// pending with attempts 0, eligible now, and first_claimed_at cleared (the
// receiver's memory of the key starts afresh). Allowed past retention.
func (o *Outbox) ReconcileAbsent(ctx context.Context, key, actor, reason string) error {
	return o.operate(ctx, ActionReconcileAbsent, key, actor, reason, func(r Row, now time.Time) (Row, error) {
		if err := reconcilable(r, now); err != nil {
			return r, err
		}
		return Row{State: Pending, NextAttemptAt: now}, nil
	})
}

// reconcilable refuses a row a reconcile does not take: a sent one, or a
// pending one that a worker holds a live lease on.
func reconcilable(r Row, now time.Time) error {
	switch {
	case r.State == Sent:
		return fmt.Errorf("%w: %s is sent already (task %d)", ErrWrongState, r.Key, r.RemoteID)
	case r.State == Pending && r.LeaseOwner != "" && now.Before(r.LeaseUntil):
		return fmt.Errorf("%w: worker %s holds %s until %s; wait for it", ErrWrongState, r.LeaseOwner, r.Key, r.LeaseUntil.Format(time.RFC3339))
	}
	return nil
}

// operate runs one operator action in one transaction: it reads the row of
// key, lets decide say what the row becomes (or refuse), writes it under
// the fence it read with one more, and appends the audit entry.
func (o *Outbox) operate(ctx context.Context, action Action, key, actor, reason string, decide func(Row, time.Time) (Row, error)) error {
	switch {
	case actor == "":
		return invalid("the actor is empty: say who acts")
	case reason == "":
		return invalid("the reason is empty: say why, for the audit log")
	}
	return o.q.write(ctx, string(action)+" "+strconv.Quote(key), []string{sqlLockRow, sqlOperate, sqlAudit, sqlHistory}, func(ctx context.Context, tx *sql.Tx, q *statements) error {
		now := o.opts.Harness.Now()
		r, err := scanRow(q.row(ctx, tx, sqlLockRow, key))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: no outbox row for %q", ErrNotFound, key)
		}
		if err != nil {
			return driverError("reading the row of "+strconv.Quote(key), err)
		}
		next, err := decide(r, now)
		if err != nil {
			return err
		}
		var remoteID any
		if next.RemoteID != 0 {
			remoteID = next.RemoteID
		}
		if err := q.exec(ctx, tx, sqlOperate, string(next.State), next.Attempts, remoteID, millis0(next.NextAttemptAt),
			millis0(next.FirstClaimedAt), millis0(next.SentAt), key, r.Fence); err != nil {
			return driverError(string(action)+" "+strconv.Quote(key), err)
		}
		var cleared []string
		if r.Attempts != next.Attempts {
			cleared = append(cleared, fmt.Sprintf(clearedAttempts, r.Attempts))
		}
		if r.LastError != "" {
			cleared = append(cleared, "last error "+r.LastError)
		}
		if len(cleared) > 0 {
			if err := writeHistory(ctx, tx, q, now, key, actor, EventCleared, "%s of the %s row", strings.Join(cleared, " and "), r.State); err != nil {
				return err
			}
		}
		if err := writeHistory(ctx, tx, q, now, key, actor, action, "%s", reason); err != nil {
			return err
		}
		return driverError("writing the audit log", q.exec(ctx, tx, sqlAudit, millis(now), actor, string(action), key, reason))
	})
}

// millis0 is millis, but 0 for the zero time.
func millis0(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return millis(t)
}

// Audit reads the audit log, oldest first.
func (o *Outbox) Audit(ctx context.Context) ([]AuditEntry, error) {
	return o.readAudit(ctx, sqlAuditLog)
}

// readAudit reads the audit log's entries that query selects, with args.
func (o *Outbox) readAudit(ctx context.Context, query string, args ...any) ([]AuditEntry, error) {
	rows, err := o.q.query(ctx, nil, query, args...)
	if err != nil {
		return nil, driverError("reading the audit log", err)
	}
	defer rows.Close()
	var log []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var at int64
		if err := rows.Scan(&at, &e.Actor, &e.Action, &e.Key, &e.Reason); err != nil {
			return nil, driverError("reading the audit log", err)
		}
		e.At = fromMillis(at)
		log = append(log, e)
	}
	return log, driverError("reading the audit log", rows.Err())
}

// Stale returns the rows that need a person: every blocked row, and every
// pending row created more than olderThan ago, oldest first.
func (o *Outbox) Stale(ctx context.Context, olderThan time.Duration) ([]Row, error) {
	if olderThan < 0 {
		return nil, invalid("older-than is %v, want 0 or more", olderThan)
	}
	snap, err := o.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	now := o.opts.Harness.Now()
	var stale []Row
	for _, r := range snap.Outbox {
		if r.State == Blocked || r.State == Pending && now.Sub(r.CreatedAt) > olderThan {
			stale = append(stale, r)
		}
	}
	return stale, nil
}
