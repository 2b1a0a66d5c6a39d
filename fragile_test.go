package handoff

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/outboxlab/handoff/designs"
)

// fragileSeeds are the seeds every fragile design is explored with: the
// catch must not depend on one lucky seed.
var fragileSeeds = []uint64{1, 42, 7919}

// TestFragileDesigns runs the property of TestSimulation against every
// design of the fragile catalog, through a rapid.TB of its own so that the
// expected failure does not fail this test, and checks that the search
// finds a violation within the default budget, that it is the documented
// invariant, and that shrinking reaches the documented minimal length.
// With -short it is skipped: searching and shrinking twelve designs takes
// half a minute, and TestFragileCorpus still replays each design's minimal
// counterexample.
func TestFragileDesigns(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: TestFragileCorpus replays each minimal counterexample; run without -short to search and shrink")
	}
	for _, d := range designs.Fragile {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			for _, seed := range fragileSeeds {
				r, err := Explore(context.Background(), ExploreConfig{
					Design: d, Checks: DefaultChecks, Steps: DefaultSteps, Seed: seed, Dir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				switch f := r.Failure; {
				case f == nil:
					t.Errorf("seed %d: no violation in %d sequences; %s", seed, DefaultChecks, r.Problem)
				case f.Violation.Invariant != d.Invariant || f.Length() != d.MinimalSteps:
					t.Errorf("seed %d: got invariant %d in %d steps, want invariant %d in %d steps:\n%s",
						seed, f.Violation.Invariant, f.Length(), d.Invariant, d.MinimalSteps, f.Report(""))
				}
			}
		})
	}
}

// TestFragileCorpus checks that every catalog entry has its minimal
// counterexample in corpus/fragile, and that replaying it breaks the
// documented invariant at the documented length.
func TestFragileCorpus(t *testing.T) {
	for _, d := range designs.Fragile {
		t.Run(d.Name, func(t *testing.T) {
			sc, err := ReadScenario(filepath.Join("corpus", "fragile", d.Name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			if sc.Design() != d.Name {
				t.Fatalf("the scenario runs design %q", sc.Design())
			}
			env, err := NewEnv(context.Background(), Config{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			var last Outcome
			for _, c := range sc.Cases {
				if last, err = env.Apply(t.Context(), c.Step); err != nil {
					t.Fatal(err)
				}
				if last.Violation != nil && c.Line != sc.Cases[len(sc.Cases)-1].Line {
					t.Fatalf("line %d broke invariant %d before the last step", c.Line, last.Violation.Invariant)
				}
			}
			if v := last.Violation; v == nil || v.Invariant != d.Invariant || len(sc.Cases)-1 != d.MinimalSteps {
				t.Errorf("got violation %v after %d steps, want invariant %d after %d", v, len(sc.Cases)-1, d.Invariant, d.MinimalSteps)
			}
		})
	}
}

// TestReach checks that a default exploration of the real design reaches
// every fault, every outbox transition, every worker result and every
// class of edge input, so that a change to the generators cannot silently
// lose reach. It runs exactly reachChecks sequences, with or without
// -short.
func TestReach(t *testing.T) {
	const reachChecks = 300
	r, err := Explore(context.Background(), ExploreConfig{Checks: reachChecks, Steps: DefaultSteps, Seed: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failure != nil {
		t.Fatalf("the real design failed:\n%s", r.Failure.Report(""))
	}
	if got := r.Stats.Sequences.Load(); got != reachChecks {
		t.Errorf("ran %d sequences, want %d", got, reachChecks)
	}
	for _, c := range InputClasses {
		if r.Stats.InputClasses[c] == 0 {
			t.Errorf("input class %q never drawn", c)
		}
	}
	for k := range faultTable {
		if r.Stats.Faults[k] == 0 {
			t.Errorf("fault %s never took effect", k)
		}
	}
	for _, tr := range []Transition{PendingToSent, PendingToBlockedConflict, PendingToBlockedBudget, PendingToPending} {
		if r.Stats.Transitions[tr] == 0 {
			t.Errorf("transition %s never happened", tr)
		}
	}
	for _, res := range []AnswerKind{Idle, Sent, Pending, Blocked, Crashed} {
		if r.Stats.Results[res] == 0 {
			t.Errorf("worker result %s never happened", res)
		}
	}
	t.Logf("faults %v; transitions %v; results %v; input classes %v", r.Stats.Faults, r.Stats.Transitions, r.Stats.Results, r.Stats.InputClasses)
}

// TestCrashPointEnumeration crashes every corpus scenario of the real
// design at every fault point it passes, and checks that every run keeps
// every invariant; then shows that enumeration catches the fragile designs
// that a single crash breaks.
func TestCrashPointEnumeration(t *testing.T) {
	ctx := context.Background()
	total := 0
	for _, file := range CorpusFiles() {
		b, err := Corpus.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := ParseScenario(file, string(b))
		if err != nil {
			t.Fatal(err)
		}
		if sc.Design() != designs.Handoff.Name {
			continue
		}
		points, err := Enumerate(ctx, sc, designs.Handoff, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		total += len(points)
		for _, p := range points {
			if p.Violation != nil {
				t.Errorf("%s:%d: crash at pass %d (%s): %s", file, p.Case.Line, p.Pass, p.Point, p.Violation)
			}
		}
	}
	if total < 20 {
		t.Errorf("only %d crash points in the corpus", total)
	}

	demo, err := ReadScenario(filepath.Join("corpus", "lost-reply-demo.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		design    string
		invariant int
	}{
		{"two-writes", 2}, {"count-after-send", 4}, {"transaction-across-send", 4}, {"sent-before-send", 3},
	} {
		d, err := designs.Lookup(tt.design)
		if err != nil {
			t.Fatal(err)
		}
		points, err := Enumerate(ctx, demo, d, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		caught := ""
		for _, p := range points {
			if p.Violation != nil && p.Violation.Invariant == tt.invariant {
				caught = fmt.Sprintf("pass %d (%s)", p.Pass, p.Point)
			}
		}
		if caught == "" {
			t.Errorf("enumerating %s over the demo broke no invariant %d", tt.design, tt.invariant)
		}
	}
}
