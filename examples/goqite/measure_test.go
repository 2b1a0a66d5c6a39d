package outbox

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/designs"
)

// MeasureEnv names the variable that runs TestMeasure: the backends to
// measure on, "sqlite", "postgres" or "sqlite,postgres".
const MeasureEnv = "GOQITE_MEASURE"

// TestMeasure measures, on each backend MeasureEnv names, how fast the
// harness finds each finding (and all three at once, goqite as its docs
// read) on seeds 1 to 5: sequences and seconds to the first
// counterexample, and the shrunk length; then the steps per second of an
// exploration of the recommended variant and of the real handoff, in
// turn on the same seed. It fails if a seed finds nothing. It is a
// measurement, minutes long, so it runs only when asked:
//
//	GOQITE_MEASURE=sqlite,postgres go test -run TestMeasure -v -timeout 2h
func TestMeasure(t *testing.T) {
	which := os.Getenv(MeasureEnv)
	if which == "" {
		t.Skipf("a measurement: %s=sqlite,postgres go test -run TestMeasure -v runs it", MeasureEnv)
	}
	for _, b := range strings.Split(which, ",") {
		backend := handoff.Backend(b)
		if backend != handoff.SQLite && backend != handoff.Postgres {
			t.Fatalf("%s=%s: %q is neither sqlite nor postgres", MeasureEnv, which, b)
		}
		t.Run(b, func(t *testing.T) {
			url := ""
			if backend == handoff.Postgres {
				url = handoff.PostgresServer(t)
			}
			explore := func(d designs.Design, seed uint64, checks int) handoff.Report {
				r, err := handoff.Explore(t.Context(), handoff.ExploreConfig{Design: d, Checks: checks, Seed: seed,
					Dir: t.TempDir(), Backend: backend, PostgresURL: url})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			all := append([]finding{{name: "goqite-as-documented"}}, findings...)
			for _, f := range all {
				var seqs, lengths []int64
				var firsts []time.Duration
				for seed := uint64(1); seed <= 5; seed++ {
					r := explore(Design(f.name, f.variant, virtualClock(t)), seed, 2000)
					if r.Failure == nil {
						t.Errorf("%s seed %d: nothing found in %d sequences", f.name, seed, r.Sequences)
						continue
					}
					seqs, firsts, lengths = append(seqs, r.FirstSequences), append(firsts, r.FirstElapsed), append(lengths, int64(r.Failure.Steps))
					t.Logf("%s seed %d: invariant %d (also %v) after %d sequences, %.2f s; shrunk to %d steps; %.1f s in all",
						f.name, seed, r.Failure.Violation.Invariant, r.Failure.Violation.Also, r.FirstSequences, r.FirstElapsed.Seconds(), r.Failure.Steps, r.Elapsed.Seconds())
				}
				if len(seqs) > 0 {
					t.Logf("%s on %s: median %d sequences, %.2f s to the first counterexample; shrunk lengths %v", f.name, b, median(seqs), median(firsts).Seconds(), lengths)
				}
			}
			checks := 300
			if backend == handoff.Postgres {
				checks = 60
			}
			for round := 1; round <= 2; round++ {
				for _, d := range []designs.Design{Design("goqite", Recommended, virtualClock(t)), designs.Handoff} {
					r := explore(d, 1, checks)
					if r.Failure != nil {
						t.Errorf("%s broke invariant %d", d.Name, r.Failure.Violation.Invariant)
					}
					t.Logf("round %d, %s on %s: %d sequences, %d steps in %.1f s: %.0f steps/s", round, d.Name, b, r.Sequences,
						r.Steps, r.Elapsed.Seconds(), r.StepsPerSecond())
				}
			}
		})
	}
}

// median is the middle value of xs (the lower of the two middle ones).
func median[T int64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
