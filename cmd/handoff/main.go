// Command handoff explores, replays and demonstrates the handoff, and lets
// a person approve, deliver and inspect real database files by hand.
//
//	handoff explore [--checks N] [--steps N] [--seed S] [--design NAME] [--save DIR] [--json]
//	handoff designs [--measure SEEDS [--json]] [NAME...]
//	handoff enumerate [FILE...]
//	handoff replay [--quiet] [FILE...]
//	handoff demo [--dir DIR] [--json]
//	handoff approve --app PATH --case ID --title TEXT
//	handoff deliver --app PATH --crm PATH [--create-crm] [--fault KIND]
//	handoff inspect --app PATH [--crm PATH] [--state S] [--limit N] [--json]
//	handoff check --app PATH [--crm PATH] [--json]
//	handoff crm init --crm PATH
//	handoff upgrade [--app PATH] [--crm PATH]
//
// Exit status: 0 done; 1 refused or failed, with one line on stderr; 2
// usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

const usage = `usage: handoff <command> [flags]

commands:
  explore   explore random fault sequences against the real handoff (the main job)
  designs   list the fragile designs the harness must catch; --measure how fast it does
  enumerate crash every corpus scenario at every fault point it passes
  replay    replay scenario files (default: the embedded corpus) and compare outputs
  demo      run the lost-reply demonstration on real files
  approve   record an approval in an app database
  deliver   make one delivery attempt from an app database to a CRM database
  inspect   show the outbox (and CRM) of real database files, read only
  check     check real database files: integrity, schema, CRM identity, invariants 1-5
  crm       crm init: create a CRM database
  upgrade   upgrade databases an older handoff wrote, in place

Run handoff <command> --help for its flags.
`

// errUsage marks a usage error: exit status 2.
var errUsage = errors.New("usage error")

// command runs one subcommand with its arguments.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

var commands = map[string]command{
	"explore":   explore,
	"designs":   designsCmd,
	"enumerate": enumerate,
	"replay":    replay,
	"demo":      demo,
	"approve":   approve,
	"deliver":   deliver,
	"inspect":   inspect,
	"check":     check,
	"crm":       crmCmd,
	"upgrade":   upgrade,
}

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
		fmt.Fprint(stderr, usage)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "handoff: unknown command %q\n%s", args[0], usage)
		return 2
	}
	err := cmd(ctx, args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "handoff %s: %v\n", args[0], err)
		return 2
	}
	// The command name stands in for this module's own package prefix.
	fmt.Fprintf(stderr, "handoff %s: %s\n", args[0], strings.TrimPrefix(err.Error(), "handoff: "))
	return 1
}

// parse parses args with fs, turning every flag problem and every
// unexpected argument into a usage error. fs prints its own message and
// defaults to stderr.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer, positional bool) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if !positional && fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

// required returns a usage error naming the flags of fs in names that
// were not given.
func required(fs *flag.FlagSet, names ...string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var missing []string
	for _, n := range names {
		if !set[n] {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s", errUsage, strings.Join(missing, ", "))
	}
	return nil
}

// counts prints a map as "k v, k v" in key order.
func counts[K ~string](m map[K]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[K(k)]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
