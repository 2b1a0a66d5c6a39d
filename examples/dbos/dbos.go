// Package dbosoutbox is an outbox on DBOS Transact for Go
// (github.com/dbos-inc/dbos-transact-golang) as a DBOS user deploys it on
// SQLite, for the handoff's running mode (handoff.VerifyRunning): the app
// enqueues a workflow in the transaction of its approval
// (dbos.Enqueue with dbos.WithEnqueueTransaction), and DBOS's own runtime
// (its queue runner, its recovery of pending workflows at launch, its
// step retries and checkpoints) runs a workflow whose one step sends the
// approval's key and payload to the receiver. The workflow's ID is the
// action key. Nothing of DBOS's runtime is copied here.
package dbosoutbox

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
	"modernc.org/sqlite"
)

// StepRetries is how often the send step is retried after a failed
// send (dbos.WithStepMaxRetries): ten sends in all, DBOS's default backoff
// between them (100 ms doubling up to 5 s, about 21 s in all).
const StepRetries = 9

// SendTimeout bounds one send, as an HTTP client's timeout would.
const SendTimeout = 10 * time.Second

// Design is DBOS Transact v1.9.0 on SQLite, DBOS's defaults but the send
// step's retries (StepRetries), each replica with an executor ID of its
// own: verified by TestVerifyRunning.
var Design = designs.Running{
	Name:    "dbos",
	Summary: fmt.Sprintf("DBOS Transact v1.9.0 on SQLite: a queued workflow enqueued in the approval's transaction, its send step retried %d times, DBOS's other defaults", StepRetries),
	// The step's budget: one send and StepRetries retries.
	Budget: StepRetries + 1,
	// DBOS counts a step's failed runs (executeStepWithRetry's runs,
	// after each failure) against WithStepMaxRetries, in memory.
	Counts: designs.CountsErrors,
	// A workflow claimed from the queue is PENDING under this executor's
	// ID until it ends; no other executor takes it (only a launch with
	// the same executor ID recovers it), however long it runs.
	Holds: designs.HeldByLock,
	// The step's ten sends, each up to SendTimeout, and the backoff
	// between them (about 21 s); the queue's poll (1 s, backing off to
	// 2 min after an error) before the workflow starts.
	Settle:     5 * time.Minute,
	SQLiteOnly: true,
	Unchecked: []string{
		"the order DBOS dequeues workflows in (by created_at, which SQLite stamps with julianday('now'), the database's clock); this design sets no rate limiter, delay or timeout, which would read it too",
		"the receiver's retry hints: a DBOS step retries at its own backoff, whatever Retry-After says",
	},
	Boot: func(ctx context.Context, p designs.Process) (designs.Booted, error) {
		return boot(ctx, p, fmt.Sprintf("harbor-%d", p.Replica()))
	},
}

// Uncounted is Design declaring no count (designs.CountsNothing): the
// same DBOS runtime, judged on every check but H4. A crash resets the
// step's count (TestCrashResetsTheStepBudget), so the search runs this
// declaration to judge the rest.
var Uncounted = func() designs.Running {
	d := Design
	d.Name = "dbos-uncounted"
	d.Counts = designs.CountsNothing
	return d
}()

// SharedExecutor is Uncounted with DBOS's default executor ID, "local",
// in every replica, as a deployment that sets no DBOS__VMID runs.
var SharedExecutor = func() designs.Running {
	d := Uncounted
	d.Name = "dbos-shared-executor"
	d.Boot = func(ctx context.Context, p designs.Process) (designs.Booted, error) { return boot(ctx, p, "") }
	return d
}()

// workflowName is the name the workflow is registered and enqueued
// under; queueName the queue it is enqueued on.
const (
	workflowName = "harbor_create_followup"
	queueName    = "followups"
)

// followup is a workflow's input: the approval's key and payload.
type followup struct {
	Key     string `json:"key"`
	Payload string `json:"payload"`
}

// The app's table, in the system database's file: one row an approval,
// written in the transaction that enqueues its workflow.
const (
	approvalsTable = `CREATE TABLE IF NOT EXISTS followup_approvals (key TEXT PRIMARY KEY, payload TEXT NOT NULL)`
	sqlHeld        = `SELECT payload FROM followup_approvals WHERE key = ?`
	sqlApprove     = `INSERT INTO followup_approvals (key, payload) VALUES (?, ?)`
	sqlKeys        = `SELECT key FROM followup_approvals`
)

// refusedPrefix starts the error of a workflow whose send the receiver
// refused for good.
const refusedPrefix = "refused by the receiver: "

// quiet is DBOS's logger here: a search boots hundreds of processes,
// and DBOS logs every launch, recovery and step retry.
var quiet = slog.New(slog.DiscardHandler)

// booted is one boot of the app: its database and DBOS's context.
type booted struct {
	db   *sql.DB
	dbos dbos.Context
}

// boot opens the SQLite file through p's connections with the settings
// DBOS gives its own SQLite pool, launches DBOS on it (which recovers
// the workflows this executor left PENDING), and registers the queue.
func boot(ctx context.Context, p designs.Process, executorID string) (designs.Booted, error) {
	db := sql.OpenDB(p.WrapSQLite(sqliteConnector{"file:" + p.Database() +
		"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=foreign_keys(ON)&_pragma=synchronous(NORMAL)&_pragma=journal_mode(WAL)"}))
	db.SetMaxOpenConns(8) // as DBOS's own SQLite pool (sqlite_pool.go)
	if _, err := db.ExecContext(ctx, approvalsTable); err != nil {
		db.Close()
		return nil, err
	}
	dctx, err := dbos.NewContext(ctx, dbos.Config{
		AppName:        "harbor-followups",
		SQLiteSystemDB: db,
		// One executor ID a replica, the same from boot to boot: a launch
		// recovers the PENDING workflows of its own executor ID only.
		ExecutorID: executorID,
		Logger:     quiet,
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	receiver := p.ReceiverFor(fmt.Sprintf("harbor-%d", p.Replica()))
	dbos.RegisterWorkflow(dctx, func(ctx dbos.Context, f followup) (int64, error) {
		return send(ctx, receiver, f)
	}, dbos.WithWorkflowName(workflowName))
	if _, err := dbos.RegisterQueue(dctx, queueName); err != nil {
		dbos.Shutdown(dctx, time.Minute)
		db.Close()
		return nil, err
	}
	if err := dbos.Launch(dctx); err != nil {
		dbos.Shutdown(dctx, time.Minute)
		db.Close()
		return nil, err
	}
	return &booted{db: db, dbos: dctx}, nil
}

// send is the workflow: one step that creates the task, retried by DBOS
// after a transient failure, not after a refusal. The task id is the
// workflow's output; a refusal its error.
func send(ctx dbos.Context, receiver system.Receiver, f followup) (int64, error) {
	id, err := dbos.RunAsStep(ctx, func(ctx context.Context) (int64, error) {
		ctx, cancel := context.WithTimeout(ctx, SendTimeout)
		defer cancel()
		return receiver.CreateTask(ctx, f.Key, f.Payload)
	}, dbos.WithStepName("create-task"), dbos.WithStepMaxRetries(StepRetries),
		dbos.WithStepRetryPredicate(func(err error) bool { return !refused(err) }))
	if refused(err) {
		return 0, fmt.Errorf("%s%w", refusedPrefix, err)
	}
	return id, err
}

// refused is a refusal for good: 400 or 422.
func refused(err error) bool {
	return errors.Is(err, system.ErrRejected) || errors.Is(err, system.ErrKeyConflict)
}

// sqliteConnector connects to the SQLite file dsn names.
type sqliteConnector struct{ dsn string }

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) { return c.Driver().Open(c.dsn) }
func (c sqliteConnector) Driver() driver.Driver                        { return &sqlite.Driver{} }

// Approve writes the approval and enqueues its workflow, ID the key, in
// one transaction on the system database.
func (b *booted) Approve(ctx context.Context, caseID, title string) (string, string, error) {
	a, err := system.NewApproval(caseID, title)
	if err != nil {
		return "", "", err
	}
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return a.Key, a.Payload, err
	}
	defer tx.Rollback()
	var held string
	switch err := tx.QueryRowContext(ctx, sqlHeld, a.Key).Scan(&held); {
	case err == nil && held == a.Payload:
		return a.Key, a.Payload, nil
	case err == nil:
		return a.Key, a.Payload, fmt.Errorf("%w: %s holds another payload", system.ErrKeyConflict, a.Key)
	case !errors.Is(err, sql.ErrNoRows):
		return a.Key, a.Payload, err
	}
	if _, err := tx.ExecContext(ctx, sqlApprove, a.Key, a.Payload); err != nil {
		return a.Key, a.Payload, err
	}
	if _, err := dbos.Enqueue[int64](b.dbos, queueName, workflowName, followup{Key: a.Key, Payload: a.Payload},
		dbos.WithEnqueueWorkflowID(a.Key), dbos.WithEnqueueTransaction(tx)); err != nil {
		return a.Key, a.Payload, err
	}
	return a.Key, a.Payload, tx.Commit()
}

// Read shows each approval by its workflow's status, as DBOS's
// ListWorkflows gives it: sent with the task id a workflow succeeded
// with; blocked when the receiver refused it; discarded with DBOS's
// error when its step ran out of retries, or when DBOS dead-lettered it
// after its recovery attempts; pending while enqueued or running. DBOS
// keeps a step's failures in memory only, so no attempts are shown. An
// approval without a workflow is gone.
func (b *booted) Read(ctx context.Context) (map[string]designs.RunningRow, error) {
	rs, err := b.db.QueryContext(ctx, sqlKeys)
	if err != nil {
		return nil, err
	}
	var keys []string
	for rs.Next() {
		var k string
		if err := rs.Scan(&k); err != nil {
			rs.Close()
			return nil, err
		}
		keys = append(keys, k)
	}
	if err := rs.Err(); err != nil {
		rs.Close()
		return nil, err
	}
	rs.Close()
	shown := map[string]designs.RunningRow{}
	if len(keys) == 0 {
		return shown, nil
	}
	wfs, err := dbos.ListWorkflows(b.dbos, dbos.WithFilterWorkflowIDs(keys...), dbos.WithFilterLoadOutput(true))
	if err != nil {
		return nil, err
	}
	for _, w := range wfs {
		switch w.Status {
		case dbos.WorkflowStatusSuccess:
			id, err := taskID(w.Output)
			if err != nil {
				return nil, fmt.Errorf("workflow %s: %w", w.ID, err)
			}
			shown[w.ID] = designs.RunningRow{State: designs.RowSent, TaskID: id, Attempts: -1}
		case dbos.WorkflowStatusError, dbos.WorkflowStatusMaxRecoveryAttemptsExceeded, dbos.WorkflowStatusCancelled:
			reason := string(w.Status)
			if w.Error != nil {
				reason = w.Error.Error()
			}
			state := designs.RowDiscarded
			if strings.Contains(reason, refusedPrefix) {
				state = designs.RowBlocked
			}
			shown[w.ID] = designs.RunningRow{State: state, Attempts: -1, Reason: reason}
		default:
			shown[w.ID] = designs.RunningRow{State: designs.RowPending, Attempts: -1}
		}
	}
	return shown, nil
}

// taskID is a successful workflow's output, the task id, as
// ListWorkflows decodes it.
func taskID(out any) (int64, error) {
	switch v := out.(type) {
	case int64:
		return v, nil
	case float64:
		return int64(v), nil
	case int:
		return int64(v), nil
	case string:
		var id int64
		_, err := fmt.Sscan(strings.Trim(v, `"`), &id)
		return id, err
	}
	return 0, fmt.Errorf("output %v (%T) is no task id", out, out)
}

// Stop shuts DBOS down (its queue runner, its workflows, its pool) and
// closes the database. After a crash the connections are cut already:
// the workflows under way fail at once, and stay PENDING for the next
// launch of this executor to recover.
func (b *booted) Stop() error {
	err := dbos.Shutdown(b.dbos, 30*time.Second)
	return errors.Join(err, b.db.Close())
}
