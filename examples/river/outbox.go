package riveroutbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/handoff/system"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertest"
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
type Outbox[TTx any] struct {
	s       store[TTx]
	client  *river.Client[TTx]
	exec    riverdriver.Executor
	opts    system.Options
	variant Variant
	worker  *Sender[TTx]
	// rescueAfter is River's RescueStuckJobsAfter as the claim's rescue
	// runs it: a running job attempted before now − rescueAfter is stuck.
	rescueAfter time.Duration
	// claims are the jobs this process fetched and has not settled, by id.
	claims map[int64]*rivertype.JobRow
}

// open opens the outbox on s: River's migrations, then a River client
// configured from opts on the virtual clock.
func open[TTx any](ctx context.Context, s store[TTx], opts system.Options, v Variant) (*Outbox[TTx], error) {
	opts = withDefaults(opts)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := rivermigrate.New(s.driver(), &rivermigrate.Config{Logger: quiet, Schema: s.schema()})
	if err != nil {
		s.close()
		return nil, err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		s.close()
		return nil, fmt.Errorf("riveroutbox: migrating River's tables: %w", err)
	}
	o := &Outbox[TTx]{s: s, opts: opts, variant: v, claims: map[int64]*rivertype.JobRow{}}
	o.worker = &Sender[TTx]{o: o, hints: map[int64]time.Duration{}}
	// River's rescuer takes a running job attempted before now minus
	// RescueStuckJobsAfter; the harness's lease runs out at claim + Lease,
	// when a claim may take the row again: one millisecond less makes the
	// two instants the same for times in whole milliseconds (the virtual
	// clock's, and SQLite's precision in River's driver).
	o.rescueAfter = opts.Lease - time.Millisecond
	if !v.Supports.Leases {
		o.rescueAfter = -time.Millisecond // see Variant: every running job is an orphan at a claim
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, o.worker)
	o.client, err = river.NewClient(s.driver(), &river.Config{
		ID:                   opts.Worker,
		Logger:               quiet,
		MaxAttempts:          opts.MaxAttempts,
		JobTimeout:           opts.SendTimeout,
		RescueStuckJobsAfter: opts.Lease,
		RetryPolicy:          retryPolicy[TTx]{o},
		Schema:               s.schema(),
		Test:                 river.TestConfig{Time: clock(opts.Now)},
		Workers:              workers,
	})
	if err != nil {
		s.close()
		return nil, err
	}
	o.exec = o.client.Driver().GetExecutor()
	return o, nil
}

// withDefaults fills in what opts leaves zero, as package system does.
func withDefaults(opts system.Options) system.Options {
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = system.DefaultMaxAttempts
	}
	if opts.Lease == 0 {
		opts.Lease = system.DefaultLease
	}
	if opts.SendTimeout == 0 {
		opts.SendTimeout = system.DefaultSendTimeout
	}
	if opts.BackoffBase == 0 {
		opts.BackoffBase = system.DefaultBackoffBase
	}
	if opts.BackoffCap == 0 {
		opts.BackoffCap = system.DefaultBackoffCap
	}
	if opts.Worker == "" {
		opts.Worker = system.DefaultWorker
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return opts
}

// clock is River's time generator on the outbox's clock: stubbed, so that
// River passes it into its queries as their now.
type clock func() time.Time

func (c clock) Now() time.Time { return c() }
func (c clock) NowOrNil() *time.Time {
	t := c().UTC()
	return &t
}

// retryPolicy is River's retry policy of the outbox: SPEC's full-jitter
// backoff, min(cap, base·2^(n−1)) after attempt n, or the receiver's
// retry hint if longer; none when backoff is off.
type retryPolicy[TTx any] struct{ o *Outbox[TTx] }

func (p retryPolicy[TTx]) NextRetry(job *rivertype.JobRow) time.Time {
	opts := p.o.opts
	var wait time.Duration
	if !opts.NoBackoff && opts.Jitter != nil {
		ceiling := system.BackoffCeiling(opts.BackoffBase, opts.BackoffCap, job.Attempt)
		wait = max(0, min(opts.Jitter(ceiling), ceiling))
	}
	return opts.Now().UTC().Add(max(wait, p.o.worker.hint(job.ID)))
}

// Close closes the database; nothing in memory needs saving.
func (o *Outbox[TTx]) Close() error { return o.s.close() }

// now is the outbox's clock in UTC.
func (o *Outbox[TTx]) now() time.Time { return o.opts.Now().UTC() }

// pass reports fault point p to the hook: an error means the process
// dies there.
func (o *Outbox[TTx]) pass(p system.FaultPoint) error {
	if o.opts.Hook == nil {
		return nil
	}
	return o.opts.Hook(p)
}

// RecordApproval records the approval in the app's table and inserts its
// River job (client.InsertTx) in the same transaction. An approval
// repeated with the same payload changes nothing; one with another
// payload is a key conflict.
func (o *Outbox[TTx]) RecordApproval(ctx context.Context, caseID, title string) (string, error) {
	a, err := system.NewApproval(caseID, title)
	if err != nil {
		return "", err
	}
	tx, err := o.s.begin(ctx, false)
	if err != nil {
		return "", err
	}
	defer o.s.rollback(ctx, tx)
	var held string
	switch err := o.s.queryRow(ctx, tx, `SELECT payload FROM followup_approvals WHERE key = $1`, []any{a.Key}, &held); {
	case err == nil && held == a.Payload:
		return a.Key, nil
	case err == nil:
		return "", fmt.Errorf("%w: %s holds another payload", system.ErrKeyConflict, a.Key)
	case !errors.Is(err, errNoRows):
		return "", err
	}
	if err := o.s.exec(ctx, tx, `INSERT INTO followup_approvals (key, case_id, title, payload) VALUES ($1, $2, $3, $4)`,
		a.Key, a.CaseID, o.s.titleArg(a.Title), a.Payload); err != nil {
		return "", err
	}
	if err := o.pass(system.PointBetweenApprovalInserts); err != nil {
		return "", err
	}
	res, err := o.client.InsertTx(ctx, tx, FollowupArgs{Key: a.Key, Payload: a.Payload}, nil)
	if err != nil {
		return "", err
	}
	if err := o.s.exec(ctx, tx, `UPDATE followup_approvals SET job_id = $1 WHERE key = $2`, res.Job.ID, a.Key); err != nil {
		return "", err
	}
	return a.Key, o.s.commit(ctx, tx)
}

// completeWithTask records the task id in the approvals table and
// completes the job, in one transaction (River's JobCompleteTx).
func (o *Outbox[TTx]) completeWithTask(ctx context.Context, job *river.Job[FollowupArgs], taskID int64) error {
	tx, err := o.s.begin(ctx, false)
	if err != nil {
		return err
	}
	defer o.s.rollback(ctx, tx)
	if err := o.s.exec(ctx, tx, `UPDATE followup_approvals SET task_id = $1 WHERE key = $2`, taskID, job.Args.Key); err != nil {
		return err
	}
	if _, err := river.JobCompleteTx[riverdriver.Driver[TTx]](rivertest.WorkContext(ctx, o.client), tx, job); err != nil {
		return err
	}
	return o.s.commit(ctx, tx)
}

// rescue is River's rescuer run once at now: every job running since
// before now − rescueAfter is stuck, and made retryable (at the retry
// policy's next retry) while it has attempts left, discarded otherwise.
// It returns the jobs it discarded.
func (o *Outbox[TTx]) rescue(ctx context.Context, now time.Time) ([]*rivertype.JobRow, error) {
	horizon := now.Add(-o.rescueAfter)
	stuck, err := o.exec.JobGetStuck(ctx, &riverdriver.JobGetStuckParams{Max: 1000, Schema: o.s.schema(), StuckHorizon: horizon})
	if err != nil || len(stuck) == 0 {
		return nil, err
	}
	return o.rescueJobs(ctx, stuck, now, horizon)
}

// rescueJobs rescues jobs as River's rescuer decides (see rescue).
func (o *Outbox[TTx]) rescueJobs(ctx context.Context, jobs []*rivertype.JobRow, now, horizon time.Time) ([]*rivertype.JobRow, error) {
	p := &riverdriver.JobRescueManyParams{Schema: o.s.schema(), StuckHorizon: horizon}
	var discarded []*rivertype.JobRow
	for _, job := range jobs {
		errData, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(job.Attempt, 0), Error: rescuedError})
		if err != nil {
			return nil, err
		}
		p.ID, p.Error = append(p.ID, job.ID), append(p.Error, errData)
		if job.Attempt < job.MaxAttempts {
			p.State, p.FinalizedAt = append(p.State, string(rivertype.JobStateRetryable)), append(p.FinalizedAt, nil)
			p.ScheduledAt = append(p.ScheduledAt, retryPolicy[TTx]{o}.NextRetry(job))
			continue
		}
		p.State, p.FinalizedAt = append(p.State, string(rivertype.JobStateDiscarded)), append(p.FinalizedAt, &now)
		p.ScheduledAt = append(p.ScheduledAt, job.ScheduledAt)
		discarded = append(discarded, job)
	}
	_, err := o.exec.JobRescueMany(ctx, p)
	return discarded, err
}

// Recover is a worker starting again: with Variant.ReleaseOnRecover, it
// rescues, as River's rescuer would once their time ran out, the jobs
// still running under its name, which no process works any more; without
// it, it does nothing, as River does: they wait for the rescuer.
func (o *Outbox[TTx]) Recover(ctx context.Context) (int, error) {
	if !o.variant.ReleaseOnRecover {
		return 0, nil
	}
	now := o.now()
	far := now.Add(1000 * time.Hour)
	stuck, err := o.exec.JobGetStuck(ctx, &riverdriver.JobGetStuckParams{Max: 1000, Schema: o.s.schema(), StuckHorizon: far})
	if err != nil {
		return 0, err
	}
	var mine []*rivertype.JobRow
	for _, job := range stuck {
		if n := len(job.AttemptedBy); n > 0 && job.AttemptedBy[n-1] == o.opts.Worker {
			mine = append(mine, job)
		}
	}
	if len(mine) == 0 {
		return 0, nil
	}
	_, err = o.rescueJobs(ctx, mine, now, far)
	return len(mine), err
}

// claim runs what River's leader and a producer would have run by now:
// the rescuer and the scheduler, then one fetch (JobGetAvailable, at most
// one job). A rescue that discards a job reports it blocked, as a claim
// that finds a row's budget spent, and fetches nothing.
func (o *Outbox[TTx]) claim(ctx context.Context) (*rivertype.JobRow, system.Delivery, error) {
	now := o.now()
	discarded, err := o.rescue(ctx, now)
	if err != nil {
		return nil, system.Delivery{}, err
	}
	if len(discarded) > 0 {
		job := discarded[0]
		return nil, system.Delivery{Result: system.ResultBlocked, Key: argsOf(job).Key, Attempts: job.Attempt, LastError: system.LastErrorBudgetExhausted}, nil
	}
	if _, err := o.exec.JobSchedule(ctx, &riverdriver.JobScheduleParams{Max: 1000, Now: &now, Schema: o.s.schema()}); err != nil {
		return nil, system.Delivery{}, err
	}
	res, err := o.exec.JobGetAvailable(ctx, &riverdriver.JobGetAvailableParams{
		ClientID: o.opts.Worker, MaxAttemptedBy: 100, MaxToLock: 1, Now: &now, Queue: river.QueueDefault, Schema: o.s.schema()})
	if err != nil {
		return nil, system.Delivery{}, err
	}
	if len(res.Jobs) == 0 {
		next, err := o.nextEligible(ctx)
		return nil, system.Delivery{Result: system.Idle, NextEligible: next}, err
	}
	job := res.Jobs[0]
	o.claims[job.ID] = job
	return job, system.Delivery{Result: system.ResultPending, Key: argsOf(job).Key, Attempts: job.Attempt, LastError: lastError(job)}, nil
}

// argsOf decodes job's arguments.
func argsOf(job *rivertype.JobRow) FollowupArgs {
	var a FollowupArgs
	_ = json.Unmarshal(job.EncodedArgs, &a) // every job of this outbox was inserted with FollowupArgs
	return a
}

// typed is job as River hands it to the worker.
func typed(job *rivertype.JobRow) *river.Job[FollowupArgs] {
	return &river.Job[FollowupArgs]{JobRow: job, Args: argsOf(job)}
}

// report is River's executor recording what the worker returned, for
// job: completed; cancelled (river.JobCancel); discarded on its last
// attempt; otherwise available or retryable at the retry policy's next
// retry. Like River's, the write takes the job if it is running,
// whoever runs it. It returns the job as it is after the write, and
// whether the write took it.
func (o *Outbox[TTx]) report(ctx context.Context, job *rivertype.JobRow, start time.Time, werr error) (*rivertype.JobRow, bool, error) {
	now := o.now()
	var p *riverdriver.JobSetStateIfRunningParams
	if werr == nil {
		p = riverdriver.JobSetStateCompleted(job.ID, now, nil)
	} else {
		errData, err := json.Marshal(rivertype.AttemptError{At: start, Attempt: job.Attempt, Error: werr.Error()})
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
			next := retryPolicy[TTx]{o}.NextRetry(job)
			if next.Sub(now) <= schedulerInterval {
				p = riverdriver.JobSetStateErrorAvailable(job.ID, next, errData, nil)
			} else {
				p = riverdriver.JobSetStateErrorRetryable(job.ID, next, errData, nil)
			}
		}
	}
	rows, err := o.exec.JobSetStateIfRunningMany(ctx, &riverdriver.JobSetStateIfRunningManyParams{
		ID: []int64{p.ID}, Attempt: []*int{p.Attempt}, ErrData: [][]byte{p.ErrData}, FinalizedAt: []*time.Time{p.FinalizedAt},
		MetadataDoMerge: []bool{false}, MetadataUpdates: [][]byte{nil}, Now: &now, ScheduledAt: []*time.Time{p.ScheduledAt},
		Schema: o.s.schema(), State: []rivertype.JobState{p.State}})
	if err != nil {
		return nil, false, err
	}
	if len(rows) != 1 {
		return nil, false, fmt.Errorf("riveroutbox: job %d is gone", job.ID)
	}
	row := rows[0]
	took := row.State == p.State || werr == nil && row.State == rivertype.JobStateCompleted
	return row, took, nil
}

// settle runs the worker's record of what its send heard, then River's
// executor's report of the result, and says where the job stands.
func (o *Outbox[TTx]) settle(ctx context.Context, job *rivertype.JobRow, taskID int64, sendErr error) (system.Delivery, error) {
	delete(o.claims, job.ID)
	werr := o.worker.finish(ctx, typed(job), taskID, sendErr)
	row, took, err := o.report(ctx, job, *job.AttemptedAt, werr)
	if err != nil {
		return system.Delivery{Key: argsOf(job).Key, Attempts: job.Attempt}, err
	}
	d := system.Delivery{Key: argsOf(job).Key, Attempts: job.Attempt}
	if !took {
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
// crash: it is returned with the Delivery the worker was making, and
// nothing more is written.
func (o *Outbox[TTx]) DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error) {
	job, d, err := o.claim(ctx)
	if err != nil || d.Result != system.ResultPending {
		return d, err
	}
	o.worker.receiver = r
	id, sendErr := o.worker.send(ctx, typed(job))
	if died := (*errDied)(nil); errors.As(sendErr, &died) {
		delete(o.claims, job.ID)
		return d, died.err
	}
	return o.settle(ctx, job, id, sendErr)
}

// ClaimNext is a worker's claim (see claim): its Claim carries the job id
// as Seq, and as Fence the job's attempt plus its rescues (see fence).
// retention is ignored: River has no notion of it.
func (o *Outbox[TTx]) ClaimNext(ctx context.Context, retention time.Duration) (system.Claim, system.Delivery, error) {
	job, d, err := o.claim(ctx)
	if err != nil || job == nil {
		return system.Claim{}, d, err
	}
	a := argsOf(job)
	return system.Claim{Seq: job.ID, Key: a.Key, Payload: a.Payload, Attempt: job.Attempt, Fence: fence(job),
		SendBy: job.AttemptedAt.Add(o.opts.SendTimeout)}, d, nil
}

// Send is the worker's send of the job c claimed. River's job timeout
// (the send timeout) is a deadline of the job's context counted from the
// fetch: a send that comes later finds the context done.
func (o *Outbox[TTx]) Send(ctx context.Context, c system.Claim, r system.Receiver) (int64, error) {
	job, ok := o.claims[c.Seq]
	if !ok {
		return 0, fmt.Errorf("riveroutbox: no claim of job %d in this process", c.Seq)
	}
	if !o.now().Before(job.AttemptedAt.Add(o.opts.SendTimeout)) {
		done, cancel := context.WithCancel(ctx)
		cancel()
		ctx = done
	}
	o.worker.receiver = r
	id, err := o.worker.send(ctx, typed(job))
	if died := (*errDied)(nil); errors.As(err, &died) {
		return 0, died.err
	}
	return id, err
}

// Settle records what the send of c heard (see settle).
func (o *Outbox[TTx]) Settle(ctx context.Context, c system.Claim, taskID int64, sendErr error) (system.Delivery, error) {
	job, ok := o.claims[c.Seq]
	if !ok {
		return system.Delivery{}, fmt.Errorf("riveroutbox: no claim of job %d in this process", c.Seq)
	}
	return o.settle(ctx, job, taskID, sendErr)
}

// result is the handoff's result for a job in state s.
func result(s rivertype.JobState) system.Result {
	switch s {
	case rivertype.JobStateCompleted:
		return system.ResultSent
	case rivertype.JobStateDiscarded, rivertype.JobStateCancelled:
		return system.ResultBlocked
	}
	return system.ResultPending
}

// state maps River's job states onto the handoff's row states: a job
// that may still run is pending, a completed one sent, a discarded or
// cancelled one blocked.
func state(s rivertype.JobState) system.State {
	switch result(s) {
	case system.ResultSent:
		return system.Sent
	case system.ResultBlocked:
		return system.Blocked
	}
	return system.Pending
}

// lastError names the job's last error as the handoff does, from the
// error strings River recorded: a completed job has none; a rescue is
// budget-exhausted on a discarded job, and not an error of its own on a
// job that may still run (a crash does not change the last error).
func lastError(job *rivertype.JobRow) string {
	if job.State == rivertype.JobStateCompleted {
		return ""
	}
	for _, e := range slices.Backward(job.Errors) {
		switch {
		case e.Error == rescuedError && job.State == rivertype.JobStateDiscarded:
			return system.LastErrorBudgetExhausted
		case e.Error == rescuedError:
			continue
		case strings.Contains(e.Error, system.ErrKeyConflict.Error()):
			return system.LastErrorConflict
		case strings.Contains(e.Error, system.ErrRejected.Error()):
			return system.LastErrorRejected
		case strings.Contains(e.Error, system.ErrTransient.Error()):
			return system.LastErrorTransient
		}
		return "local: " + e.Error
	}
	return ""
}

// fence is the job's attempt plus the times River's rescuer rescued it:
// the two counters River keeps that grow when another worker may take
// the job. River's own writes of a result check neither.
func fence(job *rivertype.JobRow) int64 {
	var m struct {
		Rescues int64 `json:"river:rescue_count"`
	}
	_ = json.Unmarshal(job.Metadata, &m) // River writes the metadata; a job without rescues has none
	return int64(job.Attempt) + m.Rescues
}
