// Package cli is the command line's machinery, shared by the product's
// binary (cmd/handoff) and the harness's (cmd/handoff-sim): a program's
// command table and its help, the parsing of flags, and the exit statuses.
// It lives apart from both so that the product's binary links none of the
// harness (rapid, and the testing package rapid brings).
//
// Exit status, for every command of either program: 0 done; 1 refused or
// failed, with one line on stderr; 2 usage error (a bad flag or argument,
// an unknown command, design or fault name, a number out of range), with
// one line on stderr and a pointer to the command's help. A command whose
// table entry says so also exits 3 when something needs a person (for
// alerting), and the commands that run the harness exit 4 when the
// environment failed rather than the design: a PostgreSQL server that
// took no connection, a full disk.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/system"
)

// ErrUsage marks a usage error: exit status 2.
var ErrUsage = errors.New("usage error")

// ErrAttention marks an answer that a person must act on: exit status 3,
// for the commands whose table entry says what 3 means.
var ErrAttention = errors.New("a person must look")

// Command is one entry of a program's command table: what help says about
// a command, the numbers Parse checks for it, and the function that runs
// it.
type Command struct {
	Name    string
	Args    string // what follows "PROGRAM NAME" in its usage line
	Summary string // one line for the program's help
	// Operands says what the arguments that are not flags are, for the
	// command's help; empty when the usage line says enough.
	Operands string
	// Details is what else a person must know before running the
	// command (what its defaults add up to, what it exposes to the
	// network), for its help; empty when there is nothing.
	Details string
	Done    string // what exit status 0 means
	Failed  string // what exit status 1 means; empty: it never exits 1
	// Attention is what exit status 3 means; empty: it never exits 3.
	// Only a command whose answer can be "a person must look" (for
	// alerting) has it.
	Attention string
	// Environment says that the command runs the harness, and may end
	// with exit status 4, environmentExit, when what it runs on fails.
	Environment bool
	// AtLeastOne lists integer flags that must be 1 or more when given,
	// NonNegative duration flags that must be 0 or more, Positive
	// duration flags that must be more than 0.
	AtLeastOne, NonNegative, Positive []string
	// Run parses args with Parse, so that -h and --help return a help
	// request before anything else happens.
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// UsageExit is what exit status 2 means, for every command.
const UsageExit = "usage error: a bad flag or argument, an unknown command, design or fault name, a number out of range, an input file that does not exist, or a value that looks like a mistyped URL (postgres//…)"

// environmentExit is what exit status 4 means, for the commands that run
// the harness: nothing was proved either way, and running again when the
// environment is mended may.
const environmentExit = "the environment failed, not the design: the PostgreSQL server took no connection within --connect-wait (it was full, starting or not running), or the disk under the run's folder is full; the message says how many connections the run needs"

// program is the binary's: its name, how go run runs it, its command
// table, in the order help lists it, and where the other binary's
// commands are (see Register).
var program struct {
	name, dir, elsewhere string
	commands             []Command
}

// Register makes commands the command table of the program called name,
// which go run runs as "go run DIR"; elsewhere tells a person who gives a
// command it does not have where the other binary's commands are. A
// binary registers once, in its package's init, before anything runs; the
// help command of the table is Help.
func Register(name, dir, elsewhere string, commands []Command) {
	program.name, program.dir, program.elsewhere, program.commands = name, dir, elsewhere, commands
}

// Commands is the registered command table, in the order help lists it.
func Commands() []Command { return program.commands }

// Lookup returns the command called name.
func Lookup(name string) (Command, bool) {
	for _, c := range program.commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// Main is a command line's main: it runs run on the process's arguments
// and exits with its status. An interrupt or SIGTERM cancels the
// context, so that long commands stop cleanly and say how far they got;
// a second one kills the process.
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop) // the signals' default again: a second one kills
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run runs the command line args and returns the exit status.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	name := args[0]
	if name == "-h" || name == "-help" || name == "--help" {
		name, args = "help", args[:1]
	}
	c, ok := Lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q\nsee %s help; %s\n", program.name, name, program.name, program.elsewhere)
		return 2
	}
	return c.Exit(c.Run(ctx, args[1:], stdout, stderr), stdout, stderr)
}

// Exit prints what err says, once, and returns the exit status: 0 for
// nil or a help request (the help goes to stdout), 2 for a usage error, 3
// for ErrAttention from a command that documents it, 4 for a failure of
// the environment from a command that runs the harness, 1 for anything
// else (a database path that names no database, system.ErrBadPath, is a
// usage error). The message is prefixed with the command's name, and its
// subcommand's when err comes from one (see InSubcommand).
func (c Command) Exit(err error, stdout, stderr io.Writer) int {
	var h helpRequest
	name := program.name + " " + c.Name
	if sub := (subcommandError{}); errors.As(err, &sub) {
		name += " " + sub.name
	}
	switch {
	case err == nil:
		return 0
	case errors.As(err, &h):
		if err := c.printHelp(stdout, h.fs); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
		return 0
	case errors.Is(err, ErrUsage) || errors.Is(err, system.ErrBadPath):
		pointer := program.name + " help " + c.Name
		if c.Name == "help" {
			pointer = program.name + " help"
		}
		fmt.Fprintf(stderr, "%s: %s\nsee %s\n", name, Message(err), pointer)
		return 2
	case errors.Is(err, ErrAttention) && c.Attention != "":
		fmt.Fprintf(stderr, "%s: %s\n", name, Message(err))
		return 3
	case Environmental(err) && c.Environment:
		fmt.Fprintf(stderr, "%s: %s\n", name, Message(err))
		return 4
	}
	fmt.Fprintf(stderr, "%s: %s\n", name, Message(err))
	return 1
}

// ownPrefixes are the prefixes of this module's packages that their
// errors start with: the command's name stands in for them.
var ownPrefixes = []string{"handoff: ", "designs: ", "crm: ", "contract: "}

// Message is what err says, without ErrUsage's text and the package
// prefix it starts with, if it is one of this module's.
func Message(err error) string {
	m := strings.TrimPrefix(err.Error(), ErrUsage.Error()+": ")
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

// InSubcommand returns err as an error of the subcommand name; nil, and
// any error when no subcommand was given (name is empty), as they are.
func InSubcommand(name string, err error) error {
	if err == nil || name == "" {
		return err
	}
	return subcommandError{name, err}
}

// Environmental reports whether err is a failure of the environment the
// harness runs on (see backend.ErrEnvironment): a server that takes no
// connection, a full disk.
func Environmental(err error) bool {
	return errors.Is(backend.Environmental(err), backend.ErrEnvironment)
}

// UsageLine is "PROGRAM NAME ARGS".
func (c Command) UsageLine() string {
	return strings.TrimSpace(program.name + " " + c.Name + " " + c.Args)
}

// helpRequest is the error Parse returns for -h or --help: Run prints the
// help of the command from its flag set, to stdout, and exits 0.
type helpRequest struct{ fs *flag.FlagSet }

func (helpRequest) Error() string { return flag.ErrHelp.Error() }
func (helpRequest) Unwrap() error { return flag.ErrHelp }

// FlagSet returns the flag set of c, as its run function defines it, by
// asking it for help.
func (c Command) FlagSet(ctx context.Context) (*flag.FlagSet, error) {
	var h helpRequest
	if err := c.Run(ctx, []string{"-h"}, io.Discard, io.Discard); !errors.As(err, &h) {
		return nil, fmt.Errorf("%s -h did not ask for help: %v", c.Name, err)
	}
	return h.fs, nil
}

// placeholder matches "--name WORD" in a usage line.
var placeholder = regexp.MustCompile(`--([a-z][a-z-]*) ([A-Z]+(?:[/:][A-Z]+)*)`)

// printHelp writes the help of c: its usage line, summary, flags (with the
// placeholders of the usage line) and what each exit status means.
func (c Command) printHelp(w io.Writer, fs *flag.FlagSet) error {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", c.UsageLine(), c.Summary)
	if c.Operands != "" {
		fmt.Fprintf(w, "\n%s\n", c.Operands)
	}
	if c.Details != "" {
		fmt.Fprintf(w, "\n%s\n", wrap(c.Details, helpWidth))
	}
	words := map[string]string{}
	for _, m := range placeholder.FindAllStringSubmatch(c.Args, -1) {
		words[m[1]] = m[2]
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "\nflags:\n"
	fs.VisitAll(func(f *flag.Flag) {
		fmt.Fprint(tw, header)
		header = ""
		name := "--" + f.Name
		if word := words[f.Name]; word != "" {
			name += " " + word
		}
		// A flag whose usage says what its default is (one that depends
		// on the machine or the run) is not given its value.
		usage := f.Usage
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "false" && !strings.Contains(usage, "(default") {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	})
	fmt.Fprintf(tw, "\nexit status:\n  0\t%s\n", c.Done)
	if c.Failed != "" {
		fmt.Fprintf(tw, "  1\t%s\n", c.Failed)
	}
	fmt.Fprintf(tw, "  2\t%s\n", UsageExit)
	if c.Attention != "" {
		fmt.Fprintf(tw, "  3\t%s\n", c.Attention)
	}
	if c.Environment {
		fmt.Fprintf(tw, "  4\t%s\n", environmentExit)
	}
	return tw.Flush()
}

// checkNumbers returns a usage error for an AtLeastOne flag of c given a
// number below 1, a NonNegative flag given a negative duration, or a
// Positive flag given one that is not more than 0.
func (c Command) checkNumbers(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	value := func(name string) string {
		f := fs.Lookup(name)
		if f == nil {
			panic(fmt.Sprintf("the command table names --%s, which %s does not define", name, c.Name))
		}
		return f.Value.String()
	}
	for _, name := range c.AtLeastOne {
		if n, err := strconv.ParseInt(value(name), 10, 64); given[name] && err == nil && n < 1 {
			return fmt.Errorf("%w: --%s is %d, want 1 or more", ErrUsage, name, n)
		}
	}
	for _, name := range c.NonNegative {
		if d, err := time.ParseDuration(value(name)); given[name] && err == nil && d < 0 {
			return fmt.Errorf("%w: --%s is %v, want 0 or more", ErrUsage, name, d)
		}
	}
	for _, name := range c.Positive {
		if d, err := time.ParseDuration(value(name)); given[name] && err == nil && d <= 0 {
			return fmt.Errorf("%w: --%s is %v, want more than 0", ErrUsage, name, d)
		}
	}
	return nil
}

// printUsage writes the list of commands and the exit-status rule.
func printUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s <command> [flags] [arguments]\n\ncommands:\n", program.name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var attention, environment []string
	for _, c := range program.commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.Name, c.Summary)
		if c.Attention != "" {
			attention = append(attention, c.Name)
		}
		if c.Environment {
			environment = append(environment, c.Name)
		}
	}
	tw.Flush()
	rule := "exit status: 0 done; 1 refused or failed, with one line on stderr; 2 usage error"
	if len(attention) > 0 {
		rule += fmt.Sprintf("; 3 (%s only) something needs a person", strings.Join(attention, ", "))
	}
	if len(environment) > 0 {
		rule += fmt.Sprintf("; 4 (%s) the environment failed, not the design", strings.Join(environment, ", "))
	}
	rule += fmt.Sprintf(". %s help COMMAND (or %s COMMAND --help) shows a command's flags and what each exit status means for it.", program.name, program.name)
	fmt.Fprintf(w, "\n%s\n", wrap(rule, 74))
}

// helpWidth is the width help wraps its paragraphs to.
const helpWidth = 100

// wrap breaks text into lines of at most width characters, between words.
func wrap(text string, width int) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(text) {
		switch {
		case i == 0:
		case line+1+len(word) > width:
			b.WriteByte('\n')
			line = 0
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}
