// Package gueoutbox is an outbox on gue (github.com/vgarvardt/gue/v5), a
// PostgreSQL job queue, as a gue user deploys it, for the handoff's
// running mode (handoff.VerifyRunning): the app enqueues a gue job in the
// transaction of its approval (Client.EnqueueTx), and gue's own worker
// pool (WorkerPool.Run: its workers' poll loops, the row lock each holds
// in a transaction for the whole job, the error count and backoff, the
// deletion of a job done) runs a handler that sends the job's action key
// and payload to the receiver. Nothing of gue's runtime is copied here.
package gueoutbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
	"github.com/vgarvardt/gue/v5"
	"github.com/vgarvardt/gue/v5/adapter"
	"github.com/vgarvardt/gue/v5/adapter/pgxv5"
)

// The deployment's settings.
const (
	// poolSize is how many gue workers a process runs.
	poolSize = 2
	// maxConns is the most connections a boot holds to the server: one for
	// each worker (a worker holds its connection for the whole job), one
	// for the approvals and one for the reads.
	maxConns = poolSize + 2
	// maxErrors is the budget: after this many failed sends of one job
	// the handler records the key as given up, for a person, and has gue
	// discard the job.
	maxErrors = 10
	// jobTTL bounds one run of a job (gue's WithPoolJobTTL): a send that
	// hangs is cancelled and counted as a failure.
	jobTTL = 30 * time.Second
	// pollInterval is gue's default poll interval, set here to say so.
	pollInterval = 5 * time.Second
	// recordTimeout bounds what the handler writes after a send.
	recordTimeout = 10 * time.Second
)

// Design is gue v5.8.0's WorkerPool with two workers, gue's defaults
// (a poll every 5 s, its exponential backoff: 1.6ⁿ s after the nth
// failure with 20 % jitter, at most an hour; priority order), a job timeout of 30 s, and a
// give-up after 10 failed sends, which the handler records for a person.
var Design = designs.Running{
	Name:    "gue",
	Summary: "gue v5.8.0's WorkerPool, 2 workers, gue's defaults, a 30 s job TTL, given up after 10 failed sends",
	// gue counts errors: Job.Error adds one to error_count, in the job's
	// transaction, after the handler returned an error. A crash or a cut
	// connection during a send rolls that transaction back, and with it
	// the lock: the send counts nothing.
	Budget: maxErrors,
	Counts: designs.CountsErrors,
	// gue's LockJob is SELECT … FOR UPDATE SKIP LOCKED in a transaction
	// that stays open for the whole job: the row lock is the hold, and it
	// lasts while the worker's connection lives.
	Holds: designs.HeldByLock,
	// No other worker takes a job while its holder's connection lives; a
	// job runs at most jobTTL.
	Lease: jobTTL,
	// Ten failed runs of at most jobTTL each, gue's backoffs between them
	// (1.6ⁿ s after the nth failure: 1.6, 2.6, … 69 s, about 180 s, and up
	// to 20 % jitter), and a poll interval before each: under 10 minutes
	// for a key whose every send times out. Fifteen leave room for the
	// runs a crash or a reset loses.
	Settle: 15 * time.Minute,
	Boot:   boot,
}

// jobType is the gue job type of an approval's delivery.
const jobType = "harbor_create_followup"

// jobArgs are the gue job's arguments: the stable action key and the
// canonical payload that every run sends.
type jobArgs struct {
	Key     string `json:"key"`
	Payload string `json:"payload"`
}

// The app's table beside gue's: the approval, the task id its job
// recorded, or why it was given up. gue deletes a job when it is done or
// discarded, so what a person needs to see is kept here, written in the
// job's own transaction.
const (
	approvalsTable = `CREATE TABLE IF NOT EXISTS followup_approvals (
	key TEXT PRIMARY KEY, payload TEXT NOT NULL, job_id TEXT NOT NULL,
	task_id BIGINT, given_up TEXT, errors INTEGER)`
	sqlHeld    = `SELECT payload FROM followup_approvals WHERE key = $1`
	sqlApprove = `INSERT INTO followup_approvals (key, payload, job_id) VALUES ($1, $2, $3)`
	sqlTaskOf  = `UPDATE followup_approvals SET task_id = $1 WHERE key = $2`
	sqlGivenUp = `UPDATE followup_approvals SET given_up = $1, errors = $2 WHERE key = $3`
	sqlRead    = `SELECT a.key, coalesce(a.task_id, 0), coalesce(a.given_up, ''), coalesce(a.errors, 0),
		j.job_id IS NOT NULL, coalesce(j.error_count, 0)
		FROM followup_approvals a LEFT JOIN gue_jobs j ON j.job_id = a.job_id`
	// gueSchema is gue's migrations/schema.sql for v5.
	gueSchema = `CREATE TABLE IF NOT EXISTS gue_jobs
(
  job_id      TEXT        NOT NULL PRIMARY KEY,
  priority    SMALLINT    NOT NULL,
  run_at      TIMESTAMPTZ NOT NULL,
  job_type    TEXT        NOT NULL,
  args        BYTEA       NOT NULL,
  error_count INTEGER     NOT NULL DEFAULT 0,
  last_error  TEXT,
  queue       TEXT        NOT NULL,
  created_at  TIMESTAMPTZ NOT NULL,
  updated_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_gue_jobs_selector ON gue_jobs (queue, run_at, priority);`
)

// booted is one boot of the app: its pool, gue's client and worker pool.
type booted struct {
	pool   *pgxpool.Pool
	db     adapter.ConnPool
	client *gue.Client
	cancel context.CancelFunc
	done   chan error
}

// boot opens the app database through p's connections (p.Dial, which a
// crash cuts), makes gue's table and the app's, and starts gue's worker
// pool.
func boot(ctx context.Context, p designs.Process) (designs.Booted, error) {
	if p.Backend() != "postgres" {
		return nil, errors.New("gueoutbox: gue runs only on PostgreSQL")
	}
	connect, _, err := system.SplitPostgres(p.Database())
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(connect)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.DialFunc = p.Dial
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	b := &booted{pool: pool, db: pgxv5.NewConnPool(pool), done: make(chan error, 1)}
	if err := b.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	b.client, err = gue.NewClient(b.db)
	if err != nil {
		pool.Close()
		return nil, err
	}
	receivers := make([]system.Receiver, poolSize)
	for i := range receivers {
		receivers[i] = p.ReceiverFor(fmt.Sprintf("gue:%d.%d", p.Replica(), i))
	}
	send := func(ctx context.Context, j *gue.Job) error {
		r := receivers[0]
		if i := gue.GetWorkerIdx(ctx); i >= 0 && i < len(receivers) {
			r = receivers[i]
		}
		return work(ctx, r, j)
	}
	workers, err := gue.NewWorkerPool(b.client, gue.WorkMap{jobType: send}, poolSize,
		gue.WithPoolPollInterval(pollInterval),
		gue.WithPoolJobTTL(jobTTL),
	)
	if err != nil {
		pool.Close()
		return nil, err
	}
	run, cancel := context.WithCancel(ctx)
	b.cancel = cancel
	go func() { b.done <- workers.Run(run) }()
	return b, nil
}

// work is the job's handler: it sends the job's key and payload through
// r. On a task id it records the id beside the approval in the job's own
// transaction, which gue commits with the job's deletion. On a refusal
// for good it records the refusal and has gue discard the job. On a
// transient failure it returns the error, and gue counts it and runs the
// job again after its backoff (or the receiver's retry hint); the
// failure that spends the budget is recorded as a give-up and the job
// discarded.
func work(ctx context.Context, r system.Receiver, j *gue.Job) error {
	var a jobArgs
	if err := json.Unmarshal(j.Args, &a); err != nil {
		return gue.ErrDiscardJob("malformed arguments: " + err.Error())
	}
	id, err := r.CreateTask(ctx, a.Key, a.Payload)
	// The handler's context ends with the job's TTL, which a send that
	// timed out has reached: what the handler records in the job's
	// transaction is written under a context of its own, as gue's
	// Job.Error is (gue passes it the worker's context, not the job's).
	rec, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	switch {
	case err == nil:
		_, err = j.Tx().Exec(rec, sqlTaskOf, id, a.Key)
		return err
	case errors.Is(err, system.ErrKeyConflict) || errors.Is(err, system.ErrRejected):
		if _, werr := j.Tx().Exec(rec, sqlGivenUp, "refused: "+err.Error(), j.ErrorCount, a.Key); werr != nil {
			return werr
		}
		return gue.ErrDiscardJob(err.Error())
	}
	failures := j.ErrorCount + 1
	if failures >= maxErrors {
		reason := fmt.Sprintf("gave up after %d failed sends: %v", failures, err)
		if _, werr := j.Tx().Exec(rec, sqlGivenUp, reason, failures, a.Key); werr != nil {
			return werr
		}
		return gue.ErrDiscardJob(reason)
	}
	if hint, ok := errors.AsType[*system.RetryHint](err); ok && hint.After > 0 {
		// Still counted: gue adds one to error_count for a reschedule too.
		return gue.ErrRescheduleJobIn(hint.After, err.Error())
	}
	return err
}

// migrate makes gue's table and the app's, once: concurrent boots of the
// replicas wait for each other on an advisory lock.
func (b *booted) migrate(ctx context.Context) error {
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema()))`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, gueSchema); err != nil {
		return fmt.Errorf("gueoutbox: gue's schema: %w", err)
	}
	if _, err := tx.Exec(ctx, approvalsTable); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Approve records the approval and enqueues its gue job in one
// transaction. A repeated approval changes nothing; another payload for
// the key is system.ErrKeyConflict.
func (b *booted) Approve(ctx context.Context, caseID, title string) (string, string, error) {
	a, err := system.NewApproval(caseID, title)
	if err != nil {
		return "", "", err
	}
	tx, err := b.db.Begin(ctx)
	if err != nil {
		return a.Key, a.Payload, err
	}
	defer tx.Rollback(ctx)
	var held string
	switch err := tx.QueryRow(ctx, sqlHeld, a.Key).Scan(&held); {
	case err == nil && held == a.Payload:
		return a.Key, a.Payload, nil
	case err == nil:
		return a.Key, a.Payload, fmt.Errorf("%w: %s holds another payload", system.ErrKeyConflict, a.Key)
	case !errors.Is(err, adapter.ErrNoRows):
		return a.Key, a.Payload, err
	}
	args, err := json.Marshal(jobArgs{Key: a.Key, Payload: a.Payload})
	if err != nil {
		return a.Key, a.Payload, err
	}
	j := &gue.Job{Type: jobType, Args: args}
	if err := b.client.EnqueueTx(ctx, j, tx); err != nil {
		return a.Key, a.Payload, err
	}
	if _, err := tx.Exec(ctx, sqlApprove, a.Key, a.Payload, j.ID.String()); err != nil {
		return a.Key, a.Payload, err
	}
	return a.Key, a.Payload, tx.Commit(ctx)
}

// Read shows each approval: sent once its job recorded a task id (gue
// deleted the job in the same transaction), blocked or discarded with the
// reason the handler recorded, pending while its job is in gue_jobs (with
// gue's error_count as its attempts), and gone when its job is gone
// without any of these.
func (b *booted) Read(ctx context.Context) (map[string]designs.RunningRow, error) {
	rs, err := b.pool.Query(ctx, sqlRead)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	shown := map[string]designs.RunningRow{}
	for rs.Next() {
		var key, givenUp string
		var task int64
		var recorded, errorCount int
		var queued bool
		if err := rs.Scan(&key, &task, &givenUp, &recorded, &queued, &errorCount); err != nil {
			return nil, err
		}
		switch {
		case task != 0:
			shown[key] = designs.RunningRow{State: designs.RowSent, TaskID: task, Attempts: -1}
		case strings.HasPrefix(givenUp, "refused: "):
			shown[key] = designs.RunningRow{State: designs.RowBlocked, Attempts: recorded, Reason: givenUp}
		case givenUp != "":
			shown[key] = designs.RunningRow{State: designs.RowDiscarded, Attempts: recorded, Reason: givenUp}
		case queued:
			shown[key] = designs.RunningRow{State: designs.RowPending, Attempts: errorCount}
		}
	}
	return shown, rs.Err()
}

// Stop ends gue's worker pool (each worker finishes or abandons the job
// it holds: its context is cancelled) and closes the pool.
func (b *booted) Stop() error {
	b.cancel()
	err := <-b.done
	b.pool.Close()
	return err
}
