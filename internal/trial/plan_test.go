package trial

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlanTrial: every choice of a trial comes from its seed: the same
// seed plans the same trial, another seed another; every row is approved
// once; the server is killed only when the trial runs it.
func TestPlanTrial(t *testing.T) {
	batches, plans := planTrial(7, 50, 300, 3, true)
	again, plansAgain := planTrial(7, 50, 300, 3, true)
	if diff := cmp.Diff(plans, plansAgain, cmp.AllowUnexported(killPlan{})); diff != "" || !slices.Equal(batches, again) {
		t.Errorf("seed 7 planned two trials (-first +second):\n%s", diff)
	}
	if _, other := planTrial(8, 50, 300, 3, true); cmp.Equal(plans, other, cmp.AllowUnexported(killPlan{})) {
		t.Error("seeds 7 and 8 planned the same kills")
	}
	total, servers := 0, 0
	for _, b := range batches {
		total += b
	}
	for _, p := range plans {
		if p.server {
			servers++
		}
		if p.witness < 0 || p.witness >= 3 || p.lines < 0 || p.extra < 0 || p.extra >= maxExtra || p.pause < 0 || p.pause >= maxPause {
			t.Errorf("a kill out of bounds: %+v", p)
		}
	}
	if total != 300 || len(batches) != 51 || servers == 0 || servers > 25 {
		t.Errorf("%d rows in %d batches, %d server kills of 50; want 300 in 51, some", total, len(batches), servers)
	}
	if _, none := planTrial(7, 50, 300, 3, false); slices.ContainsFunc(none, func(p killPlan) bool { return p.server }) {
		t.Error("a server kill planned for a receiver the trial does not run")
	}
}
