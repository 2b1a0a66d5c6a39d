package main

import "github.com/outboxlab/handoff/internal/cli"

// The command table, in the order help lists it, and the names this
// package knows the command line's machinery by: internal/cli's, which
// the harness's binary (cmd/handoff-sim) shares.

// commandTable is the product's command table. It is registered in init
// because the help command reads it.
func commandTable() []cli.Command {
	return []cli.Command{
		{
			Name:    "demo",
			Args:    "[--dir DIR] [--json]",
			Summary: "run the lost-reply demonstration on real files",
			Done:    "the demonstration ran",
			Failed:  "the folder exists, or a database failed",
			Run:     demo,
		},
		{
			Name:    "approve",
			Args:    "--app PATH --case ID --title TEXT",
			Summary: "record an approval in an app database",
			Done:    "approved, or already approved with the same title",
			Failed:  "refused: an invalid case id or title, a key conflict, a path that is not a plain file, a file that is not an app database, or a database that is read-only, busy, full or corrupt",
			Run:     approve,
		},
		{
			Name:    "deliver",
			Args:    "--app PATH (--crm PATH [--create-crm] | --crm-url URL) [--fault KIND]",
			Summary: "make one delivery attempt from an app database to its CRM: a database file, or an HTTP receiver",
			Done:    "one attempt made, or nothing to do: sent, pending (deliver again), blocked or idle",
			Failed:  "a failure after the attempt was counted (the message says so; deliver again), a missing database, another CRM than the app delivers to, a CRM URL that does not answer GET /contract, a file of the wrong kind, or a database error",
			Run:     deliver,
		},
		{
			Name:       "work",
			Args:       "--app PATH (--crm PATH | --crm-url URL) [--workers N] [--worker NAME] [--lease D] [--send-timeout D] [--max-attempts N] [--max-age D] [--backoff-base D] [--backoff-cap D] [--until-idle] [--log-format FORMAT] [--metrics-addr HOST:PORT]",
			Summary:    "run a pool of workers that deliver from an app database to its CRM (a file or an HTTP receiver) until interrupted (or idle)",
			Details:    workDefaultsHelp(),
			Done:       "interrupted by SIGINT or SIGTERM (every delivery under way finished and was recorded), or with --until-idle nothing is pending",
			Failed:     "a missing database, another CRM than the app delivers to, a CRM URL that does not answer GET /contract, a file of the wrong kind, or a database error a worker cannot go on after",
			AtLeastOne: []string{"workers", "max-attempts"},
			Run:        work,
		},
		{
			Name:    "inspect",
			Args:    "--app PATH [--crm PATH] [--state STATE] [--limit N] [--json]",
			Summary: "show the outbox (and CRM) of real database files, read only",
			Done:    "shown, and the files are sound",
			Failed:  "a missing, unreadable or damaged database, a file of the wrong kind, or a sent row that does not name its task",
			Run:     inspect,
		},
		{
			Name:        "requeue",
			Args:        "KEY --app PATH --reason TEXT [--token-file FILE] [--retention D]",
			Summary:     "make a blocked row pending again: same key and payload, 0 attempts, eligible now",
			Operands:    keyHelp,
			Done:        "requeued; the audit log has who and why",
			Failed:      "refused, the files unchanged: no row for KEY, a row that is not blocked, a CRM that may have forgotten the key (reconcile first), or a database error",
			NonNegative: []string{"retention"},
			Run:         requeue,
		},
		{
			Name:    "retry-now",
			Args:    "--app PATH --reason TEXT [--token-file FILE]",
			Summary: "make every pending row that waits out a backoff due now, after an outage of the receiver, instead of waiting",
			Done:    "the rows that waited are due now (listed); the audit log has who and why for each",
			Failed:  "refused, the files unchanged: a missing or wrong database, or a database error",
			Run:     retryNow,
		},
		{
			Name:     "reconcile",
			Args:     "KEY --app PATH (--remote-id N | --absent) --reason TEXT [--token-file FILE]",
			Summary:  "record what a person found in the CRM for a blocked (or unleased pending) row: task N, or none",
			Operands: keyHelp,
			Done:     "reconciled; the audit log has who and why",
			Failed:   "refused, the files unchanged: no row for KEY, a sent row, a row a worker holds a live lease on, or a database error",
			Run:      reconcile,
		},
		{
			Name:        "stale",
			Args:        "--app PATH --older-than D [--json]",
			Summary:     "list the rows that need a person: every blocked row, every pending row approved more than D ago, read only",
			Done:        "nothing needs a person",
			Failed:      "a missing, unreadable or damaged database, or a file of the wrong kind",
			Attention:   "something needs a person (listed): for alerting",
			NonNegative: []string{"older-than"},
			Run:         stale,
		},
		{
			Name:        "ui",
			Args:        "--app PATH [--crm PATH | --crm-url URL] [--addr HOST:PORT] [--public-host NAME] [--token-file FILE] [--retention D] [--rows N]",
			Summary:     "serve a page for the person on call: the outbox by state, each row's history, what needs a person, and (with a token) requeue and reconcile",
			Details:     uiHelp(),
			Done:        "served until SIGINT or SIGTERM, then shut down",
			Failed:      "a missing database, another CRM than the app delivers to, a CRM URL that does not answer GET /contract, a file of the wrong kind, or the address cannot be listened on",
			AtLeastOne:  []string{"rows"},
			NonNegative: []string{"retention"},
			Run:         uiCmd,
		},
		{
			Name:    "check",
			Args:    "--app PATH [--crm PATH] [--json]",
			Summary: "check real database files, read only: integrity, schema, the CRM's identity, invariants 1 to 5",
			Done:    "the files are sound",
			Failed:  "something is wrong (listed), or a file is missing, of the wrong kind or of an older schema",
			Run:     check,
		},
		{
			Name:        "crm",
			Args:        "(init --crm PATH | serve --crm PATH [--addr HOST:PORT] [--retention D] [--metrics-addr HOST:PORT])",
			Summary:     "create a CRM database (deliver creates none unless told to), or serve one over HTTP with the Idempotency-Key contract",
			Details:     crmServeHelp(),
			Done:        "created; or served until SIGINT or SIGTERM, then shut down",
			Failed:      "the file exists (init) or does not (serve), cannot be created or opened, or the address cannot be listened on",
			NonNegative: []string{"retention"},
			Run:         crmCmd,
		},
		{
			Name:        "trial",
			Environment: true,
			Args:        "--kills N [--trials N] [--seed S] [--workers N] [--rows N] [--dir DIR] [--crm-url URL] [--backend NAME [--postgres-url URL] [--connect-wait D]] [--json]",
			Summary:     "run crm serve and work processes on real files (or the app database in PostgreSQL), SIGKILL them at moments drawn from a seed, drain, and check every invariant",
			Done:        "every trial ran, and its files kept every invariant and passed SQLite's integrity check",
			Failed:      "a violation (listed; the files are kept and named), a process that died by itself or did not stop when asked, a trial that could not run, or --dir exists",
			AtLeastOne:  []string{"trials", "workers", "rows"},
			Run:         trialCmd,
		},
		{
			Name:        "check-receiver",
			Args:        "URL [--json] [--retention D] [--timeout D]",
			Summary:     "run the Idempotency-Key receiver contract against an HTTP endpoint that claims to be idempotent (a staging CRM, an adapter)",
			Operands:    checkReceiverHelp(),
			Done:        "every clause passed",
			Failed:      "a clause failed or could not be checked (the table says which, with the evidence), or the check was interrupted",
			NonNegative: []string{"retention"},
			Positive:    []string{"timeout"},
			Run:         checkReceiver,
		},
		{
			Name:    "upgrade",
			Args:    "[--app PATH] [--crm PATH]",
			Summary: "upgrade databases an older handoff wrote to this schema, in place, each in one transaction",
			Done:    "every database given is up to date",
			Failed:  "a missing or empty database, a file of the wrong kind, or a database that is read-only, busy, full or corrupt",
			Run:     upgrade,
		},
		{
			Name:    "help",
			Args:    "[COMMAND]",
			Summary: "list the commands, or show one command's flags and exit status",
			Done:    "help shown",
			Run:     cli.Help,
		},
		{
			Name:    "version",
			Summary: "print the module version and, when the build recorded it, the VCS revision",
			Done:    "version printed",
			Run:     version,
		},
	}
}

func init() {
	cli.Register("handoff", "./cmd/handoff", "explore, replay and the harness's other commands are handoff-sim's (go run ./cmd/handoff-sim help)", commandTable())
}

// The machinery's names, as this package's commands use them.
var (
	errUsage        = cli.ErrUsage
	errAttention    = cli.ErrAttention
	parse           = cli.Parse
	required        = cli.Required
	operands        = cli.Operands
	encodeJSON      = cli.EncodeJSON
	shellWord       = cli.ShellWord
	invokedAs       = cli.InvokedAs
	isTerminal      = cli.IsTerminal
	addBackendFlags = cli.AddBackendFlags
	inSubcommand    = cli.InSubcommand
	mistypedURL     = cli.MistypedURL
)

// counts prints a map as "k v, k v" in key order (see cli.Counts).
func counts[K ~string](m map[K]int) string { return cli.Counts(m) }
