package running

import (
	"slices"
	"testing"
)

// TestLanes: a timeline has one app lane for each process, named by its
// replica only when there are several, then the boots, the named
// workers in order, the receiver and the harness; each once.
func TestLanes(t *testing.T) {
	requests := []Request{{Worker: "w2"}, {Worker: "w1"}, {}, {Worker: "w2"}}
	for _, tc := range []struct {
		replicas int
		boots    []string
		want     []string
	}{
		{0, []string{"boot 1"}, []string{LaneApp, "boot 1", "w1", "w2", LaneReceiver, LaneHarness}},
		{1, []string{"boot 1", "boot 2"}, []string{LaneApp, "boot 1", "boot 2", "w1", "w2", LaneReceiver, LaneHarness}},
		{3, []string{"replica 1 boot 1", "replica 2 boot 2"}, []string{LaneApp + " (replica 1)", LaneApp + " (replica 2)", LaneApp + " (replica 3)",
			"replica 1 boot 1", "replica 2 boot 2", "w1", "w2", LaneReceiver, LaneHarness}},
	} {
		res := Result{Schedule: Schedule{Replicas: tc.replicas}, BootLanes: tc.boots, Requests: requests}
		if got := res.Lanes(); !slices.Equal(got, tc.want) {
			t.Errorf("%d replicas: lanes %q, want %q", tc.replicas, got, tc.want)
		}
	}
}
