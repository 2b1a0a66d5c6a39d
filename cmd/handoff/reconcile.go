package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/outboxlab/handoff/system"
)

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
		budget, err := budgetOf(ctx, app)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "reconciled %s as absent from the CRM: pending, 0 of %d attempts, eligible now (by %s; %s)\n", system.OneLine(key), budget, system.OneLine(actor), budget.source())
		return nil
	}
	if err := app.Reconcile(ctx, key, *remoteID, actor, *of.reason); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "reconciled %s: sent, CRM task %d (by %s)\n", system.OneLine(key), *remoteID, system.OneLine(actor))
	return nil
}
