package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/system"
)

// DemoCase and DemoTitle are the approval of the lost-reply demonstration.
const (
	DemoCase  = "case-104"
	DemoTitle = "Call about the approved repair plan"
)

// Demo is the lost-reply demonstration of the spec run on real files.
type Demo struct {
	OperationKey string     `json:"operation_key"`
	NetworkCalls int        `json:"network_calls"` // the receiver is a local file: always 0
	Steps        []DemoStep `json:"steps"`
}

// DemoStep is one row of the demonstration's table.
type DemoStep struct {
	Step         string `json:"step"`
	Result       string `json:"result"`
	CRMTaskCount int    `json:"crm_task_count"`
	Attempts     int    `json:"attempts"`
	RemoteID     *int64 `json:"remote_id"` // nil while no task id is recorded
}

// ErrDirExists is returned by RunDemo when its folder already exists: the
// demonstration starts from nothing and never touches existing files.
var ErrDirExists = errors.New("handoff: demo folder already exists")

// RunDemo creates dir, approves DemoCase in app.db with the durable
// default, and delivers it three times to the receiver in crm.db: once
// losing the reply after the receiver committed, then twice healthy.
func RunDemo(ctx context.Context, dir string) (Demo, error) {
	if dir == "" {
		return Demo{}, fmt.Errorf("%w: the demo folder is empty", system.ErrInvalidInput)
	}
	// Refuse a folder whose database paths SQLite would misread before
	// creating anything.
	if err := system.CheckPath(filepath.Join(dir, "app.db")); err != nil {
		return Demo{}, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return Demo{}, fmt.Errorf("handoff: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return Demo{}, fmt.Errorf("%w: %s (remove it or choose another with --dir)", ErrDirExists, dir)
		}
		return Demo{}, fmt.Errorf("handoff: %w", err)
	}
	app, err := system.Open(ctx, filepath.Join(dir, "app.db"), system.Options{NoBackoff: true})
	if err != nil {
		return Demo{}, err
	}
	defer app.Close()
	crm, err := system.OpenCRM(ctx, filepath.Join(dir, "crm.db"), system.Durable)
	if err != nil {
		return Demo{}, err
	}
	defer crm.Close()

	key, err := app.RecordApproval(ctx, DemoCase, DemoTitle)
	if err != nil {
		return Demo{}, err
	}
	demo := Demo{OperationKey: key}
	for _, s := range []struct {
		name    string
		network faults.Kind
	}{
		{"reply_lost", faults.LostReply},
		{"retry_same_action", ""},
		{"run_again", ""},
	} {
		d, err := app.DeliverOne(ctx, faults.Network(s.network, crm))
		if err != nil {
			return Demo{}, err
		}
		snap, err := app.Snapshot(ctx)
		if err != nil {
			return Demo{}, err
		}
		tasks, err := crm.Tasks(ctx)
		if err != nil {
			return Demo{}, err
		}
		row := snap.Outbox[0]
		step := DemoStep{Step: s.name, Result: string(d.Result), CRMTaskCount: len(tasks), Attempts: row.Attempts}
		if row.RemoteID != 0 {
			id := row.RemoteID
			step.RemoteID = &id
		}
		demo.Steps = append(demo.Steps, step)
	}
	return demo, nil
}
