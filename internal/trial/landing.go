package trial

import (
	"context"
	"strings"

	"github.com/outboxlab/handoff/system"
)

// killRecord is one SIGKILL and where it landed.
type killRecord struct {
	Trial    int    `json:"trial"`
	Kill     int    `json:"kill"`
	Target   string `json:"target"`
	Moment   string `json:"moment"`
	Landed   string `json:"landed"`
	LastLine string `json:"last_line"`
}

// Where a kill landed, as far as the files and the receiver tell.
const (
	landedIdle       = "worker, between deliveries (no row claimed)"
	landedBeforeTask = "worker, a row claimed, the CRM holding no task for it"
	landedAfterTask  = "worker, a row claimed, the CRM holding its task, the outcome not recorded (a lost reply)"
	landedServerIdle = "server, no delivery in flight"
	landedServerBusy = "server, deliveries in flight (rows claimed)"
)

// workerLanding says where the kill of the work process whose workers'
// names start with prefix landed: whether one of its workers held a row,
// and if so whether the CRM had created its task.
func workerLanding(ctx context.Context, app *system.Outbox, remote Receiver, prefix string) (string, error) {
	snap, err := app.Snapshot(ctx)
	if err != nil {
		return "", err
	}
	landed := landedIdle
	for _, r := range snap.Outbox {
		if r.State != system.Pending || !strings.HasPrefix(r.LeaseOwner, prefix) {
			continue
		}
		tasks, err := remote.TasksFor(ctx, r.Key)
		if err != nil {
			return "", err
		}
		if len(tasks) > 0 {
			return landedAfterTask, nil
		}
		landed = landedBeforeTask
	}
	return landed, nil
}

// serverLanding says, just before the server is killed, whether a
// delivery is in flight: a row some worker claimed and has not settled.
func serverLanding(ctx context.Context, app *system.Outbox) (string, error) {
	snap, err := app.Snapshot(ctx)
	if err != nil {
		return "", err
	}
	for _, r := range snap.Outbox {
		if r.State == system.Pending && r.LeaseOwner != "" {
			return landedServerBusy, nil
		}
	}
	return landedServerIdle, nil
}
