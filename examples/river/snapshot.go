package riveroutbox

import (
	"context"
	"time"

	"github.com/outboxlab/handoff/system"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// maxJobs is the most jobs a snapshot reads: River's limit of one page.
const maxJobs = 10_000

// Snapshot reads every approval and its job in one read transaction
// (repeatable read on PostgreSQL), each job as the handoff's outbox row
// it stands for (see state, lastError, fence).
func (o *Outbox[TTx]) Snapshot(ctx context.Context) (system.Snapshot, error) {
	var snap system.Snapshot
	tx, err := o.s.begin(ctx, true)
	if err != nil {
		return snap, err
	}
	defer o.s.rollback(ctx, tx)
	type approval struct {
		a      system.Approval
		jobID  *int64
		taskID *int64
	}
	var approvals []approval
	var ids []int64
	err = o.s.query(ctx, tx, `SELECT key, case_id, title, payload, job_id, task_id FROM followup_approvals ORDER BY seq`, nil,
		func(scan func(...any) error) error {
			var a approval
			var title []byte
			if err := scan(&a.a.Key, &a.a.CaseID, &title, &a.a.Payload, &a.jobID, &a.taskID); err != nil {
				return err
			}
			a.a.Title = string(title)
			approvals = append(approvals, a)
			if a.jobID != nil {
				ids = append(ids, *a.jobID)
			}
			return nil
		})
	if err != nil {
		return snap, err
	}
	jobs := map[int64]*rivertype.JobRow{}
	if len(ids) > 0 {
		res, err := o.client.JobListTx(ctx, tx, river.NewJobListParams().IDs(ids...).First(maxJobs))
		if err != nil {
			return snap, err
		}
		for _, j := range res.Jobs {
			jobs[j.ID] = j
		}
	}
	for _, a := range approvals {
		snap.Approvals = append(snap.Approvals, a.a)
		if a.jobID == nil || jobs[*a.jobID] == nil {
			continue
		}
		snap.Outbox = append(snap.Outbox, o.row(a.a.Key, jobs[*a.jobID], a.taskID))
	}
	return snap, nil
}

// row is job as the handoff's outbox row of key, with the task id the
// worker recorded.
func (o *Outbox[TTx]) row(key string, job *rivertype.JobRow, taskID *int64) system.Row {
	r := system.Row{Key: key, State: state(job.State), Attempts: job.Attempt, LastError: lastError(job),
		CreatedAt: job.CreatedAt.UTC(), NextAttemptAt: job.ScheduledAt.UTC(), FirstClaimedAt: firstAttempted(job), Fence: fence(job)}
	if job.AttemptedAt != nil && job.Attempt > 0 {
		r.LastAttemptAt = job.AttemptedAt.UTC()
	}
	if r.State == system.Sent && taskID != nil {
		r.RemoteID = *taskID
		if job.FinalizedAt != nil {
			r.SentAt = job.FinalizedAt.UTC()
		}
	}
	if job.State == rivertype.JobStateRunning && len(job.AttemptedBy) > 0 {
		r.LeaseOwner = job.AttemptedBy[len(job.AttemptedBy)-1]
		r.LeaseUntil = job.AttemptedAt.UTC().Add(o.leaseOf())
	}
	return r
}

// leaseOf is how long River leaves a running job to its worker before
// the rescue takes it: the lease, rescueAfter and its millisecond.
func (o *Outbox[TTx]) leaseOf() time.Duration {
	return o.rescueAfter + time.Millisecond
}

// firstAttempted is when the job was first fetched: River keeps only the
// latest attempted_at, and each error's attempt start; the first error of
// attempt 1 (or attempted_at while attempt 1 runs) says it. A first
// attempt ended by a rescue is recorded at the rescue, not at its start.
func firstAttempted(job *rivertype.JobRow) time.Time {
	switch {
	case job.Attempt == 0:
		return time.Time{}
	case len(job.Errors) > 0 && job.Errors[0].Attempt == 1:
		return job.Errors[0].At.UTC()
	case job.AttemptedAt != nil:
		return job.AttemptedAt.UTC()
	}
	return time.Time{}
}

// nextEligible is when a pending job can next be fetched: its scheduled
// time, or for a running one the end of its lease (see leaseOf); zero
// when no job is pending.
func (o *Outbox[TTx]) nextEligible(ctx context.Context) (time.Time, error) {
	res, err := o.client.JobList(ctx, river.NewJobListParams().States(rivertype.JobStateAvailable, rivertype.JobStateRetryable,
		rivertype.JobStateScheduled, rivertype.JobStateRunning).First(maxJobs))
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	for _, j := range res.Jobs {
		at := j.ScheduledAt.UTC()
		if j.State == rivertype.JobStateRunning && j.AttemptedAt != nil {
			at = j.AttemptedAt.UTC().Add(o.leaseOf())
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next, nil
}
