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
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/outboxlab/handoff/system"
	"github.com/riverqueue/river"
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

// errDied is returned by a worker whose process died at a fault point:
// nothing more is written, as after a real crash.
type errDied struct{ err error }

func (e *errDied) Error() string { return "died: " + e.err.Error() }
func (e *errDied) Unwrap() error { return e.err }

// Sender is the River worker: it sends a job's key and payload to the
// receiver and, on success, records the receiver's task id in the app's
// approvals table and completes the job in one transaction
// (river.JobCompleteTx). A transient failure is returned as an error, so
// that River retries the job with the same key until its attempts run
// out; a key conflict or a refusal cancels the job (river.JobCancel).
type Sender[TTx any] struct {
	river.WorkerDefaults[FollowupArgs]
	o *Outbox[TTx]
	// receiver is the receiver of the delivery in progress.
	receiver system.Receiver
	// hints are the receivers' retry hints by job id, heard by a send and
	// read by the retry policy when River asks it for the next retry.
	mu    sync.Mutex
	hints map[int64]time.Duration
}

// Work is the worker as River calls it: the send, then the record of
// its answer.
func (w *Sender[TTx]) Work(ctx context.Context, job *river.Job[FollowupArgs]) error {
	id, err := w.send(ctx, job)
	if died := (*errDied)(nil); errors.As(err, &died) {
		return err
	}
	return w.finish(ctx, job, id, err)
}

// send passes the fault point before the send, sends the job's key and
// payload, and passes the one after the reply. A context already done (a
// job timeout run out while the worker was paused) sends nothing, as an
// HTTP client would not.
func (w *Sender[TTx]) send(ctx context.Context, job *river.Job[FollowupArgs]) (int64, error) {
	if err := w.o.pass(system.PointBeforeSend); err != nil {
		return 0, &errDied{err}
	}
	var id int64
	var err error
	if cerr := ctx.Err(); cerr != nil {
		err = fmt.Errorf("%w: %v", system.ErrTransient, cerr)
	} else {
		id, err = w.receiver.CreateTask(ctx, job.Args.Key, job.Args.Payload)
	}
	if herr := w.o.pass(system.PointAfterReply); herr != nil {
		return 0, &errDied{herr}
	}
	var hint *system.RetryHint
	if errors.As(err, &hint) {
		w.mu.Lock()
		w.hints[job.ID] = hint.After
		w.mu.Unlock()
	}
	return id, err
}

// finish records what the send heard: the task id with the job's
// completion in one transaction, or the error River acts on.
func (w *Sender[TTx]) finish(ctx context.Context, job *river.Job[FollowupArgs], taskID int64, sendErr error) error {
	switch {
	case sendErr == nil:
		return w.o.completeWithTask(ctx, job, taskID)
	case errors.Is(sendErr, system.ErrKeyConflict), errors.Is(sendErr, system.ErrRejected):
		return river.JobCancel(sendErr)
	}
	return sendErr
}

// hint returns, and forgets, the retry hint a send heard for job id.
func (w *Sender[TTx]) hint(id int64) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.hints[id]
	delete(w.hints, id)
	return h
}
