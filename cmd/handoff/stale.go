package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

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
	budget, err := app.Budget(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := writeStaleJSON(stdout, shown(*appPath), *olderThan, now, rows); err != nil {
			return err
		}
	} else {
		writeStaleText(stdout, *olderThan, now, rows, max(budget, system.DefaultMaxAttempts))
	}
	if len(rows) > 0 {
		return fmt.Errorf("%w: %s, listed on stdout", errAttention, words.HowMany(len(rows), "row"))
	}
	return nil
}

// writeStaleText lists rows for a person, each row's attempts against
// budget, the attempt budget of the app database's rows.
func writeStaleText(w io.Writer, olderThan time.Duration, now time.Time, rows []system.Row, budget int) {
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
		fmt.Fprintf(w, "  %s %s, %s, %d of %d attempts, last error %s\n", system.OneLine(r.Key), r.State, ageText, r.Attempts, budget, system.OneLine(lastError))
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
