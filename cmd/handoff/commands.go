package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// command is one entry of the command table: what help says about a
// command, the numbers parse checks for it, and the function that runs it.
type command struct {
	name    string
	args    string // what follows "handoff NAME" in its usage line
	summary string // one line for handoff help
	// operands says what the arguments that are not flags are, for the
	// command's help; empty when the usage line says enough.
	operands string
	// details is what else a person must know before running the
	// command (what its defaults add up to, what it exposes to the
	// network), for its help; empty when there is nothing.
	details string
	done    string // what exit status 0 means
	failed  string // what exit status 1 means; empty: it never exits 1
	// attention is what exit status 3 means; empty: it never exits 3.
	// Only a command whose answer can be "a person must look" (for
	// alerting) has it.
	attention string
	// environment says that the command runs the harness, and may end
	// with exit status 4, environmentExit, when what it runs on fails.
	environment bool
	// atLeastOne lists integer flags that must be 1 or more when given,
	// nonNegative duration flags that must be 0 or more, positive
	// duration flags that must be more than 0.
	atLeastOne, nonNegative, positive []string
	// run parses args with parse, so that -h and --help return a
	// helpRequest before anything else happens.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// usageExit is what exit status 2 means, for every command.
const usageExit = "usage error: a bad flag or argument, an unknown command, design or fault name, or a number out of range"

// environmentExit is what exit status 4 means, for the commands that run
// the harness: nothing was proved either way, and running again when the
// environment is mended may.
const environmentExit = "the environment failed, not the design: the PostgreSQL server took no connection within --connect-wait (it was full, starting or not running), or the disk under the run's folder is full; the message says how many connections the run needs"

// commands is the command table, in the order help lists it. It is filled
// in init because the help command reads it.
var commands []command

func init() {
	commands = []command{
		{
			name:        "explore",
			environment: true,
			args:        "[--checks N] [--steps N] [--seed S] [--design NAME] [--transport NAME] [--backend NAME [--postgres-url URL] [--connect-wait D]] [--parallel N] [--shard I/N] [--swarm=false] [--save DIR] [--report PATH] [--dir DIR] [--json]",
			summary:     "explore random fault sequences against the real handoff (the main job)",
			done:        "the real design kept every invariant, or the fragile design given with --design was caught",
			failed:      "an invariant of the real design broke (the minimal scenario is printed), the fragile design was not caught, the run was interrupted (the partial summary is printed), or the harness failed",
			atLeastOne:  []string{"checks", "steps", "parallel"},
			run:         exploreCmd,
		},
		{
			name:        "designs",
			environment: true,
			args:        "[--json] [--measure SEEDS [--backend NAME [--postgres-url URL] [--connect-wait D]]] [NAME...]",
			summary:     "list the fragile designs the harness must catch; --measure how fast it does, on either backend",
			done:        "listed, explained or measured",
			failed:      "an exploration could not run, or --measure found a fragile design " + notAsDocumented + " (found, shrunk to its documented length, and caught by its documented invariant)",
			atLeastOne:  []string{"measure"},
			run:         designsCmd,
		},
		{
			name:       "prove",
			args:       "[--depth N] [--time D] [--design NAME] [--reduce NAME] [--workers LIST] [--cases N] [--configs=false] [--parallel N] [--save DIR] [--report PATH] [--dir DIR] [--json]",
			summary:    "run every sequence of steps up to a depth against the real handoff, breadth first: a proof within the bound, or the shortest counterexample",
			done:       "no sequence up to the depth broke an invariant of the real design, or the fragile design given with --design was caught (by its shortest counterexample)",
			failed:     "an invariant of the real design broke (the shortest scenario is printed), the fragile design was not caught within the depth, the time limit or an interruption stopped the search (the summary says which depth it completed), or the harness failed",
			atLeastOne: []string{"depth", "parallel"},
			positive:   []string{"time"},
			run:        proveCmd,
		},
		{
			name:    "enumerate",
			args:    "[FILE...]",
			summary: "crash every scenario of the real design at every fault point it passes",
			done:    "every crash point kept every invariant",
			failed:  "a crash point broke an invariant, a file could not be read or parsed, or every file given is a fragile design's scenario",
			run:     enumerate,
		},
		{
			name:        "replay",
			environment: true,
			args:        "[--quiet] [--report PATH] [--transport NAME] [--backend NAME [--postgres-url URL] [--connect-wait D]] [FILE...]",
			summary:     "replay scenario files (default: the embedded corpus) and compare outputs",
			done:        "every output matches (a file of the other backend is skipped, with its reason)",
			failed:      "an output did not match, a file could not be read or parsed, or no file given can run over the transport or on the backend",
			run:         replay,
		},
		{
			name:        "report",
			environment: true,
			args:        "[--out PATH] [--transport NAME] [--backend NAME [--postgres-url URL] [--connect-wait D]] FILE",
			summary:     "replay a scenario file and write its report: an HTML page of the run as a sequence diagram, every step's state, and where the model and the system first disagreed",
			operands:    "FILE is a scenario file (corpus/fragile/no-fencing.txt, say); the report is written beside it, FILE.html for FILE.txt, unless --out names another file.",
			done:        "the report is written, whatever the scenario did (the report and a line on stdout say whether it broke an invariant)",
			failed:      "the file could not be read, parsed or run, or the report could not be written",
			run:         reportCmd,
		},
		{
			name:    "demo",
			args:    "[--dir DIR] [--json]",
			summary: "run the lost-reply demonstration on real files",
			done:    "the demonstration ran",
			failed:  "the folder exists, or a database failed",
			run:     demo,
		},
		{
			name:    "approve",
			args:    "--app PATH --case ID --title TEXT",
			summary: "record an approval in an app database",
			done:    "approved, or already approved with the same title",
			failed:  "refused: an invalid case id or title, a key conflict, a path that is not a plain file, a file that is not an app database, or a database that is read-only, busy, full or corrupt",
			run:     approve,
		},
		{
			name:    "deliver",
			args:    "--app PATH (--crm PATH [--create-crm] | --crm-url URL) [--fault KIND]",
			summary: "make one delivery attempt from an app database to its CRM: a database file, or an HTTP receiver",
			done:    "one attempt made, or nothing to do: sent, pending (deliver again), blocked or idle",
			failed:  "a failure after the attempt was counted (the message says so; deliver again), a missing database, another CRM than the app delivers to, a CRM URL that does not answer GET /contract, a file of the wrong kind, or a database error",
			run:     deliver,
		},
		{
			name:       "work",
			args:       "--app PATH (--crm PATH | --crm-url URL) [--workers N] [--worker NAME] [--lease D] [--send-timeout D] [--max-attempts N] [--max-age D] [--backoff-base D] [--backoff-cap D] [--until-idle] [--log-format FORMAT] [--metrics-addr HOST:PORT]",
			summary:    "run a pool of workers that deliver from an app database to its CRM (a file or an HTTP receiver) until interrupted (or idle)",
			details:    workDefaultsHelp(),
			done:       "interrupted by SIGINT or SIGTERM (every delivery under way finished and was recorded), or with --until-idle nothing is pending",
			failed:     "a missing database, another CRM than the app delivers to, a CRM URL that does not answer GET /contract, a file of the wrong kind, or a database error a worker cannot go on after",
			atLeastOne: []string{"workers", "max-attempts"},
			run:        work,
		},
		{
			name:    "inspect",
			args:    "--app PATH [--crm PATH] [--state STATE] [--limit N] [--json]",
			summary: "show the outbox (and CRM) of real database files, read only",
			done:    "shown, and the files are sound",
			failed:  "a missing, unreadable or damaged database, a file of the wrong kind, or a sent row that does not name its task",
			run:     inspect,
		},
		{
			name:        "requeue",
			args:        "KEY --app PATH --reason TEXT [--actor NAME] [--retention D]",
			summary:     "make a blocked row pending again: same key and payload, 0 attempts, eligible now",
			operands:    keyHelp,
			done:        "requeued; the audit log has who and why",
			failed:      "refused, the files unchanged: no row for KEY, a row that is not blocked, a CRM that may have forgotten the key (reconcile first), or a database error",
			nonNegative: []string{"retention"},
			run:         requeue,
		},
		{
			name:     "reconcile",
			args:     "KEY --app PATH (--remote-id N | --absent) --reason TEXT [--actor NAME]",
			summary:  "record what a person found in the CRM for a blocked (or unleased pending) row: task N, or none",
			operands: keyHelp,
			done:     "reconciled; the audit log has who and why",
			failed:   "refused, the files unchanged: no row for KEY, a sent row, a row a worker holds a live lease on, or a database error",
			run:      reconcile,
		},
		{
			name:        "stale",
			args:        "--app PATH --older-than D [--json]",
			summary:     "list the rows that need a person: every blocked row, every pending row approved more than D ago, read only",
			done:        "nothing needs a person",
			failed:      "a missing, unreadable or damaged database, or a file of the wrong kind",
			attention:   "something needs a person (listed): for alerting",
			nonNegative: []string{"older-than"},
			run:         stale,
		},
		{
			name:        "ui",
			args:        "--app PATH [--crm PATH | --crm-url URL] [--addr HOST:PORT] [--token-file FILE] [--retention D] [--rows N]",
			summary:     "serve a page for the person on call: the outbox by state, each row's history, what needs a person, and (with a token) requeue and reconcile",
			details:     uiHelp(),
			done:        "served until SIGINT or SIGTERM, then shut down",
			failed:      "a missing database, another CRM than the app delivers to, a CRM URL that does not answer GET /contract, a file of the wrong kind, or the address cannot be listened on",
			atLeastOne:  []string{"rows"},
			nonNegative: []string{"retention"},
			run:         uiCmd,
		},
		{
			name:    "check",
			args:    "--app PATH [--crm PATH] [--json]",
			summary: "check real database files, read only: integrity, schema, the CRM's identity, invariants 1 to 5",
			done:    "the files are sound",
			failed:  "something is wrong (listed), or a file is missing, of the wrong kind or of an older schema",
			run:     check,
		},
		{
			name:        "crm",
			args:        "(init --crm PATH | serve --crm PATH [--addr HOST:PORT] [--retention D] [--metrics-addr HOST:PORT])",
			summary:     "create a CRM database (deliver creates none unless told to), or serve one over HTTP with the Idempotency-Key contract",
			details:     crmServeHelp(),
			done:        "created; or served until SIGINT or SIGTERM, then shut down",
			failed:      "the file exists (init) or does not (serve), cannot be created or opened, or the address cannot be listened on",
			nonNegative: []string{"retention"},
			run:         crmCmd,
		},
		{
			name:        "trial",
			environment: true,
			args:        "--kills N [--trials N] [--seed S] [--workers N] [--rows N] [--dir DIR] [--crm-url URL] [--backend NAME [--postgres-url URL] [--connect-wait D]] [--json]",
			summary:     "run crm serve and work processes on real files (or the app database in PostgreSQL), SIGKILL them at moments drawn from a seed, drain, and check every invariant",
			done:        "every trial ran, and its files kept every invariant and passed SQLite's integrity check",
			failed:      "a violation (listed; the files are kept and named), a process that died by itself or did not stop when asked, a trial that could not run, or --dir exists",
			atLeastOne:  []string{"trials", "workers", "rows"},
			run:         trialCmd,
		},
		{
			name:        "check-receiver",
			args:        "URL [--json] [--retention D] [--timeout D]",
			summary:     "run the Idempotency-Key receiver contract against an HTTP endpoint that claims to be idempotent (a staging CRM, an adapter)",
			operands:    checkReceiverHelp(),
			done:        "every clause passed",
			failed:      "a clause failed or could not be checked (the table says which, with the evidence), or the check was interrupted",
			nonNegative: []string{"retention"},
			positive:    []string{"timeout"},
			run:         checkReceiver,
		},
		{
			name:    "upgrade",
			args:    "[--app PATH] [--crm PATH]",
			summary: "upgrade databases an older handoff wrote to this schema, in place, each in one transaction",
			done:    "every database given is up to date",
			failed:  "a missing or empty database, a file of the wrong kind, or a database that is read-only, busy, full or corrupt",
			run:     upgrade,
		},
		{
			name:    "help",
			args:    "[COMMAND]",
			summary: "list the commands, or show one command's flags and exit status",
			done:    "help shown",
			run:     helpCmd,
		},
		{
			name:    "version",
			summary: "print the module version and, when the build recorded it, the VCS revision",
			done:    "version printed",
			run:     version,
		},
	}
}

// lookup returns the command called name.
func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usageLine is "handoff NAME ARGS".
func (c command) usageLine() string {
	return strings.TrimSpace("handoff " + c.name + " " + c.args)
}

// helpRequest is the error parse returns for -h or --help: run prints the
// help of the command from its flag set, to stdout, and exits 0.
type helpRequest struct{ fs *flag.FlagSet }

func (helpRequest) Error() string { return flag.ErrHelp.Error() }
func (helpRequest) Unwrap() error { return flag.ErrHelp }

// flagSet returns the flag set of c, as its run function defines it, by
// asking it for help.
func (c command) flagSet(ctx context.Context) (*flag.FlagSet, error) {
	var h helpRequest
	if err := c.run(ctx, []string{"-h"}, io.Discard, io.Discard); !errors.As(err, &h) {
		return nil, fmt.Errorf("%s -h did not ask for help: %v", c.name, err)
	}
	return h.fs, nil
}

// placeholder matches "--name WORD" in a usage line.
var placeholder = regexp.MustCompile(`--([a-z][a-z-]*) ([A-Z]+(?:[/:][A-Z]+)*)`)

// printHelp writes the help of c: its usage line, summary, flags (with the
// placeholders of the usage line) and what each exit status means.
func (c command) printHelp(w io.Writer, fs *flag.FlagSet) error {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", c.usageLine(), c.summary)
	if c.operands != "" {
		fmt.Fprintf(w, "\n%s\n", c.operands)
	}
	if c.details != "" {
		fmt.Fprintf(w, "\n%s\n", wrap(c.details, helpWidth))
	}
	words := map[string]string{}
	for _, m := range placeholder.FindAllStringSubmatch(c.args, -1) {
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
	fmt.Fprintf(tw, "\nexit status:\n  0\t%s\n", c.done)
	if c.failed != "" {
		fmt.Fprintf(tw, "  1\t%s\n", c.failed)
	}
	fmt.Fprintf(tw, "  2\t%s\n", usageExit)
	if c.attention != "" {
		fmt.Fprintf(tw, "  3\t%s\n", c.attention)
	}
	if c.environment {
		fmt.Fprintf(tw, "  4\t%s\n", environmentExit)
	}
	return tw.Flush()
}

// checkNumbers returns a usage error for an atLeastOne flag of c given a
// number below 1, a nonNegative flag given a negative duration, or a
// positive flag given one that is not more than 0.
func (c command) checkNumbers(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	value := func(name string) string {
		f := fs.Lookup(name)
		if f == nil {
			panic(fmt.Sprintf("the command table names --%s, which %s does not define", name, c.name))
		}
		return f.Value.String()
	}
	for _, name := range c.atLeastOne {
		if n, err := strconv.ParseInt(value(name), 10, 64); given[name] && err == nil && n < 1 {
			return fmt.Errorf("%w: --%s is %d, want 1 or more", errUsage, name, n)
		}
	}
	for _, name := range c.nonNegative {
		if d, err := time.ParseDuration(value(name)); given[name] && err == nil && d < 0 {
			return fmt.Errorf("%w: --%s is %v, want 0 or more", errUsage, name, d)
		}
	}
	for _, name := range c.positive {
		if d, err := time.ParseDuration(value(name)); given[name] && err == nil && d <= 0 {
			return fmt.Errorf("%w: --%s is %v, want more than 0", errUsage, name, d)
		}
	}
	return nil
}

// printUsage writes the list of commands and the exit-status rule.
func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: handoff <command> [flags] [arguments]\n\ncommands:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprintln(w, `
exit status: 0 done; 1 refused or failed, with one line on stderr; 2 usage
error; 3 (stale only) something needs a person. handoff help COMMAND (or
handoff COMMAND --help) shows a command's flags and what each exit status
means for it.`)
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
