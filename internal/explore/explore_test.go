package explore

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/sim"
	"pgregory.net/rapid"
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
		r, err := Run(t.Context(), Config{Design: tt.design, Checks: tt.checks, Steps: DefaultSteps, Seed: 1, Parallel: tt.parallel, Dir: t.TempDir()})
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
	explore := func(checks, parallel, shard, shards int) *sim.Stats {
		r, err := Run(t.Context(), Config{Checks: checks, Steps: DefaultSteps, Seed: 7, Parallel: parallel, Shard: shard, Shards: shards, Dir: t.TempDir()})
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
		parts []*sim.Stats
	}{
		{"three lanes", []*sim.Stats{explore(12, 3, 0, 0)}},
		{"two shards", []*sim.Stats{explore(6, 1, 1, 2), explore(6, 2, 2, 2)}},
	} {
		sum := sim.NewStats()
		for _, p := range tt.parts {
			sum.Add(p)
		}
		if sum.Sequences.Load() != whole.Sequences.Load() || sum.Steps.Load() != whole.Steps.Load() || !maps.Equal(sum.InputClasses, whole.InputClasses) ||
			!maps.Equal(sum.Faults, whole.Faults) || !maps.Equal(sum.Results, whole.Results) || !maps.Equal(sum.Phases, whole.Phases) ||
			!maps.Equal(sum.Transitions, whole.Transitions) {
			t.Errorf("%s: got %d sequences, %d steps, faults %v, results %v; want what one lane did: %d sequences, %d steps, faults %v, results %v",
				tt.name, sum.Sequences.Load(), sum.Steps.Load(), sum.Faults, sum.Results, whole.Sequences.Load(), whole.Steps.Load(), whole.Faults, whole.Results)
		}
	}
}

// TestSequencer hands out indexes and reports failures in turn, and
// checks what each Next returns: every index in order until the checks
// run out or an index reaches the lowest failure, which a later failure
// of a higher index does not raise.
func TestSequencer(t *testing.T) {
	const fail = -1 // an op: the index after it failed
	for _, tt := range []struct {
		name   string
		checks int
		ops    []int64 // fail, then the index; or a want: the index Next returns, -2 for none
	}{
		{"checks run out", 3, []int64{0, 1, 2, -2, -2}},
		{"a failure stops its index and those above", 9, []int64{fail, 3, 0, 1, 2, -2, -2}},
		{"a lower failure stops more", 9, []int64{fail, 5, 0, 1, fail, 2, -2}},
		{"a higher failure stops no more", 9, []int64{fail, 3, 0, 1, 2, fail, 6, -2}},
		{"a failure of the last index handed out", 9, []int64{0, 1, fail, 1, -2}},
	} {
		s := NewSequencer(tt.checks)
		for i := 0; i < len(tt.ops); i++ {
			if tt.ops[i] == fail {
				i++
				s.Fail(tt.ops[i])
				continue
			}
			m, ok := s.Next()
			if want := tt.ops[i]; want < 0 && ok || want >= 0 && (!ok || m != want) {
				t.Errorf("%s: op %d: got %d, %t; want %d", tt.name, i, m, ok, want)
			}
		}
	}
}

// TestExploreLanesFindTheSameFailure explores fragile designs in one lane
// and in three (two under -short), and checks that the lanes report the
// same failure: that of the lowest index, whichever lane found it first,
// shrunk the same.
func TestExploreLanesFindTheSameFailure(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		design string
		seed   uint64
	}{
		{"count-after-send", 2},      // fails first at sequence 5
		{"fresh-key-per-attempt", 1}, // fails at every sequence: each lane fails at once
	} {
		if testing.Short() && tt.design != "count-after-send" {
			continue // -short: the case where lanes race for the lowest index is enough
		}
		d, err := designs.Lookup(tt.design)
		if err != nil {
			t.Fatal(err)
		}
		lanes := 3
		if testing.Short() {
			lanes = 2
		}
		var got [2]Report
		for i, parallel := range []int{1, lanes} {
			got[i], err = Run(t.Context(), Config{Design: d, Checks: 100, Steps: DefaultSteps, Seed: tt.seed, Parallel: parallel, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if got[i].Failure == nil {
				t.Fatalf("%s, seed %d, %d lanes: no failure", tt.design, tt.seed, parallel)
			}
		}
		one, more := got[0], got[1]
		if one.FailureSeed != more.FailureSeed || one.Failure.Scenario() != more.Failure.Scenario() {
			t.Errorf("%s, seed %d: one lane found seed %d:\n%s\n%d lanes found seed %d:\n%s", tt.design, tt.seed,
				one.FailureSeed, one.Failure.Scenario(), lanes, more.FailureSeed, more.Failure.Scenario())
		}
	}
}

// TestFailureSeedOfTheFirstSequence: a design that fails in every
// sequence fails in the first a shard runs, whose seed is the run's for
// shard 1 (explore --seed FAILURE-SEED runs the failure first), and the
// run's seed of the index it has in the whole run for another shard.
func TestFailureSeedOfTheFirstSequence(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: it shrinks a fragile design's failure twice; run without -short")
	}
	d, err := designs.Lookup("fresh-key-per-attempt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ shard, shards int }{{1, 1}, {2, 3}} {
		r, err := Run(t.Context(), Config{Design: d, Checks: 4, Steps: DefaultSteps, Seed: 11, Shard: tt.shard, Shards: tt.shards, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if want := SequenceSeed(11, int64(tt.shard-1)); r.Failure == nil || r.FailureSeed != want {
			t.Errorf("shard %d of %d: failure %v at seed %d, want one at seed %d", tt.shard, tt.shards, r.Failure != nil, r.FailureSeed, want)
		}
	}
}

// TestExploreInterrupted cancels an exploration at its first progress
// call, a second in, and checks that it stops cleanly: a partial report
// marked interrupted, and its folder removed. It explores in two lanes,
// in one under -short (a lane's second of work is what it costs).
func TestExploreInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := t.TempDir()
	start := time.Now()
	lanes := 2
	if testing.Short() {
		lanes = 1
	}
	r, err := Run(ctx, Config{Checks: 100000, Steps: DefaultSteps, Seed: 3, Parallel: lanes, Dir: dir,
		Progress: func(*sim.Stats, time.Duration) { cancel() }})
	if err != nil {
		t.Fatal(err)
	}
	if seqs := r.Stats.Sequences.Load(); !r.Interrupted || seqs == 0 || seqs >= 100000 || r.Failure != nil {
		t.Errorf("got interrupted %t after %d sequences, failure %v; want a partial report", r.Interrupted, seqs, r.Failure)
	}
	// How long it took to stop is logged, not bounded: an exploration
	// that ignored the interruption would run all 100,000 sequences,
	// which the check above catches however loaded the machine is.
	t.Logf("interrupted after %d sequences, %v after it started", r.Stats.Sequences.Load(), time.Since(start))
	if left, _ := filepath.Glob(filepath.Join(dir, "handoff-explore-*")); len(left) > 0 {
		t.Errorf("the exploration left %v", left)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		t.Errorf("%s holds %v (%v), want it empty", dir, entries, err)
	}
}

// TestInterruptedShrinkingEnds cancels a property's context while rapid
// shrinks its failure, as an interrupt or a lane superseded by another's
// failure does, and checks that rapid runs the property at most twice
// more (a run that skipped instead kept rapid trying every candidate, for
// up to half a minute), and that the recorder keeps the failure found
// before the interrupt.
func TestInterruptedShrinkingEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	d, err := designs.Lookup("two-writes")
	if err != nil {
		t.Fatal(err)
	}
	rec := &Recorder{}
	prop, done := Property(ctx, PropertyConfig{Design: d, Dir: t.TempDir(), MaxSteps: DefaultSteps, Recorder: rec})
	defer done()
	if err := rapidFlags.begin(); err != nil {
		t.Fatal(err)
	}
	defer rapidFlags.end()
	const interruptAt = 20 // a shrink run: the sequence of this seed fails at once
	var (
		runs, after int
		found       *sim.Failure
	)
	tb := &exploreTB{name: t.Name()}
	rapidFlags.check(tb, SequenceSeed(1, 5), func(rt *rapid.T) {
		if runs++; runs == interruptAt {
			cancel()
			found = rec.Failure
		}
		if runs > interruptAt {
			after++
		}
		prop(rt)
	})
	switch {
	case !tb.failed || found == nil:
		t.Fatalf("two-writes did not fail within %d runs of seed %d", interruptAt, SequenceSeed(1, 5))
	case after > 2:
		t.Errorf("rapid ran the property %d times after the interrupt, want at most 2", after)
	case rec.Failure != found:
		t.Errorf("the recorder holds a failure found after the interrupt:\n%s\nwant the one found before:\n%s", rec.Failure.Report(""), found.Report(""))
	}
}

// TestCheckAsGivenKeepsTheCommandLinesChecks runs a test's property while
// an exploration has set rapid's flags for its own single checks: the
// test must still run as many checks as the command line asked for, or
// as many as it asks for itself, and asking leaves the command line's
// count to the next.
func TestCheckAsGivenKeepsTheCommandLinesChecks(t *testing.T) {
	countOf := func(checks int) int {
		n := 0
		rapidFlags.checkAsGiven(t, checks, 0, func(*rapid.T) { n++ })
		return n
	}
	count := func() int { return countOf(0) }
	own, few := 10, 3
	if testing.Short() {
		own, few = 2, 1 // rapid runs a fifth of the count under -short, at least one
	}
	asked := count()
	if asked < 2 {
		t.Skipf("-rapid.checks asks for %d checks; the test needs more than one to tell them from an exploration's one", asked)
	}
	ownCount := func(when string) {
		if got := countOf(10); got != own {
			t.Errorf("%s, asked for 10 checks of its own, the property ran %d, want %d", when, got, own)
		}
		if got := countOf(3); got != few {
			t.Errorf("%s, asked for 3 checks of its own, the property ran %d, want %d", when, got, few)
		}
		if got := count(); got != asked {
			t.Errorf("%s, after a check of its own count, the property ran %d checks, want the command line's %d", when, got, asked)
		}
	}
	ownCount("alone")
	if err := rapidFlags.begin(); err != nil {
		t.Fatal(err)
	}
	defer rapidFlags.end()
	rapidFlags.check(&exploreTB{name: t.Name()}, 1, func(*rapid.T) {}) // leaves rapid.checks set for one check
	if got := count(); got != asked {
		t.Errorf("with an exploration running, the property ran %d checks, want %d as without", got, asked)
	}
	ownCount("with an exploration running")
}
