package riveroutbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/outboxlab/handoff/system"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
)

// schedulerInterval is River's JobSchedulerIntervalDefault: a retry due
// within it is made available at once instead of retryable.
const schedulerInterval = 5 * time.Second

// rescuedError is the error River's rescuer records on a job it rescues.
const rescuedError = "Stuck job rescued by JobRescuer"

// Outbox is the app database of one worker process: the approvals table
// of the app, River's job table, a River client (never started) and the
// worker.
type Outbox struct {
	s      *store
	client *river.Client[*sql.Tx]
	exec   riverdriver.Executor
	opts   system.Options
	worker *Sender
	// rescueAfter is River's RescueStuckJobsAfter as the claim's rescue
	// runs it: a running job attempted before now − rescueAfter is stuck.
	rescueAfter time.Duration
}

// open opens the outbox at path: River's migrations, then a River client
// configured from opts on the virtual clock.
func open(ctx context.Context, path string, opts system.Options, v Variant) (*Outbox, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	s, err := openStore(ctx, path)
	if err != nil {
		return nil, err
	}
	o := &Outbox{s: s, opts: opts}
	if err := o.start(ctx, v); err != nil {
		s.db.Close()
		return nil, err
	}
	return o, nil
}

// start migrates River's tables and makes the River client.
func (o *Outbox) start(ctx context.Context, v Variant) error {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := rivermigrate.New(o.s.driver, &rivermigrate.Config{Logger: quiet})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("riveroutbox: migrating River's tables: %w", err)
	}
	o.worker = &Sender{o: o, heard: map[*rivertype.JobRow]error{}}
	// River's rescuer takes a running job attempted before now minus
	// RescueStuckJobsAfter; the harness's lease runs out at claim + Lease,
	// when a claim may take the row again: one millisecond less makes the
	// two instants the same for times in whole milliseconds (the virtual
	// clock's, and SQLite's precision in River's driver).
	o.rescueAfter = o.opts.Lease - time.Millisecond
	if !v.Supports.Leases {
		o.rescueAfter = -time.Millisecond // see Variant: every running job is an orphan at a claim
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, o.worker)
	o.client, err = river.NewClient(o.s.driver, &river.Config{
		ID:                   o.opts.Worker,
		Logger:               quiet,
		MaxAttempts:          o.opts.MaxAttempts,
		JobTimeout:           o.opts.SendTimeout,
		RescueStuckJobsAfter: o.opts.Lease,
		RetryPolicy:          retryPolicy{o},
		Test:                 river.TestConfig{Time: clock(o.opts.Now)},
		Workers:              workers,
	})
	if err != nil {
		return err
	}
	o.exec = o.client.Driver().GetExecutor()
	return nil
}

// clock is River's time generator on the outbox's clock: stubbed, so that
// River passes it into its queries as their now.
type clock func() time.Time

func (c clock) Now() time.Time { return c().UTC() }
func (c clock) NowOrNil() *time.Time {
	t := c().UTC()
	return &t
}

// retryPolicy is River's retry policy of the outbox. After a failed
// attempt it waits as the handoff's options say (system.Options.RetryWait:
// the full-jitter backoff, or the receiver's retry hint if longer). A job
// row that no send of this process heard end (River's executor gives the
// policy the row it gave the worker) is one River's rescuer asks about: its worker died, and it is retried at once, at the time it
// was due already, which keeps its place in River's order of due jobs.
type retryPolicy struct{ o *Outbox }

func (p retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	sendErr, heard := p.o.worker.heardFor(job)
	if !heard {
		return job.ScheduledAt
	}
	return p.o.now().Add(p.o.opts.RetryWait(job.Attempt, sendErr))
}

// Close closes the database; nothing in memory needs saving.
func (o *Outbox) Close() error { return o.s.db.Close() }

// now is the outbox's clock in UTC.
func (o *Outbox) now() time.Time { return o.opts.Now().UTC() }

// pass reports fault point p to the hook: an error means the process
// dies there.
func (o *Outbox) pass(p system.FaultPoint) error {
	if o.opts.Hook == nil {
		return nil
	}
	return o.opts.Hook(p)
}

// RecordApproval records the approval in the app's table and inserts its
// River job (client.InsertTx) in the same transaction. An approval
// repeated with the same payload changes nothing; one with another
// payload is a key conflict.
func (o *Outbox) RecordApproval(ctx context.Context, caseID, title string) (string, error) {
	a, err := system.NewApproval(caseID, title)
	if err != nil {
		return "", err
	}
	return a.Key, o.s.inTx(ctx, func(tx *sql.Tx) error {
		var held string
		switch err := tx.QueryRowContext(ctx, `SELECT payload FROM followup_approvals WHERE key = $1`, a.Key).Scan(&held); {
		case err == nil && held == a.Payload:
			return nil
		case err == nil:
			return fmt.Errorf("%w: %s holds another payload", system.ErrKeyConflict, a.Key)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO followup_approvals (key, case_id, title, payload) VALUES ($1, $2, $3, $4)`,
			a.Key, a.CaseID, []byte(a.Title), a.Payload); err != nil {
			return err
		}
		if err := o.pass(system.PointBetweenApprovalInserts); err != nil {
			return err
		}
		res, err := o.client.InsertTx(ctx, tx, FollowupArgs{Key: a.Key, Payload: a.Payload}, nil)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE followup_approvals SET job_id = $1 WHERE key = $2`, res.Job.ID, a.Key)
		return err
	})
}

// rescue is River's rescuer run once at now: every job running since
// before now − rescueAfter is stuck, and made retryable (at the retry
// policy's next retry) while it has attempts left, discarded otherwise
// (River's rescue rule, in its query JobRescueMany). It returns the jobs
// it discarded.
func (o *Outbox) rescue(ctx context.Context, now time.Time) ([]*rivertype.JobRow, error) {
	horizon := now.Add(-o.rescueAfter)
	stuck, err := o.exec.JobGetStuck(ctx, &riverdriver.JobGetStuckParams{Max: maxJobs, StuckHorizon: horizon})
	if err != nil || len(stuck) == 0 {
		return nil, err
	}
	p := &riverdriver.JobRescueManyParams{StuckHorizon: horizon}
	var discarded []*rivertype.JobRow
	for _, job := range stuck {
		errData, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(job.Attempt, 0), Error: rescuedError})
		if err != nil {
			return nil, err
		}
		p.ID, p.Error = append(p.ID, job.ID), append(p.Error, errData)
		if job.Attempt < job.MaxAttempts {
			p.State, p.FinalizedAt = append(p.State, string(rivertype.JobStateRetryable)), append(p.FinalizedAt, nil)
			p.ScheduledAt = append(p.ScheduledAt, retryPolicy{o}.NextRetry(job))
			continue
		}
		p.State, p.FinalizedAt = append(p.State, string(rivertype.JobStateDiscarded)), append(p.FinalizedAt, &now)
		p.ScheduledAt = append(p.ScheduledAt, job.ScheduledAt)
		discarded = append(discarded, job)
	}
	_, err = o.exec.JobRescueMany(ctx, p)
	return discarded, err
}

// expire cancels (Client.JobCancelTx) the job River's fetch would take
// next if it is older than the time budget, and returns it; nil when
// there is no budget, no due job, or the next is young enough. River has
// no time budget: this is the outbox's own rule, checked before River's
// fetch counts an attempt.
func (o *Outbox) expire(ctx context.Context, now time.Time) (*rivertype.JobRow, error) {
	if o.opts.MaxAge == 0 {
		return nil, nil
	}
	res, err := o.client.JobList(ctx, river.NewJobListParams().States(rivertype.JobStateAvailable).
		OrderBy(river.JobListOrderByScheduledAt, river.SortOrderAsc).First(maxJobs))
	if err != nil {
		return nil, err
	}
	for _, job := range res.Jobs {
		if job.ScheduledAt.After(now) {
			continue
		}
		if now.Before(job.CreatedAt.Add(o.opts.MaxAge)) {
			return nil, nil
		}
		return job, o.s.inTx(ctx, func(tx *sql.Tx) error {
			_, err := o.client.JobCancelTx(ctx, tx, job.ID)
			return err
		})
	}
	return nil, nil
}

// claim runs what River's leader and a producer would have run by now:
// the rescuer and the scheduler, then one fetch (JobGetAvailable, at most
// one job). A rescue that discards a job reports it blocked, as a claim
// that finds a row's budget spent, and fetches nothing; so does a job
// past the time budget (see expire).
func (o *Outbox) claim(ctx context.Context) (*rivertype.JobRow, system.Delivery, error) {
	now := o.now()
	discarded, err := o.rescue(ctx, now)
	if err != nil {
		return nil, system.Delivery{}, err
	}
	if len(discarded) > 0 {
		job := discarded[0]
		return nil, system.Delivery{Result: system.ResultBlocked, Key: argsOf(job).Key, Attempts: job.Attempt, LastError: system.LastErrorBudgetExhausted}, nil
	}
	if _, err := o.exec.JobSchedule(ctx, &riverdriver.JobScheduleParams{Max: maxJobs, Now: &now}); err != nil {
		return nil, system.Delivery{}, err
	}
	old, err := o.expire(ctx, now)
	if err != nil || old != nil {
		return nil, system.Delivery{Result: system.ResultBlocked, Key: argsOf(old).Key, Attempts: old.Attempt, LastError: system.LastErrorDeadline}, err
	}
	res, err := o.exec.JobGetAvailable(ctx, &riverdriver.JobGetAvailableParams{
		ClientID: o.opts.Worker, MaxAttemptedBy: 100, MaxToLock: 1, Now: &now, Queue: river.QueueDefault})
	if err != nil {
		return nil, system.Delivery{}, err
	}
	if len(res.Jobs) == 0 {
		next, err := o.nextEligible(ctx)
		return nil, system.Delivery{Result: system.Idle, NextEligible: next}, err
	}
	job := res.Jobs[0]
	return job, system.Delivery{Result: system.ResultPending, Key: argsOf(job).Key, Attempts: job.Attempt, LastError: lastError(job)}, nil
}

// argsOf decodes job's arguments.
func argsOf(job *rivertype.JobRow) FollowupArgs {
	var a FollowupArgs
	if job != nil {
		_ = json.Unmarshal(job.EncodedArgs, &a) // every job of this outbox was inserted with FollowupArgs
	}
	return a
}

// typed is job as River hands it to the worker.
func typed(job *rivertype.JobRow) *river.Job[FollowupArgs] {
	return &river.Job[FollowupArgs]{JobRow: job, Args: argsOf(job)}
}

// report is River's executor recording what the worker returned, for
// job: completed (by the worker's JobCompleteTx already); cancelled
// (river.JobCancel); discarded on its last attempt; otherwise available
// or retryable at the retry policy's next retry. Like River's, the write
// takes the job if it is running, whichever attempt runs it, and leaves
// it as it is otherwise. It returns the job as it is after the write, and
// whether the write took it: whether the job was running when it ran
// (read in the write's transaction; River's query returns the row either
// way).
func (o *Outbox) report(ctx context.Context, job *rivertype.JobRow, werr error) (*rivertype.JobRow, bool, error) {
	now := o.now()
	var p *riverdriver.JobSetStateIfRunningParams
	if werr == nil {
		p = riverdriver.JobSetStateCompleted(job.ID, now, nil)
	} else {
		errData, err := json.Marshal(rivertype.AttemptError{At: *job.AttemptedAt, Attempt: job.Attempt, Error: werr.Error()})
		if err != nil {
			return nil, false, err
		}
		var cancel *rivertype.JobCancelError
		switch {
		case errors.As(werr, &cancel):
			p = riverdriver.JobSetStateCancelled(job.ID, now, errData, nil)
		case job.Attempt >= job.MaxAttempts:
			p = riverdriver.JobSetStateDiscarded(job.ID, now, errData, nil)
		default:
			next := retryPolicy{o}.NextRetry(job)
			if next.Sub(now) <= schedulerInterval {
				p = riverdriver.JobSetStateErrorAvailable(job.ID, next, errData, nil)
			} else {
				p = riverdriver.JobSetStateErrorRetryable(job.ID, next, errData, nil)
			}
		}
	}
	var row *rivertype.JobRow
	var took bool
	err := o.s.inTx(ctx, func(tx *sql.Tx) error {
		before, err := o.client.JobGetTx(ctx, tx, job.ID)
		if err != nil {
			return err
		}
		took = before.State == rivertype.JobStateRunning
		rows, err := o.client.Driver().UnwrapExecutor(tx).JobSetStateIfRunningMany(ctx, &riverdriver.JobSetStateIfRunningManyParams{
			ID: []int64{p.ID}, Attempt: []*int{p.Attempt}, ErrData: [][]byte{p.ErrData}, FinalizedAt: []*time.Time{p.FinalizedAt},
			MetadataDoMerge: []bool{false}, MetadataUpdates: [][]byte{nil}, Now: &now, ScheduledAt: []*time.Time{p.ScheduledAt},
			State: []rivertype.JobState{p.State}})
		if err != nil {
			return err
		}
		if len(rows) != 1 {
			return fmt.Errorf("riveroutbox: job %d is gone", job.ID)
		}
		row = rows[0]
		return nil
	})
	return row, took, err
}

// settle runs the worker's record of what its send heard, then River's
// executor's report of the result, and says where the job stands: stale
// when River's write took nothing (for a success, the worker's
// JobCompleteTx; the executor's completion after it finds the job
// completed already).
func (o *Outbox) settle(ctx context.Context, job *rivertype.JobRow, taskID int64, sendErr error) (system.Delivery, error) {
	d := system.Delivery{Key: argsOf(job).Key, Attempts: job.Attempt}
	completed, werr := o.worker.finish(ctx, typed(job), taskID, sendErr)
	row, took, err := o.report(ctx, job, werr)
	if werr == nil {
		took = completed
	}
	switch {
	case err != nil:
		return d, err
	case !took:
		d.Result = system.ResultStale
		return d, nil
	}
	d.Result, d.LastError = result(row.State), lastError(row)
	if d.Result == system.ResultSent {
		d.RemoteID = taskID
	}
	return d, nil
}

// DeliverOne makes one delivery: the claim (see claim), the worker's
// Work, and River's executor's report of its result. A hook's error is a
// crash: it is returned, and nothing more is written.
func (o *Outbox) DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error) {
	job, d, err := o.claim(ctx)
	if err != nil || d.Result != system.ResultPending {
		return d, err
	}
	o.worker.receiver = r
	id, sendErr, died := o.worker.send(ctx, typed(job))
	if died != nil {
		return d, died
	}
	return o.settle(ctx, job, id, sendErr)
}

// ClaimNext is a worker's claim (see claim); its Claim carries the
// fetched job as its Handle.
func (o *Outbox) ClaimNext(ctx context.Context) (system.Claim, system.Delivery, error) {
	job, d, err := o.claim(ctx)
	if err != nil || job == nil {
		return system.Claim{}, d, err
	}
	a := argsOf(job)
	return system.Claim{Seq: job.ID, Key: a.Key, Payload: a.Payload, Attempt: job.Attempt,
		SendBy: job.AttemptedAt.Add(o.opts.SendTimeout), Handle: job}, d, nil
}

// Send is the worker's send of the job c claimed. River's job timeout
// (the send timeout) is a deadline of the job's context counted from the
// fetch: a send that comes later finds the context done.
func (o *Outbox) Send(ctx context.Context, c system.Claim, r system.Receiver) (int64, error) {
	if !o.now().Before(c.SendBy) {
		done, cancel := context.WithCancel(ctx)
		cancel()
		ctx = done
	}
	o.worker.receiver = r
	id, sendErr, died := o.worker.send(ctx, typed(c.Handle.(*rivertype.JobRow)))
	if died != nil {
		return 0, died
	}
	return id, sendErr
}

// Settle records what the send of c heard (see settle).
func (o *Outbox) Settle(ctx context.Context, c system.Claim, taskID int64, sendErr error) (system.Delivery, error) {
	return o.settle(ctx, c.Handle.(*rivertype.JobRow), taskID, sendErr)
}
