// Package filecheck checks real database files, reading them only: their
// integrity, kind and schema, that the app delivers to the CRM given, and
// the spec's invariants that files alone show. The product's check,
// inspect and trial commands use it, and the harness's invariant table
// reuses its invariants, so that each is written once; it imports nothing
// of the harness, which keeps the product's binary free of it.
package filecheck

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// Finding is one thing wrong with real database files: Where names the
// file, the identity or the invariant, What says what is wrong.
type Finding struct {
	Where string
	What  string
}

func (f Finding) String() string { return f.Where + ": " + f.What }

// Files is what CheckFiles read: the app database and, when a CRM path was
// given, the CRM's tasks and identity.
type Files struct {
	App      system.Snapshot
	Tasks    []system.Task
	Bound    string // the identity of the CRM the app delivers to; "" before its first delivery
	Identity string // the CRM's identity; "" without a CRM
	Budget   int    // the largest attempt budget a row may have used (see system.Outbox.Budget)
}

// CheckFiles checks the app database at appPath and, unless crmPath is
// empty, the CRM database at crmPath, reading them only: SQLite's
// integrity check of each, their kind and schema version, that the app
// delivers to this CRM, and the spec's invariants 1 to 5 as far as files show
// them (invariant 4: attempts within the budget, the largest a worker
// recorded: see system.Outbox.Budget). What it finds wrong is
// returned as findings; an error means it could not read a file at all (a
// missing file, another kind of file, an older or newer schema).
func CheckFiles(ctx context.Context, appPath, crmPath string) ([]Finding, Files, error) {
	var readTasks func(*Files) ([]Finding, error)
	if crmPath != "" {
		readTasks = func(files *Files) ([]Finding, error) { return readCRM(ctx, crmPath, files) }
	}
	return checkApp(ctx, appPath, crmPath, readTasks)
}

// CheckReceived checks the app database at appPath as CheckFiles does,
// against a CRM read another way than from its file (over HTTP, say):
// tasks are its tasks for the app's keys, identity its identity, and
// where says where it is, for the findings.
func CheckReceived(ctx context.Context, appPath, where string, tasks []system.Task, identity string) ([]Finding, Files, error) {
	return checkApp(ctx, appPath, where, func(files *Files) ([]Finding, error) {
		files.Tasks, files.Identity = tasks, identity
		return nil, nil
	})
}

// checkApp is CheckFiles with the CRM at crm read by readTasks into the
// files, or without a CRM when readTasks is nil.
func checkApp(ctx context.Context, appPath, crm string, readTasks func(*Files) ([]Finding, error)) ([]Finding, Files, error) {
	var findings []Finding
	var files Files
	app, err := system.OpenReadOnly(ctx, appPath)
	if system.IsPostgres(appPath) {
		appPath = system.Redact(appPath) // the findings show no password
	}
	if err != nil {
		return nil, files, err
	}
	defer app.Close()
	problems, err := app.Check(ctx)
	if err != nil {
		return nil, files, err
	}
	for _, p := range problems {
		findings = append(findings, Finding{appPath, "integrity: " + strings.Join(strings.Fields(p), " ")})
	}
	// A damaged file is read as far as it can be, for a person to see.
	if files.App, err = app.Snapshot(ctx); err != nil {
		findings = append(findings, Finding{appPath, "reading the rows: " + err.Error()})
	}
	if files.Bound, err = app.Receiver(ctx); err != nil {
		findings = append(findings, Finding{appPath, "reading its CRM's identity: " + err.Error()})
	}
	withCRM := readTasks != nil
	if withCRM {
		crmFindings, err := readTasks(&files)
		if err != nil {
			return nil, files, err
		}
		findings = append(findings, crmFindings...)
		withCRM = len(crmFindings) == 0
	}
	if len(findings) > 0 {
		return findings, files, nil
	}
	if withCRM && files.Bound != "" && files.Bound != files.Identity {
		findings = append(findings, Finding{"identity", fmt.Sprintf("%s delivers to CRM %s, but %s is CRM %s: its task ids name other tasks", appPath, files.Bound, crm, files.Identity)})
	}
	if files.Budget, err = app.Budget(ctx); err != nil {
		return append(findings, Finding{appPath, err.Error()}), files, nil
	}
	return append(findings, checkInvariants(Observation(files.App, files.Tasks), files.Budget, withCRM)...), files, nil
}

// readCRM reads the CRM at path into files, or says what is wrong with it.
func readCRM(ctx context.Context, path string, files *Files) ([]Finding, error) {
	crm, err := system.OpenCRMReadOnly(ctx, path)
	if err != nil {
		return nil, err
	}
	defer crm.Close()
	problems, err := crm.Check(ctx)
	if err != nil {
		return nil, err
	}
	var findings []Finding
	for _, p := range problems {
		findings = append(findings, Finding{path, "integrity: " + strings.Join(strings.Fields(p), " ")})
	}
	if len(findings) > 0 {
		return findings, nil
	}
	if files.Tasks, err = crm.Tasks(ctx); err != nil {
		return nil, err
	}
	files.Identity, err = crm.Identity(ctx)
	return nil, err
}

// checkInvariants checks the invariants of the table on o with the
// attempt budget budget: those that need the CRM's tasks only when
// withCRM. Files show no sends, so invariant 4 checks only that attempts
// stay within the budget.
func checkInvariants(o model.Observation, budget int, withCRM bool) []Finding {
	in := Input{Observation: o, Budget: budget}
	var findings []Finding
	for _, inv := range Invariants {
		if inv.NeedsTasks && !withCRM {
			continue
		}
		if detail := inv.Check(in); detail != "" {
			findings = append(findings, Finding{fmt.Sprintf("invariant %d (%s)", inv.Number, inv.Name), detail})
		}
	}
	return findings
}

// Millis is t as the model counts time: milliseconds since the Unix
// epoch, 0 for the zero time (unset).
func Millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Observation is what the model compares, and the invariants check: the
// app's approvals and rows and the CRM's tasks, in the model's terms.
func Observation(snap system.Snapshot, tasks []system.Task) model.Observation {
	var o model.Observation
	for _, a := range snap.Approvals {
		o.Approvals = append(o.Approvals, model.Approval{Key: a.Key, Payload: a.Payload})
	}
	for _, r := range snap.Outbox {
		o.Outbox = append(o.Outbox, model.Row{Key: r.Key, State: string(r.State), Attempts: r.Attempts, RemoteID: r.RemoteID, LastError: r.LastError,
			CreatedAt: Millis(r.CreatedAt), NextAttemptAt: Millis(r.NextAttemptAt), FirstClaimedAt: Millis(r.FirstClaimedAt),
			LeaseOwner: r.LeaseOwner, LeaseUntil: Millis(r.LeaseUntil), Fence: r.Fence})
	}
	for _, t := range tasks {
		o.Tasks = append(o.Tasks, model.Task{ID: t.ID, Key: t.Key, Payload: t.Payload})
	}
	return o
}
