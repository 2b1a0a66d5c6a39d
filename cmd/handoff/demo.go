package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/system"
)

// demo runs the lost-reply demonstration of SPEC on real files: an
// approval whose first delivery loses the CRM's reply after the CRM made
// the task, then the retry with the same key, which the CRM answers with
// the same task, then a run with nothing left to do.
func demo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	dir := fs.String("dir", "demo-data", "folder to create for the two databases; it must not exist")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if err := mistypedURL("dir", *dir); err != nil {
		return err
	}
	d, err := runDemo(ctx, *dir)
	if err != nil {
		return err
	}
	if *asJSON {
		return encodeJSON(stdout, d)
	}
	fmt.Fprintf(stdout, "approved %s (%q); the databases are in %s\n", d.OperationKey, demoTitle, *dir)
	fmt.Fprintf(stdout, "network calls: %d (the CRM is a local SQLite file)\n\n", d.NetworkCalls)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "step\tworker result\tCRM tasks\tattempts\tremote id")
	for _, s := range d.Steps {
		remote := "none"
		if s.RemoteID != nil {
			remote = fmt.Sprint(*s.RemoteID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", s.Step, s.Result, s.CRMTaskCount, s.Attempts, remote)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "\nThe reply was lost after the CRM created task 1; the retry sent the same key and the CRM answered with task 1 again.")
	return nil
}

// demoCase and demoTitle are the approval of the demonstration.
const (
	demoCase  = "case-104"
	demoTitle = "Call about the approved repair plan"
)

// lostReply is the lost-reply demonstration of SPEC run on real files.
type lostReply struct {
	OperationKey string     `json:"operation_key"`
	NetworkCalls int        `json:"network_calls"` // the receiver is a local file: always 0
	Steps        []demoStep `json:"steps"`
}

// demoStep is one row of the demonstration's table.
type demoStep struct {
	Step         string `json:"step"`
	Result       string `json:"result"`
	CRMTaskCount int    `json:"crm_task_count"`
	Attempts     int    `json:"attempts"`
	RemoteID     *int64 `json:"remote_id"` // nil while no task id is recorded
}

// errDemoDirExists is returned by runDemo when its folder already
// exists: the demonstration starts from nothing and never touches
// existing files.
var errDemoDirExists = errors.New("handoff: demo folder already exists")

// runDemo creates dir, approves demoCase in app.db with the durable
// default, and delivers it three times to the receiver in crm.db: once
// losing the reply after the receiver committed, then twice healthy.
func runDemo(ctx context.Context, dir string) (lostReply, error) {
	if dir == "" {
		return lostReply{}, fmt.Errorf("%w: the demo folder is empty", system.ErrInvalidInput)
	}
	// Refuse a folder whose database paths SQLite would misread before
	// creating anything.
	if err := system.CheckPath(filepath.Join(dir, "app.db")); err != nil {
		return lostReply{}, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return lostReply{}, fmt.Errorf("handoff: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return lostReply{}, fmt.Errorf("%w: %s (remove it or choose another with --dir)", errDemoDirExists, dir)
		}
		return lostReply{}, fmt.Errorf("handoff: %w", err)
	}
	app, err := system.Open(ctx, filepath.Join(dir, "app.db"), system.Options{NoBackoff: true})
	if err != nil {
		return lostReply{}, err
	}
	defer app.Close()
	crm, err := system.OpenCRM(ctx, filepath.Join(dir, "crm.db"), system.Durable)
	if err != nil {
		return lostReply{}, err
	}
	defer crm.Close()

	key, err := app.RecordApproval(ctx, demoCase, demoTitle)
	if err != nil {
		return lostReply{}, err
	}
	demo := lostReply{OperationKey: key}
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
			return lostReply{}, err
		}
		snap, err := app.Snapshot(ctx)
		if err != nil {
			return lostReply{}, err
		}
		tasks, err := crm.Tasks(ctx)
		if err != nil {
			return lostReply{}, err
		}
		row := snap.Outbox[0]
		step := demoStep{Step: s.name, Result: string(d.Result), CRMTaskCount: len(tasks), Attempts: row.Attempts}
		if row.RemoteID != 0 {
			id := row.RemoteID
			step.RemoteID = &id
		}
		demo.Steps = append(demo.Steps, step)
	}
	return demo, nil
}
