package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

// keyHelp is what the help of the operator commands says about KEY.
const keyHelp = "KEY is the action key (" + system.KeyPrefix + "CASE), or just the case id: a KEY without ':' gets " + system.KeyPrefix + " put before it."

// parseKey parses the arguments of a command that takes one KEY, before,
// between or after its flags, and returns the action key: a KEY without
// ':' is a case id, and gets system.KeyPrefix.
func parseKey(fs *flag.FlagSet, args []string, stderr io.Writer) (string, error) {
	found, err := operands(fs, args, stderr)
	if err != nil {
		return "", err
	}
	switch {
	case len(found) > 1:
		return "", fmt.Errorf("%w: unexpected argument %q", errUsage, found[1])
	case len(found) == 0:
		return "", fmt.Errorf("%w: missing KEY (an action key or a case id)", errUsage)
	case !strings.Contains(found[0], ":"):
		return system.KeyPrefix + found[0], nil
	}
	return found[0], nil
}

// operatorFlags are the flags every operator action takes: the app
// database, who acts and why.
type operatorFlags struct {
	app, reason, actor *string
}

func addOperatorFlags(fs *flag.FlagSet) operatorFlags {
	return operatorFlags{
		app:    fs.String("app", "", "app database (must exist)"),
		reason: fs.String("reason", "", "why, for the audit log"),
		actor:  fs.String("actor", "", "who acts, for the audit log (default: the OS user)"),
	}
}

// check refuses missing or empty flags and returns who acts: --actor, or
// the OS user.
func (f operatorFlags) check(fs *flag.FlagSet) (string, error) {
	if err := required(fs, "app", "reason"); err != nil {
		return "", err
	}
	if strings.TrimSpace(*f.reason) == "" {
		return "", fmt.Errorf("%w: --reason is empty: say why, for the audit log", errUsage)
	}
	given := false
	fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == "actor" })
	actor := strings.TrimSpace(*f.actor)
	switch {
	case given && actor == "":
		return "", fmt.Errorf("%w: --actor is empty: say who acts", errUsage)
	case actor != "":
		return actor, nil
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	if u := os.Getenv("USER"); u != "" {
		return u, nil
	}
	return "", fmt.Errorf("%w: the OS user is unknown: say who acts with --actor", errUsage)
}

// openForOperator opens the existing app database at path for an
// operator action.
func openForOperator(ctx context.Context, path string) (*system.Outbox, error) {
	if err := appMustExist(ctx, path); err != nil {
		return nil, err
	}
	return system.Open(ctx, path, system.Options{})
}

// requeue makes a blocked row pending again, with the same key.
func requeue(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("requeue", flag.ContinueOnError)
	of := addOperatorFlags(fs)
	retention := fs.Duration("retention", 0, "how long the CRM remembers a key; 0 means forever. Past first claim + retention − send timeout, requeue refuses: reconcile first")
	key, err := parseKey(fs, args, stderr)
	if err != nil {
		return err
	}
	actor, err := of.check(fs)
	if err != nil {
		return err
	}
	app, err := openForOperator(ctx, *of.app)
	if err != nil {
		return err
	}
	defer app.Close()
	if err := app.Requeue(ctx, key, *retention, actor, *of.reason); err != nil {
		return err
	}
	budget, err := app.Budget(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "requeued %s: pending, 0 of %d attempts, eligible now (by %s)\n", system.OneLine(key), budget, system.OneLine(actor))
	return nil
}

// reconcile records what a person found in the CRM for a key.
func reconcile(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	of := addOperatorFlags(fs)
	remoteID := fs.Int64("remote-id", 0, "the CRM holds task N for this key: the row becomes sent with it")
	absent := fs.Bool("absent", false, "the CRM holds no task for this key: the row becomes pending, 0 attempts, eligible now")
	key, err := parseKey(fs, args, stderr)
	if err != nil {
		return err
	}
	actor, err := of.check(fs)
	if err != nil {
		return err
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "remote-id" })
	switch {
	case given == *absent:
		return fmt.Errorf("%w: give one of --remote-id N and --absent", errUsage)
	case given && *remoteID < 1:
		return fmt.Errorf("%w: --remote-id is %d, want a task id of 1 or more", errUsage, *remoteID)
	}
	app, err := openForOperator(ctx, *of.app)
	if err != nil {
		return err
	}
	defer app.Close()
	if *absent {
		if err := app.ReconcileAbsent(ctx, key, actor, *of.reason); err != nil {
			return err
		}
		budget, err := app.Budget(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "reconciled %s as absent from the CRM: pending, 0 of %d attempts, eligible now (by %s)\n", system.OneLine(key), budget, system.OneLine(actor))
		return nil
	}
	if err := app.Reconcile(ctx, key, *remoteID, actor, *of.reason); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "reconciled %s: sent, CRM task %d (by %s)\n", system.OneLine(key), *remoteID, system.OneLine(actor))
	return nil
}

// stale lists the rows that need a person, reading only; it returns
// errAttention when there are any.
func stale(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("stale", flag.ContinueOnError)
	appPath := fs.String("app", "", "app database (must exist)")
	olderThan := fs.Duration("older-than", 0, "list pending rows approved longer ago than this (blocked rows always)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if err := required(fs, "app", "older-than"); err != nil {
		return err
	}
	app, err := system.OpenReadOnly(ctx, *appPath)
	if err != nil {
		return err
	}
	defer app.Close()
	now := time.Now()
	rows, err := app.Stale(ctx, *olderThan)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := writeStaleJSON(stdout, shown(*appPath), *olderThan, now, rows); err != nil {
			return err
		}
	} else {
		writeStaleText(stdout, *olderThan, now, rows)
	}
	if len(rows) > 0 {
		return fmt.Errorf("%w: %s, listed on stdout", errAttention, words.HowMany(len(rows), "row"))
	}
	return nil
}

func writeStaleText(w io.Writer, olderThan time.Duration, now time.Time, rows []system.Row) {
	if len(rows) == 0 {
		fmt.Fprintf(w, "nothing needs a person: no blocked row, no pending row approved more than %v ago\n", olderThan)
		return
	}
	fmt.Fprintf(w, "%s a person (blocked, or pending and approved more than %v ago), oldest first:\n", words.Agree(len(rows), "row", "needs", "need"), olderThan)
	for _, r := range rows {
		ageText := "unknown age"
		if !r.CreatedAt.IsZero() {
			ageText = "age " + age(now.Sub(r.CreatedAt))
		}
		lastError := r.LastError
		if lastError == "" {
			lastError = "none"
		}
		fmt.Fprintf(w, "  %s %s, %s, %s, last error %s\n", system.OneLine(r.Key), r.State, ageText, words.HowMany(r.Attempts, "attempt"), system.OneLine(lastError))
	}
}

// jsonStaleRow is one row of stale's JSON.
type jsonStaleRow struct {
	Key        string   `json:"key"`
	State      string   `json:"state"`
	ApprovedAt *string  `json:"approved_at"`
	AgeSeconds *float64 `json:"age_seconds"`
	Attempts   int      `json:"attempts"`
	LastError  *string  `json:"last_error"`
	LeaseOwner *string  `json:"lease_owner"`
}

func writeStaleJSON(w io.Writer, appPath string, olderThan time.Duration, now time.Time, rows []system.Row) error {
	out := struct {
		App              string         `json:"app"`
		OlderThanSeconds float64        `json:"older_than_seconds"`
		At               *string        `json:"at"`
		NeedsPerson      bool           `json:"needs_person"`
		Rows             []jsonStaleRow `json:"rows"`
	}{App: appPath, OlderThanSeconds: olderThan.Seconds(), At: stamp(now), NeedsPerson: len(rows) > 0, Rows: []jsonStaleRow{}}
	for _, r := range rows {
		var ageSeconds *float64
		if !r.CreatedAt.IsZero() {
			a := now.Sub(r.CreatedAt).Seconds()
			ageSeconds = &a
		}
		out.Rows = append(out.Rows, jsonStaleRow{Key: r.Key, State: string(r.State), ApprovedAt: stamp(r.CreatedAt), AgeSeconds: ageSeconds,
			Attempts: r.Attempts, LastError: optional(r.LastError), LeaseOwner: optional(r.LeaseOwner)})
	}
	return encodeJSON(w, out)
}
