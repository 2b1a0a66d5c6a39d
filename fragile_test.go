package handoff

import (
	"testing"

	"github.com/outboxlab/handoff/designs"
)

// fragileSeeds are the seeds go test explores every fragile design with;
// handoff designs --measure SEEDS (in CI: three, seeds 1 to 3) shows that
// the catch does not depend on one lucky seed. Seed 4 is a fourth, and
// among the cheapest of seeds 1 to 6 in steps to find and shrink every
// design: 79,898 in all (no-fencing, the slowest, 33,790), against 78,836
// to 136,985 (explore --design NAME --seed S --json, steps).
var fragileSeeds = []uint64{4}

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
				r, err := Explore(t.Context(), ExploreConfig{
					Design: d, Checks: DefaultChecks, Steps: DefaultSteps, Seed: seed, Dir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				switch f := r.Failure; {
				case f == nil:
					t.Errorf("seed %d: no violation in %d sequences; %s", seed, DefaultChecks, r.Problem)
				case !f.Violation.AsDocumented(d) || f.Length() < d.MinimalSteps || f.Length() > max(d.MinimalSteps, d.MostSteps):
					t.Errorf("seed %d: got invariant %d in %d steps, want invariant %d in %d to %d steps:\n%s",
						seed, f.Violation.Invariant, f.Length(), d.Invariant, d.MinimalSteps, max(d.MinimalSteps, d.MostSteps), f.Report(""))
				}
			}
		})
	}
}

// TestFragileCorpus checks that every catalog entry has its minimal
// counterexample in corpus/fragile, and that replaying it gives the
// file's outputs and breaks the documented invariant at the documented
// length, and not before.
func TestFragileCorpus(t *testing.T) {
	t.Parallel()
	fragileCorpus(t, Config{})
}

// fragileCorpus is TestFragileCorpus with the Envs of cfg (a Dir of
// their own each).
func fragileCorpus(t *testing.T, cfg Config) {
	scenarios := corpus(t)
	for _, d := range designs.Fragile {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			sc, ok := scenarios["corpus/fragile/"+d.Name+".txt"]
			if !ok {
				t.Fatalf("no corpus/fragile/%s.txt", d.Name)
			}
			if sc.Design() != d.Name {
				t.Fatalf("the scenario runs design %q", sc.Design())
			}
			cfg := cfg
			cfg.Dir = t.TempDir()
			env, err := NewEnv(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			var last Outcome
			for _, c := range sc.Cases {
				if last, err = env.Apply(t.Context(), c.Step); err != nil {
					t.Fatalf("%s:%d: %v", sc.Name, c.Line, err)
				}
				if last.Output != c.Want {
					t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", sc.Name, c.Line, c.Text, last.Output, c.Want)
				}
				if last.Violation != nil && c.Line != sc.Cases[len(sc.Cases)-1].Line {
					t.Fatalf("line %d broke invariant %d before the last step", c.Line, last.Violation.Invariant)
				}
			}
			if v := last.Violation; v == nil || !v.AsDocumented(d) || len(sc.Cases)-1 != d.MinimalSteps {
				t.Errorf("got violation %v after %d steps, want invariant %d after %d", v, len(sc.Cases)-1, d.Invariant, d.MinimalSteps)
			}
		})
	}
}
