package riveroutbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
)

// findingsDir holds the scenarios in which river-workers differs from
// the model (README.md's findings): a corpus of their own, which
// TestVerify does not replay (each breaks an invariant); holdsDir the
// scenarios in which River once differed, or might be thought to, and
// river-workers now matches the model.
const (
	findingsDir = "testdata/findings"
	holdsDir    = "testdata/workers"
)

// saveEnv has TestHarnessFindsTheSupersededSettle save what it found
// into findingsDir.
const saveEnv = "RIVER_SAVE_FINDINGS"

// supersededSeed is the seed of the exploration that finds the
// superseded settle; README.md says what other seeds find first.
const supersededSeed = 1

// TestHarnessFindsTheSupersededSettle explores river-workers and passes
// only if the harness finds what README.md documents as finding 1: a
// worker whose lease ran out settles while another worker runs the job,
// and River writes its result on the other worker's attempt (invariant
// 8), in at most 6 steps. With RIVER_SAVE_FINDINGS=1 it saves
// the scenario into testdata/findings.
func TestHarnessFindsTheSupersededSettle(t *testing.T) {
	r, err := handoff.Explore(t.Context(), handoff.ExploreConfig{Design: Workers.Design(), Checks: 100, Seed: supersededSeed, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f := r.Failure
	if f == nil {
		t.Fatalf("the harness found nothing in %d sequences", r.Sequences)
	}
	t.Logf("found after %d sequences:\n%s", r.FirstSequences, f.Report(""))
	if v := f.Violation; v.Invariant != 8 && !slices.Contains(v.Also, 8) || f.Steps > 6 {
		t.Errorf("got invariant %d (also %v) in %d steps, want invariant 8 in at most 6", v.Invariant, v.Also, f.Steps)
	}
	if os.Getenv(saveEnv) != "" {
		path, err := f.Save(findingsDir)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("saved %s", path)
	}
}

// onBackends runs f on SQLite, then on PostgreSQL in a subtest that
// skips when no server answers (see postgresURL).
func onBackends(t *testing.T, f func(t *testing.T, opts handoff.ReplayOptions)) {
	t.Run("sqlite", func(t *testing.T) { f(t, handoff.ReplayOptions{Design: Workers.Design(), Dir: t.TempDir()}) })
	t.Run("postgres", func(t *testing.T) {
		f(t, handoff.ReplayOptions{Design: Workers.Design(), Dir: t.TempDir(), Backend: handoff.Postgres, PostgresURL: postgresURL(t)})
	})
}

// TestFindingsReplay replays every saved finding on river-workers, on
// both backends, and passes only if its first broken step breaks the
// invariants README.md gives for it, in the order the harness reports
// them, and every step's output, violations included, is the file's.
func TestFindingsReplay(t *testing.T) {
	onBackends(t, func(t *testing.T, opts handoff.ReplayOptions) { replayFindings(t, opts) })
}

// replayFindings is TestFindingsReplay on one backend.
func replayFindings(t *testing.T, opts handoff.ReplayOptions) {
	for name, want := range map[string][]int{
		"superseded-settle.txt":             {8, 10, 6}, // finding 1
		"rescue-discards-at-once.txt":       {6},        // finding 2
		"rescue-blocks-a-delivered-job.txt": {6},        // findings 2 and 3
		"rescue-takes-every-stuck-job.txt":  {6},        // finding 3
	} {
		t.Run(name, func(t *testing.T) {
			r, err := handoff.Replay(t.Context(), filepath.Join(findingsDir, name), opts)
			if err != nil {
				t.Fatal(err)
			}
			if r.Violation == nil {
				t.Fatalf("no invariant broke; want %v", want)
			}
			got := append([]int{r.Violation.Invariant}, r.Violation.Also...)
			if !slices.Equal(got, want) {
				t.Errorf("line %d broke invariants %v, want %v", r.Line, got, want)
			}
			for _, m := range r.Mismatches {
				t.Errorf("line %d, %s:\ngot:\n%s\nwant:\n%s", m.Line, m.Step, m.Got, m.Want)
			}
		})
	}
}

// TestEarlierFindingsHold replays the scenarios in which River differs
// from the spec's workers in ways river-workers declares, or in which a
// superseded settle writes nothing: a worker that dies after the reply,
// whose job then waits for River's rescuer (restarts release nothing); a
// lease that runs out and is rescued; River's fetch of the job due first
// (DueFirst); a superseded attempt settling on a job no longer running.
// They pass, outputs and all, on both backends.
func TestEarlierFindingsHold(t *testing.T) {
	onBackends(t, func(t *testing.T, opts handoff.ReplayOptions) { replayHolds(t, opts) })
}

// replayHolds is TestEarlierFindingsHold on one backend.
func replayHolds(t *testing.T, opts handoff.ReplayOptions) {
	paths, err := filepath.Glob(filepath.Join(holdsDir, "*.txt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenario in %s: %v", holdsDir, err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			r, err := handoff.Replay(t.Context(), path, opts)
			if err != nil {
				t.Fatal(err)
			}
			if r.Violation != nil {
				t.Fatalf("line %d broke invariant %d: %s", r.Line, r.Violation.Invariant, r.Violation.Detail)
			}
			for _, m := range r.Mismatches {
				t.Errorf("line %d, %s:\ngot:\n%s\nwant:\n%s", m.Line, m.Step, m.Got, m.Want)
			}
		})
	}
}

// TestSupersededSettleTakesTheCurrentAttempt follows finding 1 past the
// point where the harness stops: River writes a result on any running
// job, whichever attempt runs it. Worker A's lease (River's rescue
// horizon) runs out, B fetches the job (attempt 2), A's late failure
// makes B's running job available again, B's success then finds it no
// longer running and is written nowhere, and a third fetch runs the job
// past its budget of two attempts.
func TestSupersededSettleTakesTheCurrentAttempt(t *testing.T) {
	ctx := t.Context()
	now := time.UnixMilli(1_767_225_600_000).UTC()
	clock := func() time.Time { return now }
	dir := t.TempDir()
	open := func(worker string) designs.Phases {
		app, err := Workers.OpenApp(ctx, filepath.Join(dir, "app.db"), system.Options{Now: clock, Worker: worker, MaxAttempts: 2, NoBackoff: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { app.Close() })
		return app.(designs.Phases)
	}
	a, b, c := open("A"), open("B"), open("C")
	crm, err := system.OpenCRMWith(ctx, filepath.Join(dir, "crm.db"), system.CRMOptions{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer crm.Close()
	if _, err := a.(designs.App).RecordApproval(ctx, "case-1", "Call back"); err != nil {
		t.Fatal(err)
	}
	claimA, _, err := a.ClaimNext(ctx)
	if err != nil || claimA.Attempt != 1 {
		t.Fatalf("A's claim: %+v, %v", claimA, err)
	}
	now = now.Add(system.DefaultLease)
	claimB, _, err := b.ClaimNext(ctx)
	if err != nil || claimB.Attempt != 2 {
		t.Fatalf("B's claim after A's lease: %+v, %v", claimB, err)
	}
	id, sendErr := a.Send(ctx, claimA, crm) // past A's job timeout: nothing is sent
	settledA, err := a.Settle(ctx, claimA, id, sendErr)
	if err != nil || settledA.Result != system.ResultPending {
		t.Fatalf("A's late settle: %+v, %v; want River to write its retry on B's running job", settledA, err)
	}
	id, sendErr = b.Send(ctx, claimB, crm)
	if sendErr != nil {
		t.Fatal(sendErr)
	}
	settledB, err := b.Settle(ctx, claimB, id, sendErr)
	if err != nil || settledB.Result != system.ResultStale {
		t.Fatalf("B's settle: %+v, %v; want nothing written: A's write left the job available", settledB, err)
	}
	claimC, _, err := c.ClaimNext(ctx)
	if err != nil || claimC.Attempt != 3 {
		t.Fatalf("C's claim: %+v, %v; want a third attempt on a budget of two", claimC, err)
	}
	id, sendErr = c.Send(ctx, claimC, crm)
	if _, err := c.Settle(ctx, claimC, id, sendErr); err != nil || sendErr != nil {
		t.Fatal(err, sendErr)
	}
	snap, err := c.(designs.App).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := snap.Outbox[0]; r.State != system.Sent || r.Attempts != 3 {
		t.Fatalf("the row: %+v; want sent after 3 attempts of a budget of 2", r)
	}
}

// TestEveryResultTakesTheRunningAttempt shows why a River worker cannot
// guard its settle (README.md, "Guarding the settle"): River's executor
// turns every result of Work into one write through
// JobSetStateIfRunningMany, built by one of riverdriver's JobSetState
// functions from the job row it fetched, keyed by the job's id alone.
// Whatever a superseded worker A returns, once B has fetched the job
// again after A's lease ran out, the write takes B's running attempt:
// no result of Work writes nothing.
func TestEveryResultTakesTheRunningAttempt(t *testing.T) {
	start := time.UnixMilli(1_767_225_600_000).UTC()
	errData, err := json.Marshal(rivertype.AttemptError{At: start, Attempt: 1, Error: "A's error"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		result string
		params func(a *rivertype.JobRow, now time.Time) *riverdriver.JobSetStateIfRunningParams
		want   rivertype.JobState
	}{
		{"nil: completed", func(a *rivertype.JobRow, now time.Time) *riverdriver.JobSetStateIfRunningParams {
			return riverdriver.JobSetStateCompleted(a.ID, now, nil)
		}, rivertype.JobStateCompleted},
		{"an error, retried soon: available", func(a *rivertype.JobRow, now time.Time) *riverdriver.JobSetStateIfRunningParams {
			return riverdriver.JobSetStateErrorAvailable(a.ID, now, errData, nil)
		}, rivertype.JobStateAvailable},
		{"an error, retried later: retryable", func(a *rivertype.JobRow, now time.Time) *riverdriver.JobSetStateIfRunningParams {
			return riverdriver.JobSetStateErrorRetryable(a.ID, now.Add(time.Minute), errData, nil)
		}, rivertype.JobStateRetryable},
		{"an error or a panic on the last attempt: discarded", func(a *rivertype.JobRow, now time.Time) *riverdriver.JobSetStateIfRunningParams {
			return riverdriver.JobSetStateDiscarded(a.ID, now, errData, nil)
		}, rivertype.JobStateDiscarded},
		{"river.JobCancel or an error handler's SetCancelled: cancelled", func(a *rivertype.JobRow, now time.Time) *riverdriver.JobSetStateIfRunningParams {
			return riverdriver.JobSetStateCancelled(a.ID, now, errData, nil)
		}, rivertype.JobStateCancelled},
		{"river.JobSnooze: scheduled", func(a *rivertype.JobRow, now time.Time) *riverdriver.JobSetStateIfRunningParams {
			return riverdriver.JobSetStateSnoozed(a.ID, now.Add(time.Minute), a.Attempt-1, nil)
		}, rivertype.JobStateScheduled},
		{"river.JobSnooze, short: available", func(a *rivertype.JobRow, now time.Time) *riverdriver.JobSetStateIfRunningParams {
			return riverdriver.JobSetStateSnoozedAvailable(a.ID, now, a.Attempt-1, nil)
		}, rivertype.JobStateAvailable},
		{"a context done when the client stops: available", func(a *rivertype.JobRow, now time.Time) *riverdriver.JobSetStateIfRunningParams {
			return riverdriver.JobSetStateInterrupted(a.ID, now, a.Attempt-1, nil)
		}, rivertype.JobStateAvailable},
	} {
		t.Run(c.result, func(t *testing.T) {
			ctx := t.Context()
			now := start
			dir := t.TempDir()
			open := func(worker string) *Outbox {
				app, err := Workers.OpenApp(ctx, filepath.Join(dir, "app.db"), system.Options{Now: func() time.Time { return now }, Worker: worker, NoBackoff: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { app.Close() })
				return app.(*Outbox)
			}
			a, b := open("A"), open("B")
			if _, err := a.RecordApproval(ctx, "case-1", "Call back"); err != nil {
				t.Fatal(err)
			}
			claimA, _, err := a.ClaimNext(ctx)
			if err != nil || claimA.Attempt != 1 {
				t.Fatalf("A's claim: %+v, %v", claimA, err)
			}
			now = now.Add(system.DefaultLease)
			if claimB, _, err := b.ClaimNext(ctx); err != nil || claimB.Attempt != 2 {
				t.Fatalf("B's claim after A's lease: %+v, %v", claimB, err)
			}
			p := c.params(claimA.Handle.(*rivertype.JobRow), now)
			rows, err := a.exec.JobSetStateIfRunningMany(ctx, &riverdriver.JobSetStateIfRunningManyParams{
				ID: []int64{p.ID}, Attempt: []*int{p.Attempt}, ErrData: [][]byte{p.ErrData}, FinalizedAt: []*time.Time{p.FinalizedAt},
				MetadataDoMerge: []bool{false}, MetadataUpdates: [][]byte{nil}, Now: &now, ScheduledAt: []*time.Time{p.ScheduledAt},
				State: []rivertype.JobState{p.State}})
			if err != nil || len(rows) != 1 {
				t.Fatalf("A's result: %v, %v", rows, err)
			}
			if job := rows[0]; job.State != c.want || job.AttemptedBy[len(job.AttemptedBy)-1] != "B" {
				t.Errorf("after A's result the job is %s, attempted by %v; want %s: A's result on B's attempt", job.State, job.AttemptedBy, c.want)
			}
		})
	}
}
