package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/outboxlab/handoff/internal/cli"
	"github.com/outboxlab/handoff/internal/lanes"
)

// exploreLane is the hidden command explore-lane (lanes.Command): one
// lane of explore --parallel N, in a process of its own, which explore
// starts from its own executable and sends its work (see lanes.Lane). It
// is no command for a person, and help does not list it. It returns the
// exit status: 0; 2 when it ran nothing, as for a usage error; 1 for any
// other error, printed.
func exploreLane(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := lanes.Lane(ctx, args, stdin, stdout)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "handoff-sim %s: %s\n", lanes.Command, cli.Message(err))
	if errors.Is(err, lanes.ErrRefused) {
		return 2
	}
	return 1
}
