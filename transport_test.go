package handoff

import (
	"errors"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/model"
)

// TestCorpusOverHTTP replays every corpus file over HTTP and compares
// each step's output with the file: the outputs in process and over HTTP
// are one and the same. A fragile design with a receiver of its own is
// refused at its design line.
func TestCorpusOverHTTP(t *testing.T) {
	scenarios, err := CorpusScenarios()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(sc.Name, "corpus/"), ".txt"), func(t *testing.T) {
			d, err := designs.Lookup(sc.Design())
			if err != nil {
				t.Fatal(err)
			}
			_, problems, err := ReplayOver(t.Context(), sc, t.TempDir(), HTTP)
			if d.OwnReceiver {
				if !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), "in process only") {
					t.Errorf("design %s over http: got %v, want it refused as running in process only", d.Name, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// TestExploreOverHTTP explores the real design over HTTP: no invariant
// breaks, every sequence runs, and every network fault of faultTable
// takes effect as the proxy's action.
func TestExploreOverHTTP(t *testing.T) {
	const checks = 40
	r, err := Explore(t.Context(), ExploreConfig{Checks: checks, Steps: DefaultSteps, Seed: 1, Parallel: 2, Transport: HTTP, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case r.Problem != "":
		t.Fatalf("the harness failed over http:\n%s", r.Problem)
	case r.Failure != nil:
		t.Fatalf("the real design failed over http:\n%s", r.Failure.Report(""))
	}
	if got := r.Stats.Sequences.Load(); got != checks {
		t.Errorf("ran %d sequences, want %d", got, checks)
	}
	for k, f := range faultTable {
		if f.network != model.Delivered && r.Stats.Faults[k] == 0 {
			t.Errorf("network fault %s never took effect over http", k)
		}
	}
	t.Logf("%d steps at %.0f steps/s; faults %v", r.Stats.Steps.Load(), r.StepsPerSecond(), r.Stats.Faults)
}
