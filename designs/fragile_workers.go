package designs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/outboxlab/handoff/system"
)

// The fragile designs of many workers: each is the real outbox with one
// shortcut in a claim, a settle or an operator action, the rest of a
// delivery as the real one does it.

// phases is what a delivery is made of, so that a design can replace one
// phase and keep the others.
type phases interface {
	ClaimNext(ctx context.Context) (system.Claim, system.Delivery, error)
	Send(ctx context.Context, c system.Claim, r system.Receiver) (int64, error)
	Settle(ctx context.Context, c system.Claim, taskID int64, sendErr error) (system.Delivery, error)
}

// deliverIn makes one delivery through p's phases, passing the fault
// points as the real DeliverOne does.
func deliverIn(ctx context.Context, p phases, opts system.Options, r system.Receiver) (system.Delivery, error) {
	c, d, err := p.ClaimNext(ctx)
	if err != nil || d.Result != system.ResultPending {
		return d, err
	}
	if err := pass(opts.Harness.Hook, system.PointBeforeSend); err != nil {
		return d, err
	}
	id, sendErr := p.Send(ctx, c, r)
	if err := pass(opts.Harness.Hook, system.PointAfterReply); err != nil {
		return d, err
	}
	return p.Settle(ctx, c, id, sendErr)
}

// noFencing settles under whatever fence the row carries now, not the
// claim's.
type noFencing struct{ outbox }

func (n noFencing) Settle(ctx context.Context, c system.Claim, taskID int64, sendErr error) (system.Delivery, error) {
	// The shortcut: the fence is read afresh, so a late settle always
	// finds its own.
	if err := n.DB().QueryRowContext(ctx, n.Query(`SELECT fence FROM outbox WHERE seq = ?`), c.Seq).Scan(&c.Fence); err != nil {
		return system.Delivery{}, err
	}
	return n.Outbox.Settle(ctx, c, taskID, sendErr)
}

func (n noFencing) DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error) {
	return deliverIn(ctx, n, n.Options(), r)
}

// watermarkSettle settles as a stream consumer commits its offset: a
// settle that heard a task also marks sent every older row that a worker
// still leases, whether or not its send has answered.
type watermarkSettle struct{ outbox }

func (w watermarkSettle) Settle(ctx context.Context, c system.Claim, taskID int64, sendErr error) (system.Delivery, error) {
	d, err := w.Outbox.Settle(ctx, c, taskID, sendErr)
	if err != nil || d.Result != system.ResultSent {
		return d, err
	}
	// The shortcut: the rows before this one are surely answered by now,
	// so one write records them all.
	now := w.Options().Harness.Now().UnixMilli()
	_, err = w.DB().ExecContext(ctx, w.Query(`UPDATE outbox SET state = 'sent', remote_id = 0, last_error = NULL, lease_owner = NULL, lease_until = 0
		WHERE seq < ? AND state = 'pending' AND lease_owner IS NOT NULL AND lease_until > ?`), c.Seq, now)
	return d, err
}

func (w watermarkSettle) DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error) {
	return deliverIn(ctx, w, w.Options(), r)
}

// leaseRule is which leases a sqlClaim honours: a SQL condition on the
// outbox row o, with ?1 the time now.
type leaseRule string

const (
	noLease      leaseRule = `TRUE`                  // every lease is ignored
	leaseForever leaseRule = `o.lease_owner IS NULL` // every lease holds, run out or not
	leaseRunsOut leaseRule = `(o.lease_owner IS NULL OR o.lease_until <= ?1)`
	claimSelect            = `SELECT o.seq, o.key, a.payload, o.attempts, o.created_at, o.first_claimed_at, o.fence
		FROM outbox o JOIN approvals a ON a.key = o.key WHERE o.state = 'pending' AND o.next_attempt_at <= ?1 AND `
)

// leaseClaims claims as the real worker does, but with its own rule for
// leases.
type leaseClaims struct {
	outbox
	rule leaseRule
}

func (l leaseClaims) DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error) {
	return deliverIn(ctx, l, l.Options(), r)
}

// ClaimNext is the real claim, written out with the design's lease rule.
func (l leaseClaims) ClaimNext(ctx context.Context) (system.Claim, system.Delivery, error) {
	opts := l.Options()
	retention := opts.Retention
	tx, err := l.DB().BeginTx(ctx, nil)
	if err != nil {
		return system.Claim{}, system.Delivery{}, err
	}
	defer tx.Rollback()
	now := opts.Harness.Now().UnixMilli()
	var c system.Claim
	var created, first int64
	err = tx.QueryRowContext(ctx, l.Query(claimSelect+string(l.rule)+` ORDER BY o.seq LIMIT 1`), now).
		Scan(&c.Seq, &c.Key, &c.Payload, &c.Attempt, &created, &first, &c.Fence)
	if errors.Is(err, sql.ErrNoRows) {
		return system.Claim{}, system.Delivery{Result: system.Idle}, tx.Commit()
	}
	if err != nil {
		return system.Claim{}, system.Delivery{}, err
	}
	d := system.Delivery{Result: system.ResultPending, Key: c.Key, Attempts: c.Attempt}
	switch {
	case c.Attempt >= opts.MaxAttempts:
		d.Result, d.LastError = system.ResultBlocked, system.LastErrorBudgetExhausted
	case opts.MaxAge > 0 && now >= created+opts.MaxAge.Milliseconds():
		d.Result, d.LastError = system.ResultBlocked, system.LastErrorDeadline
	case retention > 0 && first != 0 && now >= first+(retention-opts.SendTimeout).Milliseconds():
		d.Result, d.LastError = system.ResultBlocked, system.LastErrorRetentionExpired
	}
	if d.Result == system.ResultBlocked {
		if _, err := tx.ExecContext(ctx, l.Query(`UPDATE outbox SET state = 'blocked', last_error = ?, lease_owner = NULL, lease_until = 0,
			fence = fence + 1 WHERE seq = ?`), d.LastError, c.Seq); err != nil {
			return system.Claim{}, system.Delivery{}, err
		}
		return system.Claim{}, d, tx.Commit()
	}
	c.Attempt++
	c.Fence++
	c.SendBy = time.UnixMilli(now).Add(opts.SendTimeout)
	d.Attempts = c.Attempt
	if _, err := tx.ExecContext(ctx, l.Query(`UPDATE outbox SET attempts = attempts + 1, fence = fence + 1, lease_owner = ?, lease_until = ?,
		first_claimed_at = CASE WHEN first_claimed_at = 0 THEN ?3 ELSE first_claimed_at END, last_attempt_at = ?3 WHERE seq = ?`),
		opts.Worker, now+opts.Lease.Milliseconds(), now, c.Seq); err != nil {
		return system.Claim{}, system.Delivery{}, err
	}
	return c, d, tx.Commit()
}

// ignoreRetention claims with no regard for the receiver's memory of keys.
type ignoreRetention struct{ outbox }

func (i ignoreRetention) ClaimNext(ctx context.Context) (system.Claim, system.Delivery, error) {
	return i.Outbox.ClaimNext(ctx, 0) // the shortcut: as if the receiver remembered keys forever
}

func (i ignoreRetention) DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error) {
	return deliverIn(ctx, i, i.Options(), r)
}

// freshKeyRequeue requeues a blocked action under a newly made key.
type freshKeyRequeue struct{ outbox }

func (f freshKeyRequeue) Requeue(ctx context.Context, key, actor, reason string) error {
	tx, err := f.DB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var state, caseID, title, payload string
	err = tx.QueryRowContext(ctx, f.Query(`SELECT o.state, a.case_id, a.title, a.payload FROM outbox o JOIN approvals a ON a.key = o.key
		WHERE o.key = ?`), key).Scan(&state, &caseID, &title, &payload)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: no outbox row for %q", system.ErrNotFound, key)
	case err != nil:
		return err
	case state != string(system.Blocked):
		return fmt.Errorf("%w: %s is %s", system.ErrWrongState, key, state)
	}
	// The shortcut: a fresh start is a fresh key, so nothing at the
	// receiver can get in the way.
	now := f.Options().Harness.Now().UnixMilli()
	fresh := key + "-requeued"
	if _, err := tx.ExecContext(ctx, f.Query(`INSERT INTO approvals (key, case_id, title, payload) VALUES (?, ?, ?, ?)`), fresh, caseID, f.TitleArg(title), payload); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, f.Query(`INSERT INTO outbox (key, state, attempts, created_at, next_attempt_at) VALUES (?, 'pending', 0, ?, ?)`), fresh, now, now); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, f.Query(`INSERT INTO audit (at, actor, action, key, reason) VALUES (?, ?, 'requeue', ?, ?)`), now, actor, key, reason); err != nil {
		return err
	}
	return tx.Commit()
}

// unfencedOperator requeues a row without moving its fence, so a worker
// whose claim is older can still settle over what the person decided.
type unfencedOperator struct{ outbox }

func (u unfencedOperator) Requeue(ctx context.Context, key, actor, reason string) error {
	r, err := u.Row(ctx, key)
	if err != nil {
		return err
	}
	if r.State != system.Blocked {
		return fmt.Errorf("%w: %s is %s", system.ErrWrongState, key, r.State)
	}
	// The shortcut: the person's word is final, so why fence it.
	now := u.Options().Harness.Now().UnixMilli()
	if _, err := u.DB().ExecContext(ctx, u.Query(`UPDATE outbox SET state = 'pending', attempts = 0, last_error = NULL, next_attempt_at = ?,
		lease_owner = NULL, lease_until = 0 WHERE key = ?`), now, key); err != nil {
		return err
	}
	_, err = u.DB().ExecContext(ctx, u.Query(`INSERT INTO audit (at, actor, action, key, reason) VALUES (?, ?, 'requeue', ?, ?)`), now, actor, key, reason)
	return err
}
