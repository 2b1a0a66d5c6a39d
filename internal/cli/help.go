package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// helpCmd lists the commands, or shows the help of one.
func helpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("help", flag.ContinueOnError)
	if err := parse(fs, args, stderr, true); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		printUsage(stdout)
		return nil
	case 1:
	default:
		return fmt.Errorf("%w: help takes one command, got %d arguments", errUsage, fs.NArg())
	}
	c, ok := lookup(fs.Arg(0))
	if !ok {
		return fmt.Errorf("%w: unknown command %q", errUsage, fs.Arg(0))
	}
	cfs, err := c.flagSet(ctx)
	if err != nil {
		return err
	}
	return c.printHelp(stdout, cfs)
}
