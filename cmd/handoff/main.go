// Command handoff explores, replays and demonstrates the handoff, and lets
// a person approve, deliver, inspect and check real database files by hand.
//
// Its commands are a table (commands.go) that also makes its help: run
// handoff help for the list, handoff help COMMAND (or handoff COMMAND
// --help) for a command's flags and what each exit status means for it.
// Each command is a file named after it (checkreceiver.go for
// check-receiver; crm.go for crm init and crm serve; explorelane.go for
// the hidden command explore's lanes run as); what several commands share
// is in a file named after what it is (dbfiles.go, crmurl.go,
// operatorflags.go, backendflag.go, ...). The trial command runs its
// processes with internal/trial, explore its lanes in processes of their
// own with internal/lanes.
//
// Exit status, for every command: 0 done; 1 refused or failed, with one
// line on stderr; 2 usage error (a bad flag or argument, an unknown
// command, design or fault name, a number out of range), with one line on
// stderr and a pointer to the command's help. One command, stale, also
// exits 3 when something needs a person, for alerting; its help says so.
// The commands that run the harness (explore, designs, replay, report,
// trial) exit 4 when the environment failed rather than the design: a
// PostgreSQL server that took no connection, a full disk.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/outboxlab/handoff/internal/lanes"
	"github.com/outboxlab/handoff/internal/sim"
)

// errUsage marks a usage error: exit status 2.
var errUsage = errors.New("usage error")

// errAttention marks an answer that a person must act on: exit status 3,
// for the commands whose table entry says what 3 means.
var errAttention = errors.New("a person must look")

func main() {
	// An interrupt cancels the context: long commands stop cleanly and say
	// how far they got; a second interrupt kills the process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	name := args[0]
	if name == lanes.Command {
		return exploreLane(ctx, args[1:], os.Stdin, stdout, stderr)
	}
	if name == lanes.ProveCommand {
		return proveLane(ctx, args[1:], os.Stdin, stdout, stderr)
	}
	if name == "-h" || name == "-help" || name == "--help" {
		name, args = "help", args[:1]
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "handoff: unknown command %q\nsee handoff help\n", name)
		return 2
	}
	return c.exit(c.run(ctx, args[1:], stdout, stderr), stdout, stderr)
}

// exit prints what err says, once, and returns the exit status: 0 for
// nil or a help request (the help goes to stdout), 2 for a usage error, 3
// for errAttention from a command that documents it, 1 for anything else.
// The message is prefixed with the command's name, and its subcommand's
// when err comes from one (see inSubcommand).
func (c command) exit(err error, stdout, stderr io.Writer) int {
	var h helpRequest
	name := c.name
	if sub := (subcommandError{}); errors.As(err, &sub) {
		name += " " + sub.name
	}
	switch {
	case err == nil:
		return 0
	case errors.As(err, &h):
		if err := c.printHelp(stdout, h.fs); err != nil {
			fmt.Fprintf(stderr, "handoff %s: %v\n", name, err)
			return 1
		}
		return 0
	case errors.Is(err, errUsage):
		pointer := "handoff help " + c.name
		if c.name == "help" {
			pointer = "handoff help"
		}
		fmt.Fprintf(stderr, "handoff %s: %s\nsee %s\n", name, message(err), pointer)
		return 2
	case errors.Is(err, errAttention) && c.attention != "":
		fmt.Fprintf(stderr, "handoff %s: %s\n", name, message(err))
		return 3
	case environmental(err) && c.environment:
		fmt.Fprintf(stderr, "handoff %s: %s\n", name, message(err))
		return 4
	}
	fmt.Fprintf(stderr, "handoff %s: %s\n", name, message(err))
	return 1
}

// ownPrefixes are the prefixes of this module's packages that their
// errors start with: the command's name stands in for them.
var ownPrefixes = []string{"handoff: ", "designs: ", "crm: ", "contract: "}

// message is what err says, without errUsage's text and the package
// prefix it starts with, if it is one of this module's.
func message(err error) string {
	m := strings.TrimPrefix(err.Error(), errUsage.Error()+": ")
	for _, p := range ownPrefixes {
		m = strings.TrimPrefix(m, p)
	}
	return m
}

// subcommandError is an error of a command's subcommand (crm init, crm
// serve): exit names the subcommand after the command.
type subcommandError struct {
	name string
	err  error
}

func (e subcommandError) Error() string { return e.err.Error() }
func (e subcommandError) Unwrap() error { return e.err }

// inSubcommand returns err as an error of the subcommand name; nil, and
// any error when no subcommand was given (name is empty), as they are.
func inSubcommand(name string, err error) error {
	if err == nil || name == "" {
		return err
	}
	return subcommandError{name, err}
}

// environmental reports whether err is a failure of the environment the
// harness runs on (see sim.ErrEnvironment): a server that takes no
// connection, a full disk.
func environmental(err error) bool {
	return errors.Is(sim.Environmental(err), sim.ErrEnvironment)
}
