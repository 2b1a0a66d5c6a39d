package explore

import (
	"fmt"
	"testing"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/pgtest"
)

// BenchmarkExplore explores the real design on a fixed seed, in one lane
// and in two, and reports simulated steps per second: the figure issue
// "speed" asks of explore, measured here rather than asserted. Its lanes
// are Run's, goroutines of one process; explore --parallel N runs each
// in a process of its own, and BenchmarkExploreLanes in cmd/handoff
// measures those.
func BenchmarkExplore(b *testing.B) {
	for _, lanes := range []int{1, 2} {
		b.Run(fmt.Sprintf("lanes=%d", lanes), func(b *testing.B) {
			benchmarkSteps(b, Config{Checks: 200, Steps: DefaultSteps, Seed: 1, Parallel: lanes})
		})
	}
}

// BenchmarkExploreBackends explores the real design on the same seed in
// one lane on each backend, and reports steps per second on each: the
// ratio of PostgreSQL's figure to SQLite's, measured in one run, is what
// docs/performance.md records.
func BenchmarkExploreBackends(b *testing.B) {
	for _, be := range backend.All {
		b.Run("backend="+string(be), func(b *testing.B) {
			cfg := Config{Checks: 100, Steps: DefaultSteps, Seed: 1, Parallel: 1, Backend: be}
			if be == backend.Postgres {
				cfg.PostgresURL = pgtest.Server(b)
			}
			benchmarkSteps(b, cfg)
		})
	}
}

// benchmarkSteps explores cfg, in a new folder each time, as often as b
// asks, fails b if the real design broke an invariant, and reports the
// simulated steps per second.
func benchmarkSteps(b *testing.B, cfg Config) {
	var steps int64
	for b.Loop() {
		cfg.Dir = b.TempDir()
		r, err := Run(b.Context(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		if r.Failure != nil {
			b.Fatalf("the real design failed:\n%s", r.Failure.Report(""))
		}
		steps += r.Stats.Steps.Load()
	}
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
}
