// Command handoff is the product: it lets a person approve, deliver,
// inspect, check, repair and serve real database files, and runs the
// workers (work), the receiver (crm serve) and the page for the person on
// call (ui) in production. The harness that explores, replays and
// measures the handoff is another binary, cmd/handoff-sim: this one links
// none of its packages, nor rapid, nor the testing package rapid brings
// (TestProductLinksNoHarness checks it).
//
// Its commands are a table (commands.go) that also makes its help: run
// handoff help for the list, handoff help COMMAND (or handoff COMMAND
// --help) for a command's flags and what each exit status means for it.
// Each command is a file named after it (checkreceiver.go for
// check-receiver; crm.go for crm init and crm serve); what several
// commands share is in a file named after what it is (dbfiles.go,
// crmurl.go, operatorflags.go, ...), and what the harness's binary
// shares too (the table's machinery, the parsing of flags) is
// internal/cli. The trial command runs this binary's own work and crm
// serve as processes, with internal/trial, and kills them: it ships with
// the product so that it tries the very binary that is deployed.
//
// Exit status, for every command: 0 done; 1 refused or failed, with one
// line on stderr; 2 usage error (a bad flag or argument, an unknown
// command or fault name, a number out of range), with one line on stderr
// and a pointer to the command's help. One command, stale, also exits 3
// when something needs a person, for alerting; its help says so. trial
// exits 4 when the environment failed rather than the handoff: a
// PostgreSQL server that took no connection, a full disk.
package main

import (
	"context"
	"io"

	"github.com/outboxlab/handoff/internal/cli"
)

func main() { cli.Main(run) }

// run is main without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return cli.Run(ctx, args, stdout, stderr)
}
