// Command handoff-sim is the harness: it explores random fault sequences
// against the handoff (explore), measures how fast it catches the fragile
// designs (designs), replays scenario files and crashes them at every
// fault point (replay, enumerate), and draws a run as a report (report).
// It is a binary apart from the product's, cmd/handoff, because it links
// rapid, and rapid the testing package: what runs in production links
// neither (see docs/architecture.md, "Two binaries").
//
// Its commands are a table (commands.go) that also makes its help: run
// handoff-sim help for the list, handoff-sim help COMMAND (or
// handoff-sim COMMAND --help) for a command's flags and what each exit
// status means for it. Each command is a file named after it
// (lanes.go for the hidden commands the lanes of explore and prove run as); the
// machinery of the table and the parsing of flags are internal/cli's,
// shared with the product's binary. explore runs its lanes in processes
// of its own with internal/lanes.
//
// Exit status, for every command: 0 done; 1 refused or failed, with one
// line on stderr; 2 usage error (a bad flag or argument, an unknown
// command, design or fault name, a number out of range), with one line on
// stderr and a pointer to the command's help. The commands that run the
// harness (explore, designs, replay, report) exit 4 when the environment
// failed rather than the design: a PostgreSQL server that took no
// connection, a full disk.
package main

import (
	"context"
	"io"
	"os"

	"github.com/outboxlab/handoff/internal/cli"
)

func main() { cli.Main(run) }

// run is main without the process: it returns the exit status. The
// hidden lane commands, which explore --parallel N and prove --parallel N
// start, speak a protocol on stdin and stdout rather than a command
// line's.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && laneCommands[args[0]] != nil {
		return runLane(ctx, args[0], args[1:], os.Stdin, stdout, stderr)
	}
	return cli.Run(ctx, args, stdout, stderr)
}
