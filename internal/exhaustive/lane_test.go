package exhaustive

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/sim"
)

// TestLanesFindWhatOneLaneFinds: a search whose states are expanded by
// three lanes side by side reaches the same states, level by level, runs
// the same transitions and finds the same shortest counterexample as one
// lane, whichever lane is quicker.
func TestLanesFindWhatOneLaneFinds(t *testing.T) {
	for _, tt := range []struct {
		design string
		depth  int
	}{{designs.Handoff.Name, 2}, {"no-lease", 3}} {
		t.Run(tt.design, func(t *testing.T) {
			skipDeepInShort(t, tt.depth)
			d, err := designs.Lookup(tt.design)
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Design: d, Depth: tt.depth, Dir: t.TempDir(), Reduction: BothSymmetries}
			one, err := Search(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				l, err := NewLane(context.Background(), LaneConfig{Design: d, Alphabet: cfg.Alphabet, Reduction: cfg.Reduction, Dir: cfg.Dir})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				cfg.Lanes = append(cfg.Lanes, l)
			}
			three, err := Search(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			// The states reached, level by level, and the transitions of
			// every level but one that found a violation: its states
			// after the failing one may have run in another lane by then.
			shape := func(r Result) []int64 {
				var s []int64
				for _, l := range r.Levels {
					s = append(s, l.States)
					if r.Failure == nil || l.Depth < len(r.Levels) {
						s = append(s, l.Transitions)
					}
				}
				return append(s, r.States, int64(r.Completed))
			}
			if !slices.Equal(shape(one), shape(three)) || three.Transitions < one.Transitions {
				t.Errorf("one lane: %d transitions, states and transitions by level, states, depth completed %v; three: %d, %v",
					one.Transitions, shape(one), three.Transitions, shape(three))
			}
			if (one.Failure == nil) != (three.Failure == nil) || one.Failure != nil && one.Failure.Scenario() != three.Failure.Scenario() {
				t.Errorf("one lane found %v, three %v", one.Failure, three.Failure)
			}
		})
	}
}

// skipDeepInShort skips, under -short, a search deeper than two steps:
// the quick suite searches the designs caught in one or two.
func skipDeepInShort(t *testing.T, depth int) {
	t.Helper()
	if testing.Short() && depth > 2 {
		t.Skip("-short: a search three steps deep; run without -short")
	}
}

// TestRestoreOnlyAfterAChange: a lane that runs the next step of a state
// without restoring it after a step that left every line of the state as
// it was reaches the same states, level by level, runs the same
// transitions and finds the same shortest counterexample, failing at the
// same step, as a lane that restores the state before every step; and it
// replays fewer steps.
func TestRestoreOnlyAfterAChange(t *testing.T) {
	for _, tt := range []struct {
		design string
		depth  int
	}{{designs.Handoff.Name, 2}, {"no-lease", 3}, {"count-after-send", 3}} {
		t.Run(tt.design, func(t *testing.T) {
			skipDeepInShort(t, tt.depth)
			d, err := designs.Lookup(tt.design)
			if err != nil {
				t.Fatal(err)
			}
			search := func(alwaysRestore bool) Result {
				t.Helper()
				cfg := Config{Design: d, Depth: tt.depth, Dir: t.TempDir(), Reduction: BothSymmetries}
				l, err := NewLane(context.Background(), LaneConfig{Design: d, Alphabet: cfg.Alphabet, Reduction: cfg.Reduction, Dir: cfg.Dir})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				l.(*searcher).alwaysRestore = alwaysRestore
				cfg.Lanes = []Lane{l}
				r, err := Search(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			shortcut, every := search(false), search(true)
			levels := func(r Result) [][2]int64 {
				var s [][2]int64
				for _, l := range r.Levels {
					s = append(s, [2]int64{l.States, l.Transitions})
				}
				return s
			}
			if !slices.Equal(levels(shortcut), levels(every)) {
				t.Errorf("states and transitions by level: %v with the shortcut, %v restoring before every step", levels(shortcut), levels(every))
			}
			switch {
			case (shortcut.Failure == nil) != (every.Failure == nil):
				t.Errorf("found %v with the shortcut, %v restoring before every step", shortcut.Failure, every.Failure)
			case shortcut.Failure != nil && (shortcut.Failure.Scenario() != every.Failure.Scenario() || shortcut.Failure.Disagreement != every.Failure.Disagreement):
				t.Errorf("with the shortcut:\n%s(disagreeing at step %d)\nrestoring before every step:\n%s(disagreeing at step %d)",
					shortcut.Failure.Scenario(), shortcut.Failure.Disagreement.Step, every.Failure.Scenario(), every.Failure.Disagreement.Step)
			}
			if shortcut.Replayed >= every.Replayed {
				t.Errorf("replayed %d steps with the shortcut, %d restoring before every step: want fewer", shortcut.Replayed, every.Replayed)
			}
			t.Logf("replayed %d steps with the shortcut, %d without; failure: %v", shortcut.Replayed, every.Replayed, shortcut.Failure != nil)
		})
	}
}

// TestLaneRefusesAnotherState: a lane asked to expand a state under a
// fingerprint its sequence does not reach says the replay is
// nondeterministic, and expands nothing.
func TestLaneRefusesAnotherState(t *testing.T) {
	l, err := NewLane(context.Background(), LaneConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	root, err := l.Expand(nil, Fingerprint{})
	if err != nil {
		t.Fatal(err)
	}
	approve := root.Children[slices.IndexFunc(root.Children, func(c Child) bool { return c.Step.Directive == "approve" })]
	if _, err := l.Expand([]sim.Step{approve.Step}, approve.Key); err != nil {
		t.Fatalf("the approval's own state: %v", err)
	}
	e, err := l.Expand([]sim.Step{approve.Step}, root.Key)
	if !errors.Is(err, ErrNondeterministic) || len(e.Children) != 0 || e.Transitions != 0 {
		t.Errorf("the approval's state under the root's fingerprint: %v, %d children, %d transitions; want ErrNondeterministic and none", err, len(e.Children), e.Transitions)
	}
}
