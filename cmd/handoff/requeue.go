package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/outboxlab/handoff/system"
)

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
	budget, err := budgetOf(ctx, app)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "requeued %s: pending, 0 of %d attempts, eligible now (by %s; %s)\n", system.OneLine(key), budget, system.OneLine(actor), budget.source())
	return nil
}
