package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/outboxlab/handoff/internal/cli"
	"io"

	"github.com/outboxlab/handoff/internal/lanes"
)

// proveLane is the hidden command prove-lane (lanes.ProveCommand): one
// lane of prove --parallel N, in a process of its own, which prove starts
// from its own executable and sends the states to expand (see
// lanes.ProveLane). It is no command for a person, and help does not list
// it. It returns the exit status: 0; 2 when it ran nothing, as for a
// usage error; 1 for any other error, printed.
func proveLane(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := lanes.ProveLane(ctx, args, stdin, stdout)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "handoff-sim %s: %s\n", lanes.ProveCommand, cli.Message(err))
	if errors.Is(err, lanes.ErrRefused) {
		return 2
	}
	return 1
}
