// Package goqiterunning is an outbox on goqite (maragu.dev/goqite) as a
// goqite user deploys it, for the handoff's running mode
// (handoff.VerifyRunning): the app sends a job message in the
// transaction of its approval (jobs.CreateTx), and goqite's own job
// runner (jobs.Runner: its poll loop, the extension of a running job's
// timeout, the deletion of a job done) runs a job that sends the
// message's action key and payload to the receiver. Nothing of goqite's
// runtime is copied here.
package goqiterunning

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
	"maragu.dev/goqite"
	"maragu.dev/goqite/jobs"
	"modernc.org/sqlite"

	outbox "example.com/goqite"
)

// Defaults is goqite v0.4.0's job runner as it ships, with goqite's
// defaults: a message received at most 3 times (MaxReceive), a visibility
// timeout of 5 s, extended by 5 s while its job runs, a poll every
// 100 ms, 4 jobs at once. goqite's runner has no backoff: a failed job's
// message is received again once its timeout runs out, and after its
// third receive never again, and nothing says so. A receiver down for
// 15 s loses the work (the finding this design is kept for).
var Defaults = Configured("goqite-defaults", 3)

// Design is the same runner with MaxReceive raised to 100, as a user
// who wants to ride out a receiver's outage of up to about eight
// minutes (100 receives 5 s apart) would configure it: verified by
// TestVerifyRunning. A receiver down for longer loses the work as
// Defaults does.
var Design = Configured("goqite", 100)

// Configured is goqite's job runner with MaxReceive maxReceive.
func Configured(name string, maxReceive int) designs.Running {
	return designs.Running{
		Name:    name,
		Summary: fmt.Sprintf("goqite v0.4.0's own job runner, MaxReceive %d, goqite's other defaults", maxReceive),
		Budget:  maxReceive,
		// A message is the runner's until its visibility timeout runs out,
		// 5 s after the last extension.
		Lease: 5 * time.Second,
		// Every receive, a timeout apart, and every job's send.
		Settle: time.Duration(maxReceive) * 10 * time.Second,
		Unchecked: []string{
			"the order messages are received in: goqite orders them by created, which the database stamps with its own clock",
		},
		Boot: func(ctx context.Context, p designs.Process) (designs.Booted, error) { return boot(ctx, p, maxReceive) },
	}
}

// jobName is the job the runner runs for an approval.
const jobName = "harbor_create_followup"

// job is a job message's body: the approval's key and payload.
type job struct {
	Key     string `json:"key"`
	Payload string `json:"payload"`
}

// The app's table beside goqite's: the approval, its message and the
// task id its job recorded.
const (
	approvalsTable = `CREATE TABLE IF NOT EXISTS followup_approvals (
	key TEXT PRIMARY KEY, payload TEXT NOT NULL, message_id TEXT, task_id BIGINT, refused TEXT)`
	sqlHeld    = `SELECT payload FROM followup_approvals WHERE key = $1`
	sqlApprove = `INSERT INTO followup_approvals (key, payload, message_id) VALUES ($1, $2, $3)`
	sqlTaskOf  = `UPDATE followup_approvals SET task_id = $1 WHERE key = $2`
	sqlRefused = `UPDATE followup_approvals SET refused = $1 WHERE key = $2`
	sqlRead    = `SELECT a.key, coalesce(a.task_id, 0), coalesce(a.refused, ''), m.id IS NOT NULL, coalesce(m.received, 0)
		FROM followup_approvals a LEFT JOIN goqite m ON m.id = a.message_id`
)

// booted is one boot of the app: its database, goqite's queue and runner.
type booted struct {
	db     *sql.DB
	q      *goqite.Queue
	pg     bool
	cancel context.CancelFunc
	done   chan struct{}
}

// boot opens the app database through p's connections, makes goqite's
// table as its README says (once), and starts goqite's job runner.
func boot(ctx context.Context, p designs.Process, maxReceive int) (designs.Booted, error) {
	b := &booted{pg: p.Backend() == "postgres", done: make(chan struct{})}
	flavor, schema := goqite.SQLFlavorSQLite, outbox.GoqiteSQLite
	if b.pg {
		connect, _, err := system.SplitPostgres(p.Database())
		if err != nil {
			return nil, err
		}
		cfg, err := pgx.ParseConfig(connect)
		if err != nil {
			return nil, err
		}
		cfg.DialFunc = p.Dial
		b.db = stdlib.OpenDB(*cfg)
		b.db.SetMaxOpenConns(4)
		flavor, schema = goqite.SQLFlavorPostgreSQL, outbox.GoqitePostgres
	} else {
		b.db = sql.OpenDB(p.WrapSQLite(sqliteConnector{"file:" + p.Database() +
			"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)"}))
		b.db.SetMaxOpenConns(1)
	}
	if err := b.migrate(ctx, schema); err != nil {
		b.db.Close()
		return nil, err
	}
	b.q = goqite.New(goqite.NewOpts{DB: b.db, Name: "followups", SQLFlavor: flavor, MaxReceive: maxReceive})
	r := jobs.NewRunner(jobs.NewRunnerOpts{Limit: 4, Queue: b.q})
	receiver := p.Receiver()
	r.Register(jobName, func(ctx context.Context, body []byte) error {
		var j job
		if err := json.Unmarshal(body, &j); err != nil {
			return err
		}
		id, err := receiver.CreateTask(ctx, j.Key, j.Payload)
		switch {
		case errors.Is(err, system.ErrKeyConflict) || errors.Is(err, system.ErrRejected):
			// Refused for good: record why, for a person, and let the
			// runner delete the message.
			_, err = b.db.ExecContext(ctx, b.sql(sqlRefused), err.Error(), j.Key)
			return err
		case err != nil:
			return err // goqite receives it again after its timeout, up to MaxReceive times
		}
		_, err = b.db.ExecContext(ctx, b.sql(sqlTaskOf), id, j.Key)
		return err
	})
	run, cancel := context.WithCancel(ctx)
	b.cancel = cancel
	go func() {
		defer close(b.done)
		r.Start(run)
	}()
	return b, nil
}

// migrate makes goqite's table and the app's, unless they are there.
func (b *booted) migrate(ctx context.Context, schema string) error {
	var n int
	if err := b.db.QueryRowContext(ctx, b.sql(`SELECT count(*) FROM followup_approvals`)).Scan(&n); err == nil {
		return nil
	}
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("goqiterunning: goqite's schema: %w", err)
	}
	if _, err := tx.ExecContext(ctx, approvalsTable); err != nil {
		return err
	}
	return tx.Commit()
}

// sql is q in the backend's numbering: SQLite takes ?N for $N.
func (b *booted) sql(q string) string {
	if b.pg {
		return q
	}
	return strings.ReplaceAll(q, "$", "?")
}

// sqliteConnector connects to the SQLite file dsn names.
type sqliteConnector struct{ dsn string }

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) { return c.Driver().Open(c.dsn) }
func (c sqliteConnector) Driver() driver.Driver                        { return &sqlite.Driver{} }

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
	switch err := tx.QueryRowContext(ctx, b.sql(sqlHeld), a.Key).Scan(&held); {
	case err == nil && held == a.Payload:
		return a.Key, a.Payload, nil
	case err == nil:
		return a.Key, a.Payload, fmt.Errorf("%w: %s holds another payload", system.ErrKeyConflict, a.Key)
	case !errors.Is(err, sql.ErrNoRows):
		return a.Key, a.Payload, err
	}
	body, err := json.Marshal(job{Key: a.Key, Payload: a.Payload})
	if err != nil {
		return a.Key, a.Payload, err
	}
	id, err := jobs.CreateTx(ctx, tx, b.q, jobName, goqite.Message{Body: body})
	if err != nil {
		return a.Key, a.Payload, err
	}
	if _, err := tx.ExecContext(ctx, b.sql(sqlApprove), a.Key, a.Payload, string(id)); err != nil {
		return a.Key, a.Payload, err
	}
	return a.Key, a.Payload, tx.Commit()
}

// Read shows each approval: blocked when the receiver refused it for
// good, sent once its job recorded a task id (goqite deletes a job done), pending while its message is in the queue, with
// goqite's receive count as its attempts, and gone when its message is
// gone without a task. A message received MaxReceive times stays in the
// table and is received no more; goqite says nothing of it, so Read
// shows it pending, as a person looking at the table would see it.
func (b *booted) Read(ctx context.Context) (map[string]designs.RunningRow, error) {
	rs, err := b.db.QueryContext(ctx, b.sql(sqlRead))
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	shown := map[string]designs.RunningRow{}
	for rs.Next() {
		var key, refused string
		var task int64
		var queued bool
		var received int
		if err := rs.Scan(&key, &task, &refused, &queued, &received); err != nil {
			return nil, err
		}
		switch {
		case refused != "":
			shown[key] = designs.RunningRow{State: designs.RowBlocked, Attempts: -1, Reason: refused}
		case task != 0:
			shown[key] = designs.RunningRow{State: designs.RowSent, TaskID: task, Attempts: -1}
		case queued:
			shown[key] = designs.RunningRow{State: designs.RowPending, Attempts: received}
		}
	}
	return shown, rs.Err()
}

// Stop ends the runner (it waits for the jobs under way) and closes the
// database.
func (b *booted) Stop() error {
	b.cancel()
	<-b.done
	return b.db.Close()
}
