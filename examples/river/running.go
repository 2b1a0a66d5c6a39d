// Package riveroutbox is an outbox on River (github.com/riverqueue/river)
// as a River user deploys it, for the handoff's running mode
// (handoff.VerifyRunning): the app inserts a River job in the transaction
// of its approval, and River's own client (producer, executor, completer,
// rescuer, elector and maintenance services) works it with a worker that
// sends the job's action key and payload to the receiver. Nothing of
// River's runtime is copied here: the harness boots the client and judges
// what it did.
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

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
)

// Design is River v0.51.2's client as it ships, in poll-only mode (a
// LISTEN would stop the bubble's virtual time), with River's defaults:
// 25 attempts, its retry policy (attempt⁴ seconds, with jitter), a job
// timeout of a minute, stuck jobs rescued after an hour, a fetch poll
// every second, and 4 workers.
var Design = newDesign("river", "River v0.51.2's own client, poll-only, with River's defaults",
	river.MaxAttemptsDefault,
	// River's default retry policy waits attempt⁴ seconds after attempt n:
	// 25 attempts add up to about 26 days. The harness stops as soon as
	// every job is final.
	30*24*time.Hour)

// DesignFiveAttempts is Design with River's Config.MaxAttempts set to 5,
// as a deployment that wants a refused or unreachable key in front of a
// person within minutes sets it: its five attempts back off some six
// minutes in all, so a search can draw keys that never succeed.
var DesignFiveAttempts = newDesign("river-max-attempts-5", "River v0.51.2's own client, poll-only, with MaxAttempts 5",
	5,
	// Each of the five attempts may be held by a paused worker until
	// River's rescuer takes the job back (an hour and 30 s); with the
	// job timeouts of a minute and the backoffs between the attempts (1,
	// 16, 81 and 256 s, with jitter), six hours cover them all.
	6*time.Hour)

// newDesign is River's client with maxAttempts attempts a job, River's
// defaults otherwise, finishing every key within settle once faults heal.
func newDesign(name, summary string, maxAttempts int, settle time.Duration) designs.Running {
	return designs.Running{
		Name:    name,
		Summary: summary,
		Budget:  maxAttempts,
		// A running job is River's until its rescuer, which runs every 30 s
		// on the leader, finds it running for longer than
		// RescueStuckJobsAfter (an hour by default).
		Lease:  time.Hour + 30*time.Second,
		Settle: settle,
		Unchecked: []string{
			"River's queries that stamp a time with the database's now() where River passes none: River is given the bubble's clock " +
				"(Config.Test.Time) and passes it to the queries that take one",
		},
		Boot: func(ctx context.Context, p designs.Process) (designs.Booted, error) { return boot(ctx, p, maxAttempts) },
	}
}

// FollowupArgs are the River job's arguments: the stable action key and
// the canonical payload that every attempt sends.
type FollowupArgs struct {
	Key     string `json:"key"`
	Payload string `json:"payload"`
}

// Kind is the River job kind.
func (FollowupArgs) Kind() string { return "harbor_create_followup" }

// sender is the River worker: it sends the job's key and payload, records
// the task id beside the approval, and lets River complete the job. A
// transient failure is returned, so that River retries it; a conflict or
// a refusal cancels the job for a person.
type sender struct {
	river.WorkerDefaults[FollowupArgs]
	r   system.Receiver
	app app
}

func (w *sender) Work(ctx context.Context, job *river.Job[FollowupArgs]) error {
	id, err := w.r.CreateTask(ctx, job.Args.Key, job.Args.Payload)
	switch {
	case errors.Is(err, system.ErrKeyConflict) || errors.Is(err, system.ErrRejected):
		return river.JobCancel(err)
	case err != nil:
		return err
	}
	return w.app.exec(ctx, sqlTaskOf, id, job.Args.Key)
}

// bubbleClock is River's time generator on the clock of the process:
// inside the harness's bubble, its virtual one. Stubbed (NowOrNil), so
// that River passes it to its queries instead of the database's now().
type bubbleClock struct{}

func (bubbleClock) Now() time.Time { return time.Now() }
func (bubbleClock) NowOrNil() *time.Time {
	t := time.Now().UTC()
	return &t
}

// The app's table beside River's: the approval, its job and the task id.
const approvalsTable = `CREATE TABLE IF NOT EXISTS followup_approvals (
	key TEXT PRIMARY KEY, payload TEXT NOT NULL, job_id BIGINT, task_id BIGINT)`

// The app's statements, in PostgreSQL's numbering, which River's SQLite
// driver's database/sql and SQLite both take.
const (
	sqlHeld    = `SELECT payload FROM followup_approvals WHERE key = $1`
	sqlApprove = `INSERT INTO followup_approvals (key, payload) VALUES ($1, $2)`
	sqlJobOf   = `UPDATE followup_approvals SET job_id = $1 WHERE key = $2`
	sqlTaskOf  = `UPDATE followup_approvals SET task_id = $1 WHERE key = $2`
	sqlRead    = `SELECT a.key, coalesce(a.task_id, 0), coalesce(j.state, ''), coalesce(j.attempt, 0), coalesce(j.errors, '[]')
		FROM followup_approvals a LEFT JOIN river_job j ON j.id = a.job_id`
	sqlReadText = `SELECT a.key, coalesce(a.task_id, 0), coalesce(j.state::text, ''), coalesce(j.attempt, 0), coalesce(j.errors::text, '[]')
		FROM followup_approvals a LEFT JOIN river_job j ON j.id = a.job_id`
)

// app is one boot of the app on one backend: River's client on its
// driver, and the app's own statements in River's transactions.
type app interface {
	// approve records a's approval and inserts its job in one
	// transaction; a repeated approval changes nothing.
	approve(ctx context.Context, a system.Approval) error
	// query runs the app's read.
	query(ctx context.Context) (rows, error)
	// exec runs one statement of the app's.
	exec(ctx context.Context, query string, args ...any) error
	start(ctx context.Context) error
	stop(ctx context.Context) error
	close()
}

// rows is what a read scans.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Close()
	Err() error
}

// booted is a running boot.
type booted struct{ app app }

// boot opens the app database through p's connections, migrates River's
// tables, and starts River's client with maxAttempts attempts a job.
func boot(ctx context.Context, p designs.Process, maxAttempts int) (designs.Booted, error) {
	var a app
	var err error
	if p.Backend() == "postgres" {
		a, err = openPostgres(ctx, p, maxAttempts)
	} else {
		a, err = openSQLite(ctx, p, maxAttempts)
	}
	if err != nil {
		return nil, err
	}
	if err := a.start(ctx); err != nil {
		a.close()
		return nil, err
	}
	return booted{a}, nil
}

// config is River's configuration as a River user writes it, poll-only,
// with maxAttempts attempts a job.
func config(workers *river.Workers, schema string, maxAttempts int) *river.Config {
	return &river.Config{
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxAttempts: maxAttempts,
		PollOnly:    true,
		Queues:      map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		Schema:      schema,
		Test:        river.TestConfig{Time: bubbleClock{}},
		Workers:     workers,
	}
}

// migrate runs River's migrations on drv, then makes the app's table.
func migrate[TTx any](ctx context.Context, drv riverdriver.Driver[TTx], exec func(string) error) error {
	m, err := rivermigrate.New(drv, &rivermigrate.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("riveroutbox: migrating River's tables: %w", err)
	}
	return exec(approvalsTable)
}

func (b booted) Approve(ctx context.Context, caseID, title string) (string, string, error) {
	a, err := system.NewApproval(caseID, title)
	if err != nil {
		return "", "", err
	}
	return a.Key, a.Payload, b.app.approve(ctx, a)
}

func (b booted) Read(ctx context.Context) (map[string]designs.RunningRow, error) {
	rs, err := b.app.query(ctx)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	shown := map[string]designs.RunningRow{}
	for rs.Next() {
		var key, state, errs string
		var task int64
		var attempt int
		if err := rs.Scan(&key, &task, &state, &attempt, &errs); err != nil {
			return nil, err
		}
		row, ok := rowOf(rivertype.JobState(state), task, attempt, errs)
		if ok {
			shown[key] = row
		}
	}
	return shown, rs.Err()
}

// rowOf is where a key stands given its job's state (empty when River's
// cleaner deleted the job), the task id the worker recorded, the job's
// attempts and its errors. A key whose job is gone without a task id is
// not shown: it is gone.
func rowOf(state rivertype.JobState, task int64, attempt int, errs string) (designs.RunningRow, bool) {
	switch state {
	case "":
		if task == 0 {
			return designs.RunningRow{}, false
		}
		return designs.RunningRow{State: designs.RowSent, TaskID: task, Attempts: -1}, true
	case rivertype.JobStateCompleted:
		if task == 0 {
			return designs.RunningRow{State: designs.RowDone, Attempts: attempt}, true
		}
		return designs.RunningRow{State: designs.RowSent, TaskID: task, Attempts: attempt}, true
	case rivertype.JobStateDiscarded, rivertype.JobStateCancelled:
		return designs.RunningRow{State: designs.RowDiscarded, Attempts: attempt, Reason: string(state) + ": " + lastError(errs)}, true
	}
	return designs.RunningRow{State: designs.RowPending, Attempts: attempt}, true
}

// lastError is the last of a job's errors, as River records them.
func lastError(errs string) string {
	var all []rivertype.AttemptError
	if json.Unmarshal([]byte(errs), &all) != nil || len(all) == 0 {
		return "no error recorded"
	}
	return all[len(all)-1].Error
}

func (b booted) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := b.app.stop(ctx)
	b.app.close()
	return err
}

// approve is the approval's transaction on either backend: the app's
// row, River's job (insert), the job's id beside the row.
func approve(a system.Approval, heldPayload func(key string, held *string) error, exec func(string, ...any) error, insert func() (int64, error)) error {
	var held string
	switch err := heldPayload(a.Key, &held); {
	case err == nil && held == a.Payload:
		return nil
	case err == nil:
		return fmt.Errorf("%w: %s holds another payload", system.ErrKeyConflict, a.Key)
	case !errors.Is(err, sql.ErrNoRows) && !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	if err := exec(sqlApprove, a.Key, a.Payload); err != nil {
		return err
	}
	id, err := insert()
	if err != nil {
		return err
	}
	return exec(sqlJobOf, id, a.Key)
}
