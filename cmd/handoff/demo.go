package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/outboxlab/handoff/internal/sim"
)

// demo runs the lost-reply demonstration on real files.
func demo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	dir := fs.String("dir", "demo-data", "folder to create for the two databases; it must not exist")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	d, err := sim.RunDemo(ctx, *dir)
	if err != nil {
		return err
	}
	if *asJSON {
		return encodeJSON(stdout, d)
	}
	fmt.Fprintf(stdout, "approved %s (%q); the databases are in %s\n", d.OperationKey, sim.DemoTitle, *dir)
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
