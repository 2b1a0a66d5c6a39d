package riveroutbox

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
)

// findingsDir holds the minimal scenarios the harness found for the
// variants of River that declare leases and workers: a corpus of their
// own, which TestVerify does not replay (each breaks an invariant).
const findingsDir = "testdata/findings"

// saveEnv has the finding tests save what they found into findingsDir.
const saveEnv = "RIVER_SAVE_FINDINGS"

// TestHarnessFindsTheFindings explores each variant that does not hold
// and passes only if the harness finds what README.md documents: the
// invariant, and a minimal scenario no longer than documented. With
// RIVER_SAVE_FINDINGS=1 it saves each scenario into testdata/findings.
func TestHarnessFindsTheFindings(t *testing.T) {
	for _, c := range []struct {
		v         Variant
		invariant int
		most      int
	}{
		// A restarted River worker releases nothing: its job stays
		// running, leased to it, until the rescuer's horizon.
		{Workers, 6, 2},
		// River's rescue is a failed attempt: the job is rescheduled by
		// the retry policy and counts a rescue besides the next fetch.
		{WorkersRelease, 6, 3},
	} {
		t.Run(c.v.Name, func(t *testing.T) {
			r, err := handoff.Explore(t.Context(), handoff.ExploreConfig{Design: c.v.Design(), Checks: 100, Steps: handoff.DefaultSteps, Seed: 1, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			f := r.Failure
			if f == nil {
				t.Fatalf("the harness found nothing in %d sequences", r.Stats.Sequences.Load())
			}
			t.Logf("found after %d sequences:\n%s", r.FirstSequences, f.Report(""))
			if f.Violation.Invariant != c.invariant || f.Length() > c.most {
				t.Errorf("got invariant %d in %d steps, want invariant %d in at most %d", f.Violation.Invariant, f.Length(), c.invariant, c.most)
			}
			if os.Getenv(saveEnv) != "" {
				path, err := handoff.SaveCounterexample(findingsDir, f)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("saved %s", path)
			}
		})
	}
}

// TestFindingsReplay replays every saved finding on its variant and
// passes only if its last step breaks the invariant the file's name
// gives, and no step before it breaks any.
func TestFindingsReplay(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(findingsDir, "*.txt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no finding in %s: %v", findingsDir, err)
	}
	variants := map[string]Variant{Workers.Name: Workers, WorkersRelease.Name: WorkersRelease}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			sc, err := handoff.ReadScenario(path)
			if err != nil {
				t.Fatal(err)
			}
			v, ok := variants[sc.Design()]
			if !ok {
				t.Fatalf("%s runs design %q, no variant of this package", path, sc.Design())
			}
			env, err := handoff.NewEnv(t.Context(), handoff.Config{Design: v.Design(), Dir: t.TempDir(), Durability: system.ProcessSafe})
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			cases := sc.Cases[1:] // the design line: the Env runs the variant already
			for i, c := range cases {
				out, err := env.Apply(t.Context(), c.Step)
				if err != nil {
					t.Fatalf("%s:%d: %v", path, c.Line, err)
				}
				last := i == len(cases)-1
				switch {
				case out.Violation != nil && !last:
					t.Fatalf("%s:%d: broke invariant %d before the last step", path, c.Line, out.Violation.Invariant)
				case last && (out.Violation == nil || filepath.Base(path) != "found-"+v.Name+"-invariant-"+strconv.Itoa(out.Violation.Invariant)+".txt"):
					t.Fatalf("%s:%d: the last step broke %v, not the invariant the file names", path, c.Line, out.Violation)
				}
			}
		})
	}
}

// TestSupersededSettleTakesTheCurrentAttempt shows, through the outbox's
// phases, what River's executor does with the result of an attempt that
// another worker's attempt has superseded: River writes a result on any
// running job, whichever attempt runs it. Worker A's lease (River's
// rescue horizon) runs out, B fetches the job (attempt 2), A's late
// failure makes B's running job available again, B's success then finds
// it no longer running and is written nowhere, and a third fetch runs the
// job past its budget of two attempts.
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
	claimA, _, err := a.ClaimNext(ctx, 0)
	if err != nil || claimA.Attempt != 1 {
		t.Fatalf("A's claim: %+v, %v", claimA, err)
	}
	now = now.Add(system.DefaultLease)
	claimB, _, err := b.ClaimNext(ctx, 0)
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
	claimC, _, err := c.ClaimNext(ctx, 0)
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
