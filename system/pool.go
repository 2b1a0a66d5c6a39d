package system

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"
)

// Pool is the workers of one process, as handoff work runs them: one
// Outbox each (so one name and one lease holder each), all delivering to
// one Receiver. Each worker releases the leases held under its name, then
// delivers one row after the other through a Pipeline; an idle worker
// sleeps until the next row is due, or until another worker of the pool
// has worked on a row. Every delivery is logged, one line each.
type Pool struct {
	// Outboxes are the workers, one Outbox each, with names of their own.
	Outboxes []*Outbox
	// Receiver is where every worker sends, unless ReceiverFor gives the
	// worker a receiver of its own (a harness that tells the workers'
	// requests apart).
	Receiver    Receiver
	ReceiverFor func(worker string) Receiver
	// Log receives a line for each delivery, start and stop; nil discards.
	Log *slog.Logger
	// UntilIdle ends a worker once nothing is pending, instead of
	// waiting for new approvals until its context is cancelled.
	UntilIdle bool
	// Observer counts what the workers do; nil counts nothing.
	Observer PoolObserver

	mu      sync.Mutex
	results map[string]int // deliveries by result, "error" for an *AttemptError
	// down is set from the first transient failure of a send until a
	// send is answered again; failed counts the failed sends meanwhile.
	down      bool
	downSince time.Time
	failed    int
	// changed is closed, and replaced, whenever a worker of the pool has
	// worked on a row: the idle workers wake up, since the row may be
	// eligible again or the last one pending may be done.
	changed chan struct{}
}

// PoolObserver counts what a Pool's workers do: each delivery, and the
// leases each worker released when it started.
type PoolObserver interface {
	Delivery(d Delivery, err error)
	Released(n int)
}

// DefaultPoolWorkers is how many workers handoff work runs in one
// process by default.
const DefaultPoolWorkers = 4

// PoolMaxAttempts is the attempt budget of handoff work's workers: more
// than the contract's default of 3, so that with the default backoff a
// receiver down for a minute or two blocks no row.
const PoolMaxAttempts = 20

// RetryBound is what a row's attempts add up to under opts when every
// one fails: the longest the backoffs between them can be (each jitter
// at its ceiling), and that plus every send taking its whole send
// timeout, the longest from a row's first attempt to its block.
func (opts Options) RetryBound() (backoff, total time.Duration) {
	if !opts.NoBackoff {
		for n := 1; n < opts.MaxAttempts; n++ {
			backoff += BackoffCeiling(opts.BackoffBase, opts.BackoffCap, n)
		}
	}
	return backoff, backoff + time.Duration(opts.MaxAttempts)*opts.SendTimeout
}

// How long an idle worker sleeps: until the earliest time a pending row
// becomes eligible, but never less than MinIdleWait (no busy poll when
// that time has just passed) nor more than MaxIdleWait (new approvals,
// and rows other processes release, are seen within it).
const (
	MinIdleWait = 5 * time.Millisecond
	MaxIdleWait = time.Second
)

// IdleWait is how long an idle worker sleeps when the earliest pending
// row becomes eligible at next (zero: none is pending).
func IdleWait(next, now time.Time) time.Duration {
	if next.IsZero() {
		return MaxIdleWait
	}
	return min(max(next.Sub(now), MinIdleWait), MaxIdleWait)
}

// Run runs every worker until ctx is cancelled or, with UntilIdle, until
// each has found nothing pending. A worker that fails for good cancels
// the others; its error is returned. An interrupt stops the claiming,
// not a delivery under way: the rows already claimed are sent (each
// bounded by its send timeout) and their answers recorded, so it leaves
// no lease behind.
func (p *Pool) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.results == nil {
		p.results, p.changed = map[string]int{}, make(chan struct{})
	}
	p.mu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, o := range p.Outboxes {
		wg.Go(func() {
			if err := p.worker(ctx, o); err != nil {
				cancel(fmt.Errorf("worker %s: %w", o.Worker(), err))
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// Results is a copy of the pool's deliveries so far, by result: sent,
// pending, blocked, stale, and error for an attempt that failed after it
// was counted.
func (p *Pool) Results() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.results)
}

// logger is the pool's log, or one that discards.
func (p *Pool) logger() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}

// worker releases the leases held under its name, then delivers one row
// after the other through a Pipeline, which records the last answer and
// claims the next row while it sends one.
func (p *Pool) worker(ctx context.Context, o *Outbox) error {
	released, err := o.Recover(ctx)
	for passing(err) && ctx.Err() == nil {
		p.ClaimRefused(o, err)
		sleep(ctx, nil, MaxIdleWait)
		released, err = o.Recover(ctx)
	}
	if err != nil {
		return stopped(ctx, err)
	}
	if p.Observer != nil {
		p.Observer.Released(released)
	}
	log := p.logger()
	log.Info("worker started", "worker", o.Worker(), "released_leases", released)
	defer log.Info("worker stopped", "worker", o.Worker())
	r := p.Receiver
	if p.ReceiverFor != nil {
		r = p.ReceiverFor(o.Worker())
	}
	deliveries, err := o.Pipeline(r)
	if err != nil {
		return err
	}
	defer func() {
		for {
			d, flushed, err := deliveries.Flush(ctx)
			if !flushed {
				return
			}
			p.LogDelivery(ctx, o, deliveries, d, err)
		}
	}()
	for ctx.Err() == nil {
		wake := p.changes()
		d, err := deliveries.Next(ctx)
		switch {
		case p.LogDelivery(ctx, o, deliveries, d, err):
			continue
		case passing(err):
			// A claim the database refused, whose commit it may have
			// lost, or whose connection ended (the server restarted,
			// the network dropped it): if it committed, its lease runs
			// out; the next claim takes a new connection.
			p.ClaimRefused(o, err)
			sleep(ctx, nil, MaxIdleWait)
			continue
		case err != nil:
			return stopped(ctx, err)
		case d.NextEligible.IsZero() && p.UntilIdle:
			return nil
		}
		sleep(ctx, wake, IdleWait(d.NextEligible, time.Now()))
	}
	return nil
}

// LogDelivery logs a delivery that o's worker made, one line each, and says
// whether it was one: an attempt that failed after it was counted, or a
// row sent, retried, blocked or stale. deliveries may be nil.
func (p *Pool) LogDelivery(ctx context.Context, o *Outbox, deliveries *Pipeline, d Delivery, err error) bool {
	if p.Observer != nil {
		p.Observer.Delivery(d, err)
	}
	log := p.logger()
	var attempt *AttemptError
	switch {
	case errors.As(err, &attempt):
		p.done("error")
		log.Warn("delivery", "worker", o.Worker(), "key", attempt.Key, "result", "error", "attempt", attempt.Attempt,
			"remote_id", 0, "last_error", attempt.Err.Error())
		return true
	case err != nil || d.Result == Idle:
		return false
	}
	p.done(string(d.Result))
	level := slog.LevelInfo
	if d.Result == ResultBlocked || d.Result == ResultStale {
		level = slog.LevelWarn
	}
	attrs := []any{"worker", o.Worker(), "key", d.Key, "result", string(d.Result), "attempt", d.Attempts,
		"remote_id", d.RemoteID, "last_error", d.LastError}
	var heard error
	if deliveries != nil {
		if heard = deliveries.Heard(); heard != nil && d.Result != ResultSent {
			attrs = append(attrs, "cause", heard.Error())
		}
	}
	switch {
	case d.LastError == LastErrorTransient && heard != nil:
		p.receiverFailed(o, d, heard)
		if d.Result == ResultPending {
			return true // the row is retried: counted, and said once the receiver answers again
		}
	case d.Result == ResultSent || d.LastError == LastErrorConflict || d.LastError == LastErrorRejected:
		p.receiverAnswered(ctx, o)
	}
	log.Log(ctx, level, "delivery", attrs...)
	return true
}

// receiverFailed counts a send of o's worker that failed transiently
// (heard). The first failure after an answer is one WARN line: the
// receiver stopped answering; the ones after it are counted, not logged
// one a line.
func (p *Pool) receiverFailed(o *Outbox, d Delivery, heard error) {
	p.mu.Lock()
	wasDown := p.down
	if !p.down {
		p.down, p.downSince, p.failed = true, time.Now(), 0
	}
	p.failed++
	p.mu.Unlock()
	if !wasDown {
		p.logger().Warn("receiver stopped answering", "worker", o.Worker(), "key", d.Key, "attempt", d.Attempts, "cause", heard.Error())
	}
}

// receiverAnswered notes that the receiver answered o's worker. After
// failures it is one INFO line with how long the receiver was down and
// how many sends failed meanwhile, and the rows that wait in backoff
// after a transient failure are made due within HastenWithin (see
// Outbox.Hasten): they need not wait out backoffs the outage grew.
func (p *Pool) receiverAnswered(ctx context.Context, o *Outbox) {
	p.mu.Lock()
	wasDown, since, failed := p.down, p.downSince, p.failed
	p.down = false
	p.mu.Unlock()
	if !wasDown {
		return
	}
	hastened, err := o.Hasten(ctx)
	attrs := []any{"worker", o.Worker(), "down_for", time.Since(since).Round(time.Millisecond).String(), "failed_sends", failed, "hastened_rows", hastened}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	p.logger().Info("receiver answering again", attrs...)
	if hastened > 0 {
		p.wake()
	}
}

// ClaimRefused logs a claim of o's worker that the database refused, or
// whose commit it may have lost (err): the worker waits, then claims again.
func (p *Pool) ClaimRefused(o *Outbox, err error) {
	p.logger().Warn("database", "worker", o.Worker(), "error", err.Error())
}

// passing reports whether err is a failure of the database that passes:
// busy, a commit whose outcome is unknown, or a connection that ended
// (the server restarted, the network dropped it). A worker waits, then
// tries again; any other error stops the pool.
func passing(err error) bool {
	return errors.Is(err, ErrBusy) || errors.Is(err, ErrCommitUnknown) || errors.Is(err, ErrUnavailable)
}

// stopped is err, or nil when ctx was cancelled: an interrupt during a
// worker's start or a claim is a clean stop.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// sleep waits d, or until wake is closed or ctx is cancelled.
func sleep(ctx context.Context, wake <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-wake:
	case <-t.C:
	}
}

// changes returns the channel that is closed when a worker of the pool
// next works on a row.
func (p *Pool) changes() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return p.changed
}

// done counts a delivery with result and wakes the idle workers.
func (p *Pool) done(result string) {
	p.mu.Lock()
	if p.results == nil {
		p.results = map[string]int{}
	}
	p.results[result]++
	p.mu.Unlock()
	p.wake()
}

// wake wakes the idle workers: a row may be due.
func (p *Pool) wake() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed != nil {
		close(p.changed)
	}
	p.changed = make(chan struct{})
}
