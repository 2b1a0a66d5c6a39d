package main

import (
	"context"
	"flag"
	"fmt"
	"io"

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
	row, err := app.Row(ctx, key)
	if err != nil {
		return err
	}
	budget, err := budgetOf(ctx, app)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "approved %s: outbox row %s (%s)\n", key, describeRow(row, budget), budget.source())
	return nil
}
