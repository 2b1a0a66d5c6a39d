package exhaustive

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/sim"
)

// deeper is the depth CI asks the tests to search to
// (HANDOFF_EXHAUSTIVE_DEPTH), or 0 in the default suite, which keeps to
// seconds.
func deeper(t *testing.T) int {
	v := os.Getenv("HANDOFF_EXHAUSTIVE_DEPTH")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("HANDOFF_EXHAUSTIVE_DEPTH is %q, want a depth of at least 1", v)
	}
	return n
}

// reductionsAt are the reductions a test compares with the full search:
// the one that holds every symmetry in the default suite, each of them
// when CI asks for a deeper search.
func reductionsAt(depth int) []Reduction {
	if depth == 0 {
		return []Reduction{BothSymmetries}
	}
	return []Reduction{KeySymmetry, WorkerSymmetry, BothSymmetries}
}

// TestFragileFoundAtTheirLength: every fragile design whose minimal
// counterexample is within the bound is found by the search at exactly
// its catalog length (the search is breadth first, so it can be no
// longer; the catalog's length is minimal, so it can be no shorter), by
// the invariant the catalog names, and every reduction finds each at the
// same depth as the full search, in no more states.
//
// The bound is 3 (seconds; 2 with -short, which leaves out the designs
// of three steps), or HANDOFF_EXHAUSTIVE_DEPTH in .ci/deep, where 5 finds
// ignore-retention too.
func TestFragileFoundAtTheirLength(t *testing.T) {
	bound, reductions := deeper(t), reductionsAt(deeper(t))
	switch {
	case bound == 0 && testing.Short():
		bound = 2
	case bound == 0:
		bound = 3
	}
	for _, d := range designs.Fragile {
		if d.MinimalSteps > bound {
			t.Logf("%s: its minimal counterexample has %d steps, past the bound %d", d.Name, d.MinimalSteps, bound)
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			states := make([]int64, 1+len(reductions))
			for i, reduction := range append([]Reduction{NoReduction}, reductions...) {
				r, err := Search(context.Background(), Config{Design: d, Depth: bound, Dir: t.TempDir(), Reduction: reduction})
				if err != nil {
					t.Fatal(err)
				}
				if r.Failure == nil {
					t.Fatalf("reduction %s: not found within depth %d (completed %d, %d states)", reduction, bound, r.Completed, r.States)
				}
				f := r.Failure
				if f.Length() != d.MinimalSteps || !caughtAsDocumented(d, f.Violation.Invariant) {
					t.Errorf("reduction %s: found in %d steps by invariant %d, want %d steps and invariant %d:\n%s",
						reduction, f.Length(), f.Violation.Invariant, d.MinimalSteps, d.Invariant, f.Scenario())
				}
				if r.Completed != d.MinimalSteps-1 {
					t.Errorf("reduction %s: completed depth %d before finding it at %d", reduction, r.Completed, d.MinimalSteps)
				}
				states[i] = r.States
			}
			for i, reduction := range reductions {
				if states[i+1] > states[0] {
					t.Errorf("reduction %s reached %d states, the full search %d", reduction, states[i+1], states[0])
				}
			}
		})
	}
}

// otherShortest are the fragile designs whose shortest counterexample in
// the search's alphabet breaks another invariant than the one the
// catalog documents for the random search's, and that invariant:
// ignore-retention's shortest delivers past the retention with the
// default worker, which invariant 11 (no claim past the retention
// deadline) names exactly, where the random search's claims with a named
// worker and converges.
var otherShortest = map[string]int{"ignore-retention": 11}

// caughtAsDocumented reports whether design d's shortest counterexample
// broke invariant n as the catalog, or otherShortest, says it does.
func caughtAsDocumented(d designs.Design, n int) bool {
	return n == d.Invariant || n == d.OrInvariant || n == otherShortest[d.Name]
}

// TestRealDesignPassesTheSmallBound: every sequence of up to two steps
// (three when CI asks for a deeper search, which runs prove deeper still)
// of the default alphabet keeps every invariant on the real design, each
// reduction reaches fewer states than the full search, and every search
// completes the bound.
func TestRealDesignPassesTheSmallBound(t *testing.T) {
	depth, reductions := 2, reductionsAt(deeper(t))
	if deeper(t) > 0 {
		depth = 3
	}
	states := make([]int64, 1+len(reductions))
	for i, reduction := range append([]Reduction{NoReduction}, reductions...) {
		r, err := Search(context.Background(), Config{Depth: depth, Dir: t.TempDir(), Reduction: reduction})
		if err != nil {
			t.Fatal(err)
		}
		if r.Failure != nil {
			t.Fatalf("reduction %s: the real design broke an invariant:\n%s", reduction, r.Failure.Report(""))
		}
		if r.Completed != depth || r.Stopped != nil || len(r.Levels) != depth {
			t.Fatalf("reduction %s: completed %d of %d over %d levels, stopped: %v", reduction, r.Completed, depth, len(r.Levels), r.Stopped)
		}
		total := int64(1)
		for _, l := range r.Levels {
			total += l.States
		}
		if total != r.States || r.Transitions < r.States-1 {
			t.Errorf("reduction %s: %d states, the levels add up to %d; %d transitions", reduction, r.States, total, r.Transitions)
		}
		states[i] = r.States
		t.Logf("reduction %s: %d states, %d transitions, %d steps replayed", reduction, r.States, r.Transitions, r.Replayed)
	}
	for i, reduction := range reductions {
		if states[i+1] >= states[0] {
			t.Errorf("reduction %s reached %d states, the full search %d: it saved nothing", reduction, states[i+1], states[0])
		}
	}
}

// TestStoppedEarlySaysWhatItCompleted: a search whose context ends after
// its first depth says it completed that depth, and why it stopped.
func TestStoppedEarlySaysWhatItCompleted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := Search(ctx, Config{Depth: 3, Dir: t.TempDir(), Progress: func(l Level) {
		if l.Depth == 1 {
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != 1 || !errors.Is(r.Stopped, context.Canceled) || r.Failure != nil {
		t.Fatalf("completed %d, stopped: %v, failure: %v; want 1, context.Canceled, none", r.Completed, r.Stopped, r.Failure)
	}
	if len(r.Levels) != 2 || r.Levels[1].Transitions != 0 {
		t.Errorf("levels %+v, want depth 1 and depth 2 with no transition", r.Levels)
	}
}

// TestBadBound: a depth below one is refused with ErrBadBound.
func TestBadBound(t *testing.T) {
	for _, depth := range []int{0, -1} {
		if _, err := Search(context.Background(), Config{Depth: depth, Dir: t.TempDir()}); !errors.Is(err, ErrBadBound) {
			t.Errorf("depth %d: got %v, want ErrBadBound", depth, err)
		}
	}
}

// TestShortestCounterexampleReplays: the counterexample a search finds,
// saved as a corpus file, replays to the same outputs and the same
// violation, and its header says it is the shortest by construction.
func TestShortestCounterexampleReplays(t *testing.T) {
	d, err := designs.Lookup("no-lease")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Search(context.Background(), Config{Design: d, Depth: 3, Dir: t.TempDir(), Reduction: KeySymmetry})
	if err != nil || r.Failure == nil {
		t.Fatalf("no-lease not found: %v", err)
	}
	path, err := sim.SaveCounterexample(t.TempDir(), r.Failure)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sim.ReadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Cases[0].Comments; len(got) < 2 || got[1] != "# Shortest by construction: no shorter sequence of the search's alphabet breaks an invariant. For the real design this is a bug: fix it, then rewrite the expectations." {
		t.Errorf("header %q does not say the scenario is the shortest", got)
	}
	run, problems, err := sim.Replay(context.Background(), sc, sim.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		t.Fatalf("the saved counterexample does not replay as found: %v", problems)
	}
	if last := run.Outcomes[len(run.Outcomes)-1].Output; last != r.Failure.Outcomes[len(r.Failure.Outcomes)-1].Output {
		t.Errorf("last output %q, want %q", last, r.Failure.Outcomes[len(r.Failure.Outcomes)-1].Output)
	}
}
