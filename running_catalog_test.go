package handoff

import (
	"testing"
	"time"

	"github.com/outboxlab/handoff/designs"
)

// TestRunningCatalog: the search of the running mode catches every
// fragile running design, on SQLite, with the check its catalog entry
// names, and passes the plain worker they are built on.
func TestRunningCatalog(t *testing.T) {
	for _, d := range append([]designs.Running{designs.Plain}, designs.RunningFragile...) {
		t.Run(d.Name, func(t *testing.T) {
			start := time.Now()
			db := newRunningDatabase(t, RunningOptions{Backend: SQLite})
			last, st, failed, account := searchRunning(t, d, db, SQLite)
			t.Logf("%s in %v", st, time.Since(start).Round(time.Millisecond))
			switch {
			case d.CaughtBy == "" && failed:
				t.Fatalf("the plain worker failed:\n%s", account)
			case d.CaughtBy == "":
				return
			case !failed:
				t.Fatalf("design %s was not caught", d.Name)
			case last == nil:
				t.Fatalf("the harness failed:\n%s", account)
			case last.Violation.Check != d.CaughtBy:
				t.Fatalf("design %s broke %s, its catalog entry says %s:\n%s", d.Name, last.Violation.Check, d.CaughtBy, runningFailure(*last, 0, 0))
			}
			t.Logf("caught by %s: %s", last.Violation.Check, last.Violation.Detail)
		})
	}
}
