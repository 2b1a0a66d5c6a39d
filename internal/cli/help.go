package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// Help lists the commands, or shows the help of one.
func Help(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("help", flag.ContinueOnError)
	if err := Parse(fs, args, stderr, true); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		printUsage(stdout)
		return nil
	case 1:
	default:
		return fmt.Errorf("%w: help takes one command, got %d arguments", ErrUsage, fs.NArg())
	}
	c, ok := Lookup(fs.Arg(0))
	if !ok {
		return fmt.Errorf("%w: unknown command %q", ErrUsage, fs.Arg(0))
	}
	cfs, err := c.FlagSet(ctx)
	if err != nil {
		return err
	}
	return c.printHelp(stdout, cfs)
}
