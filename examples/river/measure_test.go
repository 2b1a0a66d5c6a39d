package riveroutbox

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/designs"
)

// TestMeasure measures, with RIVER_MEASURE=SEEDS (and on PostgreSQL too
// when a server answers), how fast the harness finds each finding (the
// sequences and seconds to the first counterexample, median over the
// seeds, and the shrunk length), and the steps per second of an
// exploration of the one-worker River design and of the real handoff,
// run in turn on the same checks and seed. It logs; it asserts nothing
// but that each search finds its finding.
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
		for _, v := range []Variant{Workers, WorkersRelease} {
			var seqs []int64
			var secs []float64
			var lengths []int
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				r, err := handoff.Explore(t.Context(), handoff.ExploreConfig{Design: v.Design(), Checks: 200, Steps: handoff.DefaultSteps,
					Seed: seed, Dir: t.TempDir(), Backend: b, PostgresURL: url})
				if err != nil {
					t.Fatal(err)
				}
				if r.Failure == nil {
					t.Fatalf("%s on %s, seed %d: nothing found", v.Name, b, seed)
				}
				seqs, secs, lengths = append(seqs, r.FirstSequences), append(secs, r.FirstElapsed().Seconds()), append(lengths, r.Failure.Length())
			}
			t.Logf("%s on %s: %d seeds: first counterexample after %v sequences (median %d), %.2v s (median %.2f s); shrunk to %v steps",
				v.Name, b, seeds, seqs, median(seqs), secs, median(secs), lengths)
		}
		checks := 300
		if b == handoff.Postgres {
			checks = 60
		}
		for round := range 2 {
			for _, d := range []designs.Design{OneWorker.Design(), designs.Handoff} {
				start := time.Now()
				r, err := handoff.Explore(t.Context(), handoff.ExploreConfig{Design: d, Checks: checks, Steps: handoff.DefaultSteps, Seed: 1,
					Dir: t.TempDir(), Backend: b, PostgresURL: url})
				if err != nil {
					t.Fatal(err)
				}
				if r.Failure != nil {
					t.Fatalf("%s on %s failed:\n%s", d.Name, b, r.Failure.Report(""))
				}
				t.Logf("round %d, %s on %s: %d sequences, %d steps in %.1f s: %.0f steps/s", round+1, d.Name, b,
					r.Stats.Sequences.Load(), r.Stats.Steps.Load(), time.Since(start).Seconds(), r.StepsPerSecond())
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
