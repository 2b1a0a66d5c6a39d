package outbox

import (
	"path/filepath"
	"testing"

	"github.com/outboxlab/handoff"
)

// finding is a variant that breaks the handoff's contract: the way
// goqite's docs suggest using it where Recommended does otherwise.
type finding struct {
	name    string
	variant Variant
	// scenario is its minimal scenario in testdata/handoff, which breaks
	// invariant at step (1-based) on the variant and holds on
	// Recommended (TestVerify replays it).
	scenario        string
	invariant, step int
	// also is another invariant the same step breaks, 0 if none.
	also int
	// longest is the most steps the search may shrink it to.
	longest int
}

// findings are the three places where goqite's API leaves the contract to
// the app.
var findings = []finding{
	{"goqite-max-receive", Variant{Fenced: true, Ordered: true}, "max-receive.txt", 6, 5, 0, 6},
	{"goqite-unfenced", Variant{SpareReceive: true, Ordered: true}, "unfenced.txt", 6, 6, 8, 8},
	{"goqite-created-order", Variant{SpareReceive: true, Fenced: true}, "created-order.txt", 6, 4, 0, 5},
}

// TestFindingsReplay replays each finding's minimal scenario on its
// variant and passes only if the step it documents breaks the invariant
// it names, and none before.
func TestFindingsReplay(t *testing.T) {
	for _, f := range findings {
		t.Run(f.name, func(t *testing.T) {
			sc, err := handoff.ReadScenario(filepath.Join("testdata", "handoff", f.scenario))
			if err != nil {
				t.Fatal(err)
			}
			env, err := handoff.NewEnv(t.Context(), handoff.Config{Design: Design(f.name, f.variant, virtualClock(t)), Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			for i, c := range sc.Cases {
				out, err := env.Apply(t.Context(), c.Step)
				if err != nil {
					t.Fatalf("%s:%d: %v", f.scenario, c.Line, err)
				}
				v := out.Violation
				switch {
				case v == nil && i+1 < f.step:
					continue
				case v == nil:
					t.Fatalf("%s:%d: step %d broke nothing on %s, want invariant %d", f.scenario, c.Line, i+1, f.name, f.invariant)
				case i+1 != f.step || v.Invariant != f.invariant || f.also != 0 && !v.Breaks(f.also):
					t.Fatalf("%s:%d: step %d broke invariant %d (also %v), want step %d to break %d (and %d):\n%s", f.scenario, c.Line, i+1, v.Invariant, v.Also, f.step, f.invariant, f.also, out.Output)
				}
				t.Logf("step %d, as documented:\n%s", i+1, out.Output)
				return
			}
			t.Fatalf("%s ended without a violation on %s", f.scenario, f.name)
		})
	}
}

// TestFindingsExplored runs on each finding's variant the rapid property
// that handoff.Verify runs, through handoff.Explore, which returns the
// failure instead of failing the test, and passes only if the harness
// finds it on seed 1: the invariant the scenario breaks, in a minimal
// scenario of at most the documented length.
func TestFindingsExplored(t *testing.T) {
	for _, f := range findings {
		t.Run(f.name, func(t *testing.T) {
			r, err := handoff.Explore(t.Context(), handoff.ExploreConfig{Design: Design(f.name, f.variant, virtualClock(t)), Checks: 500,
				Steps: handoff.DefaultSteps, Seed: 1, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			got := r.Failure
			if got == nil {
				t.Fatalf("the harness missed %s in %d sequences", f.name, r.Stats.Sequences.Load())
			}
			t.Logf("found after %d sequences (%v), shrunk to %d steps:\n%s", r.FirstSequences, r.FirstElapsed(), got.Length(), got.Report(""))
			if got.Violation.Invariant != f.invariant || got.Length() > f.longest {
				t.Errorf("got invariant %d in %d steps, want invariant %d in at most %d", got.Violation.Invariant, got.Length(), f.invariant, f.longest)
			}
		})
	}
}

// TestWallClockIsCaught shows that the harness checks goqite's time: the
// recommended variant left on the wall clock, while the harness moves its
// virtual clock, hides a message for a lease that, to the model, ran out
// long ago.
func TestWallClockIsCaught(t *testing.T) {
	r, err := handoff.Explore(t.Context(), handoff.ExploreConfig{Design: Design("goqite-wall-clock", Recommended, nil), Checks: 500,
		Steps: handoff.DefaultSteps, Seed: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failure == nil {
		t.Fatalf("the harness ran %d sequences of goqite on the wall clock and found nothing", r.Stats.Sequences.Load())
	}
	t.Logf("found after %d sequences:\n%s", r.FirstSequences, r.Failure.Report(""))
	if r.Failure.Violation.Invariant != 6 {
		t.Errorf("got invariant %d, want 6 (the system matches the model)", r.Failure.Violation.Invariant)
	}
}
