package trial

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/outboxlab/handoff/system"
)

// tasksOf is a Receiver that holds the tasks of the keys it lists.
type tasksOf map[string][]system.Task

func (r tasksOf) Identity() string { return "tasks-of" }
func (r tasksOf) TasksFor(_ context.Context, key string) ([]system.Task, error) {
	return r[key], nil
}
func (r tasksOf) Close() {}

// TestLanding: a kill lands where the files and the receiver say: a
// pending row no one claimed is no delivery in flight; one a worker of
// the killed process claimed is one, before or after the receiver made
// its task; one another process's worker claimed is not the killed
// process's.
func TestLanding(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "app.db")
	app, err := system.Open(ctx, path, system.Options{Worker: "work-1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := app.RecordApproval(ctx, "case-1", "Call back"); err != nil {
		t.Fatal(err)
	}
	check := func(when, prefix string, remote Receiver, worker, server string) {
		t.Helper()
		if got, err := workerLanding(ctx, app, remote, prefix); err != nil || got != worker {
			t.Errorf("%s, the kill of %s: %q, %v; want %q", when, prefix, got, err, worker)
		}
		if got, err := serverLanding(ctx, app); err != nil || got != server {
			t.Errorf("%s, the server's kill: %q, %v; want %q", when, got, err, server)
		}
	}
	check("a row pending, unclaimed", "work-1", tasksOf{}, landedIdle, landedServerIdle)
	c, _, err := app.ClaimNext(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	check("the row claimed", "work-1", tasksOf{}, landedBeforeTask, landedServerBusy)
	check("the row claimed, its task made", "work-1", tasksOf{c.Key: {{ID: 1, Key: c.Key}}}, landedAfterTask, landedServerBusy)
	check("the row claimed by another process", "work-2", tasksOf{c.Key: {{ID: 1, Key: c.Key}}}, landedIdle, landedServerBusy)
}
