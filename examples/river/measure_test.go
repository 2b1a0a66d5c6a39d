package riveroutbox

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/designs"
)

// TestMeasure measures, with RIVER_MEASURE=SEEDS (and on PostgreSQL too
// with RIVER_MEASURE_POSTGRES=1), how fast the harness finds a
// counterexample in river-workers on each seed (the sequences and
// seconds to the first, their medians, the shrunk length and the
// invariants broken), and the steps per second of an exploration of the
// one-worker River design and of the real handoff, run in turn on the
// same checks and seed. It logs; it asserts nothing but that every
// search finds something and the one-worker design holds.
func TestMeasure(t *testing.T) {
	seeds, _ := strconv.Atoi(os.Getenv("RIVER_MEASURE"))
	if seeds == 0 {
		t.Skip("measurements run with RIVER_MEASURE=SEEDS")
	}
	backends := []handoff.Backend{handoff.SQLite}
	url := ""
	if os.Getenv("RIVER_MEASURE_POSTGRES") != "" {
		url = postgresURL(t)
		backends = append(backends, handoff.Postgres)
	}
	for _, b := range backends {
		var seqs []int64
		var secs []float64
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			r, err := handoff.Explore(t.Context(), handoff.ExploreConfig{Design: Workers.Design(), Checks: 300,
				Seed: seed, Dir: t.TempDir(), Backend: b, PostgresURL: url})
			if err != nil {
				t.Fatal(err)
			}
			f := r.Failure
			if f == nil {
				t.Fatalf("%s on %s, seed %d: nothing found in %d sequences", Workers.Name, b, seed, r.Sequences)
			}
			seqs, secs = append(seqs, r.FirstSequences), append(secs, r.FirstElapsed.Seconds())
			t.Logf("%s on %s, seed %d: first counterexample after %d sequences, %.2f s; shrunk to %d steps in %.1f s in all: invariant %d, also %v: %s\n  steps: %s",
				Workers.Name, b, seed, r.FirstSequences, r.FirstElapsed.Seconds(), f.Steps, r.Elapsed.Seconds(), f.Violation.Invariant, f.Violation.Also,
				f.Violation.Detail, strings.Join(directives(f.Scenario()), "; "))
		}
		t.Logf("%s on %s: median %d sequences, %.2f s to the first counterexample", Workers.Name, b, median(seqs), median(secs))
		checks := 300
		if b == handoff.Postgres {
			checks = 60
		}
		for round := range 2 {
			for _, d := range []designs.Design{OneWorker.Design(), designs.Handoff} {
				r, err := handoff.Explore(t.Context(), handoff.ExploreConfig{Design: d, Checks: checks, Seed: 1,
					Dir: t.TempDir(), Backend: b, PostgresURL: url})
				if err != nil {
					t.Fatal(err)
				}
				if r.Failure != nil {
					t.Fatalf("%s on %s failed:\n%s", d.Name, b, r.Failure.Report(""))
				}
				t.Logf("round %d, %s on %s: %d sequences, %d steps in %.1f s: %.0f steps/s", round+1, d.Name, b,
					r.Sequences, r.Steps, r.Elapsed.Seconds(), r.StepsPerSecond())
			}
		}
	}
}

// median is the middle value of xs (the lower of the two middle ones).
func median[E int64 | float64](xs []E) E {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// directives are the step lines of a scenario file: each line that the
// separator of its output follows.
func directives(scenario string) []string {
	lines := strings.Split(scenario, "\n")
	var ds []string
	for i := 0; i+1 < len(lines); i++ {
		if lines[i+1] == "----" && !strings.HasPrefix(lines[i], "design ") {
			ds = append(ds, lines[i])
		}
	}
	return ds
}
