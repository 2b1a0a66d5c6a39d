// Package riveroutbox is a transactional outbox built on River
// (github.com/riverqueue/river), written as an app outside the handoff
// module would write it, and verified with the handoff harness
// (handoff.Verify): the approval and a River job are inserted in one
// transaction, and a River worker sends the job's action key and payload
// to the receiver.
//
// River is driven one job at a time, from the harness's steps: no
// producer, poll loop or maintenance service of River's client runs.
// What River's client would run in the background (fetching a job, the
// executor recording a worker's result, the rescuer and the scheduler)
// runs here through the queries of River's driver (riverdriver.Executor),
// with the harness's virtual clock passed as their now; README.md says
// which parts of River that leaves out.
package riveroutbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/outboxlab/handoff/system"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
)

// FollowupArgs are the arguments of the River job that delivers one
// approval: its stable action key and canonical payload, which every
// attempt sends unchanged.
type FollowupArgs struct {
	Key     string `json:"key"`
	Payload string `json:"payload"`
}

// Kind is the River job kind.
func (FollowupArgs) Kind() string { return "harbor_create_followup" }

// Sender is the River worker: it sends a job's key and payload to the
// receiver and, on success, records the receiver's task id in the app's
// approvals table and completes the job in one transaction
// (river.JobCompleteTx). A transient failure is returned as an error, so
// that River retries the job with the same key until its attempts run
// out; a key conflict or a refusal cancels the job (river.JobCancel).
type Sender struct {
	river.WorkerDefaults[FollowupArgs]
	o *Outbox
	// receiver is the receiver of the delivery in progress.
	receiver system.Receiver
	// heard is what the sends of this process heard, by the job row
	// River gave the worker, until River's retry policy asks for it (see
	// retryPolicy): River's executor gives the policy the same row, not
	// the worker's error.
	mu    sync.Mutex
	heard map[*rivertype.JobRow]error
}

// Work is the worker as River calls it: the send, then the record of
// its answer. A process that dies at a fault point returns the hook's
// error and records nothing.
func (w *Sender) Work(ctx context.Context, job *river.Job[FollowupArgs]) error {
	id, sendErr, died := w.send(ctx, job)
	if died != nil {
		return died
	}
	_, err := w.finish(ctx, job, id, sendErr)
	return err
}

// send passes the fault point before the send, sends the job's key and
// payload, and passes the one after the reply; died is the hook's error
// where the process died. A context already done (a job timeout run out
// while the worker was paused) sends nothing, as an HTTP client would
// not.
func (w *Sender) send(ctx context.Context, job *river.Job[FollowupArgs]) (taskID int64, sendErr, died error) {
	if err := w.o.pass(system.PointBeforeSend); err != nil {
		return 0, nil, err
	}
	if cerr := ctx.Err(); cerr != nil {
		sendErr = fmt.Errorf("%w: %v", system.ErrTransient, cerr)
	} else {
		taskID, sendErr = w.receiver.CreateTask(ctx, job.Args.Key, job.Args.Payload)
	}
	if err := w.o.pass(system.PointAfterReply); err != nil {
		return 0, nil, err
	}
	if sendErr != nil {
		w.mu.Lock()
		w.heard[job.JobRow] = sendErr
		w.mu.Unlock()
	}
	return taskID, sendErr, nil
}

// finish records what the send heard: the task id with the job's
// completion in one transaction, or the error River acts on. completed
// reports whether JobCompleteTx took the job: whether it was running
// (read in the same transaction; JobCompleteTx returns the row either
// way, and the task id is written either way).
func (w *Sender) finish(ctx context.Context, job *river.Job[FollowupArgs], taskID int64, sendErr error) (completed bool, err error) {
	switch {
	case sendErr == nil:
		err := w.o.s.inTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `UPDATE followup_approvals SET task_id = $1 WHERE key = $2`, taskID, job.Args.Key); err != nil {
				return err
			}
			before, err := w.o.client.JobGetTx(ctx, tx, job.ID)
			if err != nil {
				return err
			}
			completed = before.State == rivertype.JobStateRunning
			_, err = river.JobCompleteTx[riverdriver.Driver[*sql.Tx]](rivertest.WorkContext(ctx, w.o.client), tx, job)
			return err
		})
		return completed && err == nil, err
	case errors.Is(sendErr, system.ErrKeyConflict), errors.Is(sendErr, system.ErrRejected):
		return false, river.JobCancel(sendErr)
	}
	return false, sendErr
}

// heardFor returns, and forgets, what a send of this process heard for
// job; ok is false when none did.
func (w *Sender) heardFor(job *rivertype.JobRow) (err error, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	err, ok = w.heard[job]
	delete(w.heard, job)
	return err, ok
}
