package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/outboxlab/handoff/internal/cli"
	"github.com/outboxlab/handoff/internal/lanes"
)

// laneCommands are the hidden lane commands, by name: one lane of explore
// --parallel N (lanes.Lane) or prove --parallel N (lanes.ProveLane), in a
// process of its own, which the command starts from its own executable
// and sends its work on stdin. They are no commands for a person, and help
// does not list them.
var laneCommands = map[string]func(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error{
	lanes.Command:      lanes.Lane,
	lanes.ProveCommand: lanes.ProveLane,
}

// runLane runs the lane command name and returns the exit status: 0; 2
// when it ran nothing, as for a usage error; 1 for any other error,
// printed.
func runLane(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := laneCommands[name](ctx, args, stdin, stdout)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "handoff-sim %s: %s\n", name, cli.Message(err))
	if errors.Is(err, lanes.ErrRefused) {
		return 2
	}
	return 1
}
