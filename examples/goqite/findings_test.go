package outbox

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/outboxlab/handoff"
)

// finding is a variant that breaks the handoff's contract: the way
// goqite's docs suggest using it where Recommended does otherwise.
type finding struct {
	name    string
	variant Variant
	// scenario is its minimal scenario in testdata/handoff, which breaks
	// the invariants broken, the first reported first, at step (1-based)
	// on the variant and holds on Recommended (TestVerify replays it).
	scenario string
	step     int
	broken   []int
	// explored is the invariant the search reports first, and longest
	// the most steps it may shrink the counterexample to.
	explored, longest int
}

// findings are the three places where goqite's API leaves the contract to
// the app.
var findings = []finding{
	// The search ends its counterexample with a converge, where invariant
	// 7 (the worker converges) is checked before 6.
	{"goqite-max-receive", Variant{Fenced: true, Ordered: true}, "max-receive.txt", 5, []int{6}, 7, 6},
	{"goqite-unfenced", Variant{SpareReceive: true, Ordered: true}, "unfenced.txt", 6, []int{8, 6}, 8, 8},
	{"goqite-created-order", Variant{SpareReceive: true, Fenced: true}, "created-order.txt", 4, []int{6}, 6, 5},
}

// stepLine is the line of step n (1-based) of the scenario at path: the
// directive line above its n-th "----".
func stepLine(t *testing.T, path string, n int) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for line := 1; s.Scan(); line++ {
		if s.Text() == "----" {
			if n--; n == 0 {
				return line - 1
			}
		}
	}
	t.Fatalf("%s has fewer steps than asked", path)
	return 0
}

// TestFindingsReplay replays each finding's minimal scenario on its
// variant, on SQLite and on PostgreSQL, and passes only if the step it
// documents is the first to break an invariant, and breaks the ones it
// names.
func TestFindingsReplay(t *testing.T) {
	for _, backend := range []handoff.Backend{handoff.SQLite, handoff.Postgres} {
		t.Run(string(backend), func(t *testing.T) {
			url := ""
			if backend == handoff.Postgres {
				url = handoff.PostgresServer(t)
			}
			for _, f := range findings {
				t.Run(f.name, func(t *testing.T) {
					path := filepath.Join("testdata", "handoff", f.scenario)
					r, err := handoff.Replay(t.Context(), path, handoff.ReplayOptions{Design: Design(f.name, f.variant, virtualClock(t)),
						Dir: t.TempDir(), Backend: backend, PostgresURL: url})
					if err != nil {
						t.Fatal(err)
					}
					want := stepLine(t, path, f.step)
					if r.Violation == nil {
						t.Fatalf("%s ended without a violation on %s; want invariants %v at line %d", f.scenario, f.name, f.broken, want)
					}
					got := append([]int{r.Violation.Invariant}, r.Violation.Also...)
					if r.Line != want || !slices.Equal(got, f.broken) {
						t.Fatalf("%s:%d broke invariants %v (%s); want %v at line %d", f.scenario, r.Line, got, r.Violation.Detail, f.broken, want)
					}
					t.Logf("%s:%d, step %d, broke invariants %v as documented: %s", f.scenario, r.Line, f.step, got, r.Violation.Detail)
				})
			}
		})
	}
}

// TestFindingsExplored runs on each finding's variant the rapid property
// that handoff.Verify runs, through handoff.Explore, which returns the
// failure instead of failing the test, and passes only if the harness
// finds it on seed 1: the invariant documented, in a minimal scenario of
// at most the documented length.
func TestFindingsExplored(t *testing.T) {
	for _, f := range findings {
		t.Run(f.name, func(t *testing.T) {
			r, err := handoff.Explore(t.Context(), handoff.ExploreConfig{Design: Design(f.name, f.variant, virtualClock(t)), Checks: 500,
				Seed: 1, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			got := r.Failure
			if got == nil {
				t.Fatalf("the harness missed %s in %d sequences", f.name, r.Sequences)
			}
			t.Logf("found after %d sequences (%v), shrunk to %d steps, invariant %d (also %v):\n%s", r.FirstSequences, r.FirstElapsed,
				got.Steps, got.Violation.Invariant, got.Violation.Also, got.Report(""))
			if got.Violation.Invariant != f.explored || got.Steps > f.longest {
				t.Errorf("got invariant %d in %d steps, want invariant %d in at most %d", got.Violation.Invariant, got.Steps, f.explored, f.longest)
			}
		})
	}
}

// TestWallClockIsCaught shows that the harness checks goqite's time: the
// recommended variant left on the wall clock, while the harness moves its
// virtual clock, hides a message for a lease that, to the model, ran out
// long ago.
func TestWallClockIsCaught(t *testing.T) {
	r, err := handoff.Explore(t.Context(), handoff.ExploreConfig{Design: Design("goqite-wall-clock", Recommended, nil), Checks: 500,
		Seed: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failure == nil {
		t.Fatalf("the harness ran %d sequences of goqite on the wall clock and found nothing", r.Sequences)
	}
	t.Logf("found after %d sequences:\n%s", r.FirstSequences, r.Failure.Report(""))
	if r.Failure.Violation.Invariant != 6 {
		t.Errorf("got invariant %d, want 6 (the system matches the model)", r.Failure.Violation.Invariant)
	}
}
