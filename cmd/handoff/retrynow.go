package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

// retryNow makes every pending row that waits out a backoff due now: after
// an outage of the receiver, the person on call need not wait for it.
func retryNow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("retry-now", flag.ContinueOnError)
	of := addOperatorFlags(fs)
	if err := parse(fs, args, stderr, false); err != nil {
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
	keys, err := app.RetryNow(ctx, actor, *of.reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "retry-now: %s due now (by %s)\n", words.HowMany(len(keys), "waiting row"), system.OneLine(actor))
	for _, k := range keys {
		fmt.Fprintf(stdout, "  %s\n", system.OneLine(k))
	}
	return nil
}
