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

// fragileBound is the depth up to which TestFragileFoundAtTheirLength
// demands every fragile design be found: 4 by default (seconds), more in
// CI (HANDOFF_EXHAUSTIVE_DEPTH=5 finds ignore-retention too).
func fragileBound(t *testing.T) int {
	v := os.Getenv("HANDOFF_EXHAUSTIVE_DEPTH")
	if v == "" {
		return 4
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("HANDOFF_EXHAUSTIVE_DEPTH is %q, want a depth of at least 1", v)
	}
	return n
}

// TestFragileFoundAtTheirLength: every fragile design whose minimal
// counterexample is within the bound is found by the search at exactly
// its catalog length (the search is breadth first, so it can be no
// longer; the catalog's length is minimal, so it can be no shorter), by
// the invariant the catalog names, and the key-symmetry reduction finds
// each at the same depth as the full search.
func TestFragileFoundAtTheirLength(t *testing.T) {
	bound := fragileBound(t)
	for _, d := range designs.Fragile {
		if d.MinimalSteps > bound {
			t.Logf("%s: its minimal counterexample has %d steps, past the bound %d", d.Name, d.MinimalSteps, bound)
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			var states [2]int64
			for i, reduction := range []Reduction{NoReduction, KeySymmetry} {
				r, err := Search(context.Background(), Config{Design: d, Depth: bound, Dir: t.TempDir(), Reduction: reduction})
				if err != nil {
					t.Fatal(err)
				}
				if r.Failure == nil {
					t.Fatalf("reduction %s: not found within depth %d (completed %d, %d states)", reduction, bound, r.Completed, r.States)
				}
				f := r.Failure
				if f.Length() != d.MinimalSteps || f.Violation.Invariant != d.Invariant && f.Violation.Invariant != d.OrInvariant {
					t.Errorf("reduction %s: found in %d steps by invariant %d, want %d steps and invariant %d:\n%s",
						reduction, f.Length(), f.Violation.Invariant, d.MinimalSteps, d.Invariant, f.Scenario())
				}
				if r.Completed != d.MinimalSteps-1 {
					t.Errorf("reduction %s: completed depth %d before finding it at %d", reduction, r.Completed, d.MinimalSteps)
				}
				states[i] = r.States
			}
			if states[1] > states[0] {
				t.Errorf("the reduced search reached %d states, the full one %d", states[1], states[0])
			}
		})
	}
}

// TestRealDesignPassesTheSmallBound: every sequence of up to three steps
// (two with -short) of the default alphabet keeps every invariant on the
// real design, the key-symmetry reduction reaches fewer states than the
// full search, and both complete the bound.
func TestRealDesignPassesTheSmallBound(t *testing.T) {
	depth := 3
	if testing.Short() {
		depth = 2
	}
	var states [2]int64
	for i, reduction := range []Reduction{NoReduction, KeySymmetry} {
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
	if states[1] >= states[0] {
		t.Errorf("key symmetry reached %d states, the full search %d: it saved nothing", states[1], states[0])
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
	outputs, problems, err := sim.Replay(context.Background(), sc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		t.Fatalf("the saved counterexample does not replay as found: %v", problems)
	}
	if last := outputs[len(outputs)-1]; last != r.Failure.Outcomes[len(r.Failure.Outcomes)-1].Output {
		t.Errorf("last output %q, want %q", last, r.Failure.Outcomes[len(r.Failure.Outcomes)-1].Output)
	}
}
