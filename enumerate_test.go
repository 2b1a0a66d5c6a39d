package handoff

import (
	"errors"
	"fmt"
	"testing"

	"github.com/outboxlab/handoff/designs"
)

// TestCrashPointEnumeration crashes every corpus scenario of the real
// design at every fault point it passes, and checks that every run keeps
// every invariant; then shows that enumeration catches the fragile designs
// that a single crash breaks.
func TestCrashPointEnumeration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	scenarios, err := CorpusScenarios()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, sc := range scenarios {
		if sc.Design() != designs.Handoff.Name {
			continue
		}
		points, err := Enumerate(ctx, sc, designs.Handoff, t.TempDir())
		if errors.Is(err, ErrOtherBackend) {
			continue // a scenario of PostgreSQL only: enumeration runs on SQLite
		}
		if err != nil {
			t.Fatal(err)
		}
		total += len(points)
		for _, p := range points {
			if p.Violation != nil {
				t.Errorf("%s:%d: crash at pass %d (%s): %s", sc.Name, p.Case.Line, p.Pass, p.Point, p.Violation)
			}
		}
	}
	if total < 20 {
		t.Errorf("only %d crash points in the corpus", total)
	}

	demo := corpus(t)["corpus/lost-reply-demo.txt"]
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
