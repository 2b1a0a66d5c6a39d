package trial

import (
	"context"
	"sort"

	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/system"
)

// checkTrial checks the trial's files: with crm serve, the app and CRM
// databases as handoff check does; with a receiver that ran already, the
// app database against the tasks it answers for the app's keys.
func checkTrial(ctx context.Context, appPath, crmPath, crmURL string, remote Receiver) ([]filecheck.Finding, filecheck.Files, error) {
	if crmURL == "" {
		return filecheck.CheckFiles(ctx, appPath, crmPath)
	}
	app, err := system.OpenReadOnly(ctx, appPath)
	if err != nil {
		return nil, filecheck.Files{}, err
	}
	snap, err := app.Snapshot(ctx)
	app.Close()
	if err != nil {
		return nil, filecheck.Files{}, err
	}
	var tasks []system.Task
	for _, r := range snap.Outbox {
		t, err := remote.TasksFor(ctx, r.Key)
		if err != nil {
			return nil, filecheck.Files{}, err
		}
		tasks = append(tasks, t...)
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].ID < tasks[j].ID })
	return filecheck.CheckReceived(ctx, appPath, crmURL, tasks, remote.Identity())
}
