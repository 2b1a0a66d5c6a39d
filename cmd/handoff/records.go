package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/system"
)

// approve records an approval in an app database, creating it if needed.
func approve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	appPath := fs.String("app", "", "app database (created if missing)")
	caseID := fs.String("case", "", "case id: 1 to 80 ASCII letters, digits or '-'")
	title := fs.String("title", "", "task title: 1 to 160 characters after trimming")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if err := required(fs, "app", "case", "title"); err != nil {
		return err
	}
	// Validate before opening, so refused input does not even create a file.
	if _, err := system.NewApproval(*caseID, *title); err != nil {
		return err
	}
	app, err := system.Open(ctx, *appPath, system.Options{})
	if err != nil {
		return err
	}
	defer app.Close()
	key, err := app.RecordApproval(ctx, *caseID, *title)
	if err != nil {
		return err
	}
	row, err := findRow(ctx, app, key)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "approved %s: outbox row %s\n", key, describeRow(row, app.MaxAttempts()))
	return nil
}

// deliver makes one delivery attempt, with an optional fault.
func deliver(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("deliver", flag.ContinueOnError)
	appPath := fs.String("app", "", "app database (must exist)")
	crmPath := fs.String("crm", "", "CRM database (created if missing)")
	fault := fs.String("fault", "", deliverFaultHelp())
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if err := required(fs, "app", "crm"); err != nil {
		return err
	}
	var kind faults.Kind
	if *fault != "" {
		k, err := parseDeliverFault(*fault)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		kind = k
	}
	if err := mustExist("app", *appPath); err != nil {
		return err
	}
	var injector faults.Injector
	app, err := system.Open(ctx, *appPath, system.Options{Hook: injector.Hook()})
	if err != nil {
		return err
	}
	defer app.Close()
	if _, err := os.Stat(*crmPath); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "creating the CRM database %s\n", *crmPath)
	}
	crm, err := system.OpenCRM(ctx, *crmPath, system.Durable)
	if err != nil {
		return err
	}
	defer crm.Close()

	injector.Arm(kind.Point())
	d, err := app.DeliverOne(ctx, faults.Network(kind, crm))
	if p := injector.Crashed(); p != "" {
		return fmt.Errorf("simulated crash at %s delivering %s: the attempt is counted (%d of %d); deliver again", p, d.Key, d.Attempts, app.MaxAttempts())
	}
	if err != nil {
		return err
	}
	switch d.Result {
	case system.Idle:
		blocked, err := countBlocked(ctx, app)
		if err != nil {
			return err
		}
		if blocked > 0 {
			fmt.Fprintf(stdout, "idle: nothing pending, but %d blocked row(s) wait for a person (handoff inspect)\n", blocked)
		} else {
			fmt.Fprintln(stdout, "idle: nothing pending")
		}
	case system.ResultSent:
		fmt.Fprintf(stdout, "sent %s: CRM task %d (attempt %d of %d)\n", d.Key, d.RemoteID, d.Attempts, app.MaxAttempts())
	case system.ResultPending:
		fmt.Fprintf(stdout, "pending %s: %s failure (attempt %d of %d); deliver again to retry with the same key\n", d.Key, d.LastError, d.Attempts, app.MaxAttempts())
	default:
		fmt.Fprintf(stdout, "blocked %s: %s after %d attempt(s); a person must reconcile this key in the CRM\n", d.Key, d.LastError, d.Attempts)
	}
	return nil
}

// mustExist refuses a database file that is not there: only approve (and
// the CRM side of deliver) may create one.
func mustExist(what, path string) error {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("the %s database %s does not exist", what, path)
		}
		return err
	}
	return nil
}

func findRow(ctx context.Context, app *system.Outbox, key string) (system.Row, error) {
	snap, err := app.Snapshot(ctx)
	if err != nil {
		return system.Row{}, err
	}
	for _, r := range snap.Outbox {
		if r.Key == key {
			return r, nil
		}
	}
	return system.Row{}, fmt.Errorf("no outbox row for %s", key)
}

func countBlocked(ctx context.Context, app *system.Outbox) (int, error) {
	snap, err := app.Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range snap.Outbox {
		if r.State == system.Blocked {
			n++
		}
	}
	return n, nil
}

// describeRow says where a row stands in words.
func describeRow(r system.Row, maxAttempts int) string {
	s := fmt.Sprintf("%s, %d of %d attempts", r.State, r.Attempts, maxAttempts)
	if r.State == system.Sent {
		s += fmt.Sprintf(", CRM task %d", r.RemoteID)
	}
	if r.LastError != "" {
		s += ", last error " + r.LastError
	}
	return s
}

// inspect shows the outbox, and the CRM's tasks when --crm is given.
func inspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	appPath := fs.String("app", "", "app database (must exist)")
	crmPath := fs.String("crm", "", "CRM database (must exist; optional)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if err := required(fs, "app"); err != nil {
		return err
	}
	if err := mustExist("app", *appPath); err != nil {
		return err
	}
	if *crmPath != "" {
		if err := mustExist("CRM", *crmPath); err != nil {
			return err
		}
	}
	app, err := system.Open(ctx, *appPath, system.Options{})
	if err != nil {
		return err
	}
	defer app.Close()
	snap, err := app.Snapshot(ctx)
	if err != nil {
		return err
	}
	var tasks []system.Task
	if *crmPath != "" {
		crm, err := system.OpenCRM(ctx, *crmPath, system.Durable)
		if err != nil {
			return err
		}
		defer crm.Close()
		if tasks, err = crm.Tasks(ctx); err != nil {
			return err
		}
	}
	if *asJSON {
		return inspectJSON(stdout, snap, tasks, *crmPath != "")
	}
	inspectText(stdout, *appPath, *crmPath, snap, tasks, app.MaxAttempts())
	return nil
}

func countStates(snap system.Snapshot) map[system.State]int {
	c := map[system.State]int{system.Pending: 0, system.Sent: 0, system.Blocked: 0}
	for _, r := range snap.Outbox {
		c[r.State]++
	}
	return c
}

func inspectText(w io.Writer, appPath, crmPath string, snap system.Snapshot, tasks []system.Task, maxAttempts int) {
	c := countStates(snap)
	fmt.Fprintf(w, "app database %s: %d pending, %d sent, %d blocked\n", appPath, c[system.Pending], c[system.Sent], c[system.Blocked])
	for _, r := range snap.Outbox {
		if r.State != system.Sent {
			fmt.Fprintf(w, "  %s %s\n", r.Key, describeRow(r, maxAttempts))
		}
	}
	if c[system.Blocked] > 0 {
		fmt.Fprintf(w, "%d blocked row(s) need a person: reconcile each key in the CRM before anything else is sent for it\n", c[system.Blocked])
	}
	if crmPath == "" {
		return
	}
	fmt.Fprintf(w, "CRM database %s: %d task(s)\n", crmPath, len(tasks))
	for _, t := range tasks {
		fmt.Fprintf(w, "  task %d %s %s\n", t.ID, t.Key, t.Payload)
	}
}

type jsonRow struct {
	Key       string  `json:"key"`
	State     string  `json:"state"`
	Attempts  int     `json:"attempts"`
	RemoteID  *int64  `json:"remote_id"`
	LastError *string `json:"last_error"`
}

type jsonTask struct {
	ID      int64  `json:"id"`
	Key     string `json:"key"`
	Payload string `json:"payload"`
}

func inspectJSON(w io.Writer, snap system.Snapshot, tasks []system.Task, withCRM bool) error {
	out := struct {
		Counts   map[system.State]int `json:"counts"`
		Outbox   []jsonRow            `json:"outbox"`
		CRMTasks []jsonTask           `json:"crm_tasks"`
	}{Counts: countStates(snap), Outbox: []jsonRow{}}
	for _, r := range snap.Outbox {
		jr := jsonRow{Key: r.Key, State: string(r.State), Attempts: r.Attempts}
		if r.RemoteID != 0 {
			id := r.RemoteID
			jr.RemoteID = &id
		}
		if r.LastError != "" {
			e := r.LastError
			jr.LastError = &e
		}
		out.Outbox = append(out.Outbox, jr)
	}
	if withCRM {
		out.CRMTasks = []jsonTask{}
		for _, t := range tasks {
			out.CRMTasks = append(out.CRMTasks, jsonTask(t))
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
