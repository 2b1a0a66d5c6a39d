package buggy

import (
	"testing"

	"github.com/outboxlab/handoff"
)

// TestHarnessCatchesTheBug runs on the buggy outbox the rapid property
// that handoff.Verify runs in package outbox, through handoff.Explore,
// which returns the failure instead of failing the test, and passes only
// if the harness finds the bug: invariant 4, the receiver saw more sends
// for a key than the row counts, in a minimal scenario of two steps (an
// approval, and a delivery whose worker dies after the reply). It logs
// the report, as Verify prints it.
func TestHarnessCatchesTheBug(t *testing.T) {
	r, err := handoff.Explore(t.Context(), handoff.ExploreConfig{Design: Design, Checks: 200, Seed: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f := r.Failure
	if f == nil {
		t.Fatalf("the harness missed the bug in %d sequences", r.Sequences)
	}
	t.Logf("found after %d sequences:\n%s", r.FirstSequences, f.Report(""))
	if f.Violation.Invariant != 4 || f.Steps > 2 {
		t.Errorf("got invariant %d in %d steps, want invariant 4 in at most 2", f.Violation.Invariant, f.Steps)
	}
}
