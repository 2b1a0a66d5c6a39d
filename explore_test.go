package handoff

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outboxlab/handoff/designs"
)

// TestExploreCounts checks that an exploration runs exactly the sequences
// asked when nothing fails, and counts the runs of rapid's shrinking apart
// when something does: the sequences then stop at the failing one.
func TestExploreCounts(t *testing.T) {
	t.Parallel()
	twoWrites, err := designs.Lookup("two-writes")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		design   designs.Design
		checks   int
		parallel int
		fails    bool
	}{
		{designs.Handoff, 7, 1, false},
		{designs.Handoff, 9, 2, false},
		{twoWrites, 500, 1, true},
	} {
		r, err := Explore(t.Context(), ExploreConfig{Design: tt.design, Checks: tt.checks, Steps: DefaultSteps, Seed: 1, Parallel: tt.parallel, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		seqs, shrinks := r.Stats.Sequences.Load(), r.Stats.ShrinkRuns.Load()
		switch {
		case (r.Failure != nil) != tt.fails:
			t.Errorf("%s: got failure %v, want one: %t", tt.design.Name, r.Failure != nil, tt.fails)
		case !tt.fails && (seqs != int64(tt.checks) || shrinks != 0):
			t.Errorf("%s, %d checks: ran %d sequences and %d shrink runs, want %d and 0", tt.design.Name, tt.checks, seqs, shrinks, tt.checks)
		case tt.fails && (seqs != r.FirstSequences || seqs >= int64(tt.checks) || shrinks == 0):
			t.Errorf("%s: ran %d sequences (first failure at %d) and %d shrink runs, want the sequences to stop at the failure and shrink runs apart",
				tt.design.Name, seqs, r.FirstSequences, shrinks)
		}
	}
}

// TestExploreLanesAndShards checks that the sequences of a run do not
// depend on how many lanes run them, and that the shards of a run make up
// the whole run: the counts of everything they did add up.
func TestExploreLanesAndShards(t *testing.T) {
	t.Parallel()
	explore := func(checks, parallel, shard, shards int) *Stats {
		r, err := Explore(t.Context(), ExploreConfig{Checks: checks, Steps: DefaultSteps, Seed: 7, Parallel: parallel, Shard: shard, Shards: shards, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if r.Failure != nil {
			t.Fatalf("the real design failed:\n%s", r.Failure.Report(""))
		}
		return r.Stats
	}
	whole := explore(12, 1, 0, 0)
	for _, tt := range []struct {
		name  string
		parts []*Stats
	}{
		{"three lanes", []*Stats{explore(12, 3, 0, 0)}},
		{"two shards", []*Stats{explore(6, 1, 1, 2), explore(6, 2, 2, 2)}},
	} {
		sum := NewStats()
		for _, p := range tt.parts {
			sum.Steps.Add(p.Steps.Load())
			for c, n := range p.InputClasses {
				sum.InputClasses[c] += n
			}
			for k, n := range p.Faults {
				sum.Faults[k] += n
			}
			for k, n := range p.Results {
				sum.Results[k] += n
			}
		}
		if sum.Steps.Load() != whole.Steps.Load() || !maps.Equal(sum.InputClasses, whole.InputClasses) ||
			!maps.Equal(sum.Faults, whole.Faults) || !maps.Equal(sum.Results, whole.Results) {
			t.Errorf("%s: got %d steps, faults %v, results %v; want what one lane did: %d steps, faults %v, results %v",
				tt.name, sum.Steps.Load(), sum.Faults, sum.Results, whole.Steps.Load(), whole.Faults, whole.Results)
		}
	}
}

// TestExploreInterrupted cancels an exploration at its first progress
// call and checks that it stops cleanly: a partial report marked
// interrupted, and its folder removed.
func TestExploreInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := t.TempDir()
	start := time.Now()
	r, err := Explore(ctx, ExploreConfig{Checks: 100000, Steps: DefaultSteps, Seed: 3, Parallel: 2, Dir: dir,
		Progress: func(*Stats, time.Duration) { cancel() }})
	if err != nil {
		t.Fatal(err)
	}
	if seqs := r.Stats.Sequences.Load(); !r.Interrupted || seqs == 0 || seqs >= 100000 || r.Failure != nil {
		t.Errorf("got interrupted %t after %d sequences, failure %v; want a partial report", r.Interrupted, seqs, r.Failure)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("stopping took until %v", d)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "handoff-explore-*")); len(left) > 0 {
		t.Errorf("the exploration left %v", left)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		t.Errorf("%s holds %v (%v), want it empty", dir, entries, err)
	}
}
