package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/outboxlab/handoff/system"
	"maragu.dev/goqite"
)

// operate runs a person's action on key's row in one transaction: change
// does it (goqite's side included), then the fence grows (in change's
// statement) and the audit log gets a line.
func (a *App) operate(ctx context.Context, action system.Action, key, actor, reason string,
	change func(ctx context.Context, tx *sql.Tx, r row, now time.Time) error) error {
	now := a.opts.Harness.Now()
	return a.inTx(ctx, now, func(ctx context.Context, tx *sql.Tx) error {
		r, err := a.readRow(ctx, tx, key)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: no outbox row for %q", system.ErrNotFound, key)
		}
		if err != nil {
			return err
		}
		if err := change(ctx, tx, r, now); err != nil {
			return err
		}
		_, err = a.exec(ctx, tx, sqlAudit, now.UnixMilli(), actor, string(action), key, reason)
		return err
	})
}

// retry makes r pending again with attempts 0, eligible now, through a
// new goqite message: goqite cannot set a message's receive count back,
// so the old one, if any, is deleted. forget clears first_claimed_at.
func (a *App) retry(ctx context.Context, tx *sql.Tx, r row, now time.Time, forget bool) error {
	if r.message != "" {
		if err := a.q.DeleteTx(ctx, tx, goqite.ID(r.message)); err != nil {
			return err
		}
	}
	id, err := a.q.SendAndGetIDTx(ctx, tx, goqite.Message{Body: []byte(r.key), Priority: a.priority(r.seq)})
	if err != nil {
		return err
	}
	_, err = a.exec(ctx, tx, sqlRetry, now.UnixMilli(), forget, string(id), r.seq)
	return err
}

// Requeue makes a blocked row pending again with attempts 0 and the same
// key, unless the receiver may have forgotten the key (retention).
func (a *App) Requeue(ctx context.Context, key, actor, reason string) error {
	return a.operate(ctx, system.ActionRequeue, key, actor, reason, func(ctx context.Context, tx *sql.Tx, r row, now time.Time) error {
		if r.state != system.Blocked {
			return fmt.Errorf("%w: %s is %s; requeue takes a blocked row", system.ErrWrongState, key, r.state)
		}
		if a.pastRetention(r, now) {
			return fmt.Errorf("%w: %s: reconcile it first", system.ErrRetention, key)
		}
		return a.retry(ctx, tx, r, now, false)
	})
}

// reconcilable refuses a sent row, and a pending row whose message a
// worker holds hidden (a live lease).
func reconcilable(r row, now time.Time) error {
	switch {
	case r.state == system.Sent:
		return fmt.Errorf("%w: %s is sent", system.ErrWrongState, r.key)
	case r.state == system.Pending && r.leaseOwner != "" && r.visibleAt > now.UnixMilli():
		return fmt.Errorf("%w: worker %s holds %s", system.ErrWrongState, r.leaseOwner, r.key)
	}
	return nil
}

// Reconcile records the task a person found for key: the row becomes
// sent, and its message, if any, is deleted.
func (a *App) Reconcile(ctx context.Context, key string, remoteID int64, actor, reason string) error {
	if remoteID < 1 {
		return fmt.Errorf("%w: remote id %d", system.ErrInvalidInput, remoteID)
	}
	return a.operate(ctx, system.ActionReconcile, key, actor, reason, func(ctx context.Context, tx *sql.Tx, r row, now time.Time) error {
		if err := reconcilable(r, now); err != nil {
			return err
		}
		if r.state == system.Pending {
			if err := a.q.DeleteTx(ctx, tx, goqite.ID(r.message)); err != nil {
				return err
			}
		}
		_, err := a.exec(ctx, tx, sqlReconcile, remoteID, r.seq)
		return err
	})
}

// ReconcileAbsent records that a person found no task for key: the row
// is requeued, even past retention, and its first claim forgotten.
func (a *App) ReconcileAbsent(ctx context.Context, key, actor, reason string) error {
	return a.operate(ctx, system.ActionReconcileAbsent, key, actor, reason, func(ctx context.Context, tx *sql.Tx, r row, now time.Time) error {
		if err := reconcilable(r, now); err != nil {
			return err
		}
		return a.retry(ctx, tx, r, now, true)
	})
}

// Audit reads the operators' audit log, oldest first.
func (a *App) Audit(ctx context.Context) ([]system.AuditEntry, error) {
	rows, err := a.db.QueryContext(ctx, a.f.sql(sqlAuditLog))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var log []system.AuditEntry
	for rows.Next() {
		var e system.AuditEntry
		var at int64
		if err := rows.Scan(&at, &e.Actor, &e.Action, &e.Key, &e.Reason); err != nil {
			return nil, err
		}
		e.At = fromMillis(at)
		log = append(log, e)
	}
	return log, rows.Err()
}

// Stale lists what needs a person: every blocked row, and every pending
// row approved more than olderThan ago, in insertion order.
func (a *App) Stale(ctx context.Context, olderThan time.Duration) ([]system.Row, error) {
	s, err := a.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	now := a.opts.Harness.Now()
	var stale []system.Row
	for _, r := range s.Outbox {
		if r.State == system.Blocked || r.State == system.Pending && now.Sub(r.CreatedAt) > olderThan {
			stale = append(stale, r)
		}
	}
	return stale, nil
}
