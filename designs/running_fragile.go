package designs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/outboxlab/handoff/system"
)

// The fragile running designs: a plain polling worker, written as teams
// write one, on the handoff's own tables, each with one mistake that a
// worker running on its own makes. The harness must catch every one as
// it runs; Doc says how, and CaughtBy which history check does.
var RunningFragile = []Running{
	{
		Name:     "running-new-key",
		Summary:  "a polling worker that sends every attempt with a key of its own",
		Doc:      "The worker makes the request's idempotency key from the job and its attempt (\"so that the receiver can tell retries apart\"). A retry after a lost reply is then a new request to the receiver, which creates a second task: one follow-up, two employees. Caught by H2: the receiver holds a task whose key no approval holds.",
		Failure:  DuplicateTask,
		CaughtBy: "H2",
		Budget:   plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeNewKey),
	},
	{
		Name:         "running-discard",
		Summary:      "a polling worker that deletes a job it gives up on",
		Doc:          "The worker deletes a job once the receiver refuses it or its retries are spent, as a queue drops a dead job to keep its table small. Nobody is told: the approved follow-up is gone, with no task and nothing for a person to look at. Caught by H6: a key the outbox no longer shows has no task; or by H3 when the case is approved again after its job was deleted: the approval is a repeat, and no job comes back.",
		Failure:      LostWork,
		CaughtBy:     "H6",
		AlsoCaughtBy: []string{"H3"},
		Budget:       plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeDiscard),
	},
	{
		Name:     "running-count-after",
		Summary:  "a polling worker that counts an attempt only when the send fails",
		Doc:      "The worker adds one to a job's attempts when the handler returns an error, as most job runners count failures, not tries. A worker that dies during the send counts nothing, so the retry after the crash is free: a crash loop sends without end, past any budget. Caught by H4: the receiver saw more requests for a key than the outbox counts attempts.",
		Failure:  DuplicateTask,
		CaughtBy: "H4",
		Budget:   plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeCountAfter),
	},
	{
		Name:     "running-ack-first",
		Summary:  "a polling worker that marks a job sent before it sends it",
		Doc:      "The worker marks the job sent, then sends (\"at most once: never a duplicate\"). A worker that dies between the two, or a send that fails, leaves a job shown sent that the receiver never got. Caught by H5: a row shown sent names no task of the receiver.",
		Failure:  LostWork,
		CaughtBy: "H5",
		Budget:   plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeAckFirst),
	},
}

// Plain is the plain polling worker without a mistake: the fragile
// running designs' baseline, which every check passes.
var Plain = Running{
	Name:    "plain",
	Summary: "a plain polling worker on the handoff's tables: count, lease, send, settle fenced",
	Budget:  plainBudget, Lease: plainLease, Settle: plainSettle,
	Boot: bootPlain(""),
}

// mistake is what a fragile plain worker gets wrong; "" is none.
type mistake string

const (
	mistakeNewKey     mistake = "new key per attempt"
	mistakeDiscard    mistake = "delete the job it gives up on"
	mistakeCountAfter mistake = "count attempts after a failed send"
	mistakeAckFirst   mistake = "mark sent before the send"
)

// The plain worker's settings: a budget of five tries, a poll every
// second, a 30 s lease, a 10 s send timeout, and a backoff that doubles
// from 1 s.
const (
	plainBudget  = 5
	plainSettle  = 10 * time.Minute
	plainPoll    = time.Second
	plainLease   = 30 * time.Second
	plainTimeout = 10 * time.Second
	plainWorkers = 2
)

// bootPlain boots plain workers that make mistake m.
func bootPlain(m mistake) func(ctx context.Context, p Process) (Booted, error) {
	return func(ctx context.Context, p Process) (Booted, error) {
		opts := system.Options{Durability: system.ProcessSafe, WrapSQLite: p.WrapSQLite, Dial: p.Dial, MaxConns: 2, Worker: "app"}
		app, err := system.Open(ctx, p.Database(), opts)
		if err != nil {
			return nil, err
		}
		b := &poolBoot{app: app, closers: []*system.Outbox{app}}
		run, cancel := context.WithCancel(ctx)
		b.cancel, b.done = cancel, make(chan error, 1)
		var workers []*plainWorker
		for i := range plainWorkers {
			opts.Worker = fmt.Sprintf("plain:%d", i+1)
			o, err := system.Open(ctx, p.Database(), opts)
			if err != nil {
				cancel()
				b.close()
				return nil, err
			}
			b.closers = append(b.closers, o)
			workers = append(workers, &plainWorker{o: o, r: p.ReceiverFor(opts.Worker), mistake: m})
		}
		go func() {
			errs := make(chan error, len(workers))
			for _, w := range workers {
				go func() { errs <- w.run(run) }()
			}
			var all []error
			for range workers {
				all = append(all, <-errs)
			}
			b.done <- errors.Join(all...)
		}()
		return b, nil
	}
}

// plainWorker polls the outbox for a due row, leases it, sends it and
// records the answer under the lease's fence.
type plainWorker struct {
	o       *system.Outbox
	r       system.Receiver
	mistake mistake
	sends   int // requests this worker made, for mistakeNewKey
}

// job is a row the worker leased.
type job struct {
	seq          int64
	key, payload string
	attempts     int // counted so far, this one included unless counted after
	fence        int64
}

func (w *plainWorker) run(ctx context.Context) error {
	for ctx.Err() == nil {
		j, ok, err := w.claim(ctx)
		if err != nil || !ok {
			sleepCtx(ctx, plainPoll) // an error of the database passes: poll again
			continue
		}
		w.deliver(ctx, j)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// claim leases the oldest due row, counting the attempt now (unless the
// worker counts after).
func (w *plainWorker) claim(ctx context.Context) (job, bool, error) {
	now := time.Now().UnixMilli()
	var j job
	err := w.o.DB().QueryRowContext(ctx, w.o.Query(`SELECT o.seq, o.key, a.payload, o.attempts, o.fence FROM outbox o JOIN approvals a ON a.key = o.key
		WHERE o.state = 'pending' AND o.next_attempt_at <= ? AND (o.lease_owner IS NULL OR o.lease_until <= ?) ORDER BY o.seq LIMIT 1`), now, now).
		Scan(&j.seq, &j.key, &j.payload, &j.attempts, &j.fence)
	if errors.Is(err, sql.ErrNoRows) {
		return job{}, false, nil
	}
	if err != nil {
		return job{}, false, err
	}
	if j.attempts >= plainBudget {
		// Its last try died before it settled: give up now, without a send.
		_, err := w.o.DB().ExecContext(ctx, w.o.Query(`UPDATE outbox SET state = 'blocked', last_error = ?, lease_owner = NULL, lease_until = 0, fence = fence + 1
			WHERE seq = ? AND fence = ? AND state = 'pending'`), system.LastErrorBudgetExhausted, j.seq, j.fence)
		return job{}, false, err
	}
	count := 1
	if w.mistake == mistakeCountAfter {
		count = 0
	}
	res, err := w.o.DB().ExecContext(ctx, w.o.Query(`UPDATE outbox SET lease_owner = ?, lease_until = ?, attempts = attempts + ?, fence = fence + 1
		WHERE seq = ? AND fence = ? AND state = 'pending'`), w.o.Worker(), now+plainLease.Milliseconds(), count, j.seq, j.fence)
	if err != nil {
		return job{}, false, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return job{}, false, err // another worker took it first
	}
	j.attempts += count
	j.fence++
	return j, true, nil
}

// deliver sends j and records the answer.
func (w *plainWorker) deliver(ctx context.Context, j job) {
	if w.mistake == mistakeAckFirst {
		if !w.settle(ctx, j, `state = 'sent', remote_id = 0, lease_owner = NULL`) {
			return
		}
	}
	key := j.key
	if w.mistake == mistakeNewKey {
		w.sends++
		key = fmt.Sprintf("%s/%d", j.key, w.sends)
	}
	send, cancel := context.WithTimeout(ctx, plainTimeout)
	id, err := w.r.CreateTask(send, key, j.payload)
	cancel()
	if w.mistake == mistakeAckFirst {
		if err == nil {
			w.o.DB().ExecContext(ctx, w.o.Query(`UPDATE outbox SET remote_id = ? WHERE seq = ?`), id, j.seq)
		}
		return
	}
	if err != nil && w.mistake == mistakeCountAfter {
		j.attempts++
		w.o.DB().ExecContext(ctx, w.o.Query(`UPDATE outbox SET attempts = attempts + 1 WHERE seq = ? AND fence = ?`), j.seq, j.fence)
	}
	switch {
	case err == nil:
		w.settle(ctx, j, fmt.Sprintf(`state = 'sent', remote_id = %d, last_error = NULL, lease_owner = NULL, lease_until = 0`, id))
	case errors.Is(err, system.ErrTransient) && j.attempts < plainBudget:
		next := time.Now().Add(system.BackoffCeiling(time.Second, 5*time.Minute, j.attempts) / 2).UnixMilli()
		w.settle(ctx, j, fmt.Sprintf(`last_error = 'transient', next_attempt_at = %d, lease_owner = NULL, lease_until = 0`, next))
	default:
		reason := system.LastErrorBudgetExhausted
		if errors.Is(err, system.ErrRejected) {
			reason = system.LastErrorRejected
		} else if errors.Is(err, system.ErrKeyConflict) {
			reason = system.LastErrorConflict
		}
		if w.mistake == mistakeDiscard {
			w.o.DB().ExecContext(ctx, w.o.Query(`DELETE FROM outbox WHERE seq = ? AND fence = ?`), j.seq, j.fence)
			return
		}
		w.settle(ctx, j, fmt.Sprintf(`state = 'blocked', last_error = '%s', lease_owner = NULL, lease_until = 0`, reason))
	}
}

// settle sets what set says on j's row, if the row still carries j's
// fence, and reports whether it did.
func (w *plainWorker) settle(ctx context.Context, j job, set string) bool {
	res, err := w.o.DB().ExecContext(ctx, w.o.Query(`UPDATE outbox SET `+set+` WHERE seq = ? AND fence = ?`), j.seq, j.fence)
	if err != nil {
		return false
	}
	n, err := res.RowsAffected()
	return err == nil && n == 1
}
