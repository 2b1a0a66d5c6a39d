package trial

import (
	"strings"
	"testing"
)

// TestTrialSummaryOfAStoppedTrial: a trial stopped before its drain
// (interrupted, or a process that would not start) says its outcome was
// not read, rather than counting no row sent.
func TestTrialSummaryOfAStoppedTrial(t *testing.T) {
	sum := summary{Trials: 1, Workers: 3, Rows: 100, KillsByTarget: map[string]int{"worker": 2}, Kills: 2}
	for _, tt := range []struct {
		stopped bool
		want    string
	}{
		{false, "outcome: 0 rows sent, 0 blocked; 0 deliveries logged\n"},
		{true, "outcome: not read, the last trial stopped before its drain and checks"},
	} {
		var b strings.Builder
		sum.writeText(&b, tt.stopped)
		if !strings.Contains(b.String(), tt.want) || !strings.Contains(b.String(), "kills: 2 (0 of the server, 2 of workers)") {
			t.Errorf("stopped %v: got\n%s\nwant a line %q", tt.stopped, b.String(), tt.want)
		}
	}
}
