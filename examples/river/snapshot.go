package riveroutbox

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/handoff/system"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// maxJobs is the most jobs a snapshot, a rescue or a schedule takes at
// once: River's limit of one page.
const maxJobs = 10_000

// Snapshot reads every approval and its job in one read transaction,
// each job as the handoff's outbox row it stands for (see row).
func (o *Outbox) Snapshot(ctx context.Context) (system.Snapshot, error) {
	var snap system.Snapshot
	tx, err := o.s.readTx(ctx)
	if err != nil {
		return snap, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT key, case_id, title, payload, job_id, task_id FROM followup_approvals ORDER BY seq`)
	if err != nil {
		return snap, err
	}
	defer rows.Close()
	var jobIDs, taskIDs []*int64
	for rows.Next() {
		var a system.Approval
		var title []byte
		var jobID, taskID *int64
		if err := rows.Scan(&a.Key, &a.CaseID, &title, &a.Payload, &jobID, &taskID); err != nil {
			return snap, err
		}
		a.Title = string(title)
		snap.Approvals = append(snap.Approvals, a)
		jobIDs, taskIDs = append(jobIDs, jobID), append(taskIDs, taskID)
	}
	if err := rows.Err(); err != nil {
		return snap, err
	}
	res, err := o.client.JobListTx(ctx, tx, river.NewJobListParams().First(maxJobs))
	if err != nil {
		return snap, err
	}
	jobs := map[int64]*rivertype.JobRow{}
	for _, j := range res.Jobs {
		jobs[j.ID] = j
	}
	for i, a := range snap.Approvals {
		if id := jobIDs[i]; id != nil && jobs[*id] != nil {
			snap.Outbox = append(snap.Outbox, o.row(a.Key, jobs[*id], taskIDs[i]))
		}
	}
	return snap, nil
}

// row is job as the handoff's outbox row of key, with the task id the
// worker recorded: River's attempt, created_at, scheduled_at (the next
// attempt), attempted_at and finalized_at; the lease is the last client
// in attempted_by until River's rescuer's horizon after attempted_at,
// while the job runs or until a fetch after a rescue.
func (o *Outbox) row(key string, job *rivertype.JobRow, taskID *int64) system.Row {
	r := system.Row{Key: key, State: state(job.State), Attempts: job.Attempt, LastError: lastError(job),
		CreatedAt: job.CreatedAt.UTC(), NextAttemptAt: job.ScheduledAt.UTC()}
	if job.AttemptedAt != nil && job.Attempt > 0 {
		r.LastAttemptAt = job.AttemptedAt.UTC()
	}
	if r.State == system.Sent && taskID != nil && job.FinalizedAt != nil {
		r.RemoteID, r.SentAt = *taskID, job.FinalizedAt.UTC()
	}
	if r.State == system.Pending && leaseHeld(job) {
		r.LeaseOwner, r.LeaseUntil = job.AttemptedBy[len(job.AttemptedBy)-1], job.AttemptedAt.UTC().Add(o.lease())
	}
	return r
}

// leaseHeld reports whether a pending job still names the worker that
// last fetched it: it runs, or River's rescuer took it from that worker
// and no fetch has taken it since.
func leaseHeld(job *rivertype.JobRow) bool {
	if len(job.AttemptedBy) == 0 || job.AttemptedAt == nil {
		return false
	}
	n := len(job.Errors)
	return job.State == rivertype.JobStateRunning || n > 0 && job.Errors[n-1].Error == rescuedError && job.Errors[n-1].Attempt == job.Attempt
}

// lease is how long River leaves a running job to its worker before the
// rescue takes it: rescueAfter and its millisecond.
func (o *Outbox) lease() time.Duration { return o.rescueAfter + time.Millisecond }

// nextEligible is when a pending job can next be fetched: its scheduled
// time, or for a running one the end of its lease; zero when no job is
// pending.
func (o *Outbox) nextEligible(ctx context.Context) (time.Time, error) {
	res, err := o.client.JobList(ctx, river.NewJobListParams().States(rivertype.JobStateAvailable, rivertype.JobStateRetryable,
		rivertype.JobStateScheduled, rivertype.JobStateRunning).First(maxJobs))
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	for _, j := range res.Jobs {
		at := j.ScheduledAt.UTC()
		if j.State == rivertype.JobStateRunning && j.AttemptedAt != nil {
			at = j.AttemptedAt.UTC().Add(o.lease())
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next, nil
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

// lastError names the job's last error as the handoff does, from what
// River recorded: a completed job has none; a job cancelled from outside
// a worker (Client.JobCancelTx, see Outbox.expire) ran out of its time
// budget; a rescue is budget-exhausted on a discarded job, and not an
// error of its own on a job that may still run (the worker died; a crash
// does not change the last error); a worker's error is the handoff's
// sentinel it wraps.
func lastError(job *rivertype.JobRow) string {
	var meta struct {
		CancelAttemptedAt *time.Time `json:"cancel_attempted_at"`
	}
	switch _ = json.Unmarshal(job.Metadata, &meta); { // River writes the metadata; a job without any has "{}"
	case job.State == rivertype.JobStateCompleted:
		return ""
	case job.State == rivertype.JobStateCancelled && meta.CancelAttemptedAt != nil:
		return system.LastErrorDeadline
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
