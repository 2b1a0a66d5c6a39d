package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

// BackendFlags are the --backend, --postgres-url and --connect-wait flags
// of the commands that run the harness or real processes on a backend
// (explore, designs, replay, report, trial): where the app database
// lives.
type BackendFlags struct {
	name, url *string
	// Wait is --connect-wait: how long a connection waits for the server.
	Wait *time.Duration
	fs   *flag.FlagSet
}

// AddBackendFlags defines the flags on fs.
func AddBackendFlags(fs *flag.FlagSet) BackendFlags {
	return BackendFlags{
		name: fs.String("backend", string(backend.SQLite), "where the app database lives: sqlite (a file per lane), or postgres (a schema per lane on --postgres-url's server, dropped at the end)"),
		url:  fs.String("postgres-url", backend.Server(), "the PostgreSQL server of --backend postgres; $"+backend.PostgresURLEnv+" sets the default"),
		Wait: fs.Duration("connect-wait", system.DefaultConnectWait, "how long a connection waits, with backoff, for a PostgreSQL server that has no connection to spare or is starting; past it the run ends with exit status 4"),
		fs:   fs,
	}
}

// Values returns the backend and the server's URL: a usage error for a
// bad flag, and for PostgreSQL an error that says why when the server
// cannot be reached, before the command makes anything, and what
// connections says the run needs of the server at that URL.
func (b BackendFlags) Values(ctx context.Context, connections func(url string) string) (backend.Backend, string, error) {
	which, err := b.Backend()
	if err != nil {
		return "", "", err
	}
	if which == backend.Postgres && !system.IsPostgres(*b.url) {
		hint := ""
		if system.MistypedURL(*b.url) {
			hint = "; it looks like a mistyped URL, missing a colon or a slash"
		}
		return "", "", fmt.Errorf("%w: %s %q is not a PostgreSQL URL (postgres://…)%s", ErrUsage, b.urlSource(), system.Redact(*b.url), hint)
	}
	if *b.Wait <= 0 {
		return "", "", fmt.Errorf("%w: --connect-wait is %v, want more than 0", ErrUsage, *b.Wait)
	}
	if which == backend.Postgres {
		// A try that starts within the wait may take a few seconds.
		ctx, cancel := context.WithTimeout(ctx, *b.Wait+5*time.Second)
		defer cancel()
		if err := system.PingPostgres(ctx, *b.url, *b.Wait); err != nil {
			if b.fromEnv() {
				err = fmt.Errorf("the server of %s: %w", backend.PostgresURLEnv, err)
			}
			return "", "", fmt.Errorf("%w; %s", err, connections(*b.url))
		}
	}
	return which, *b.url, nil
}

// fromEnv reports whether the server's URL comes from the environment's
// backend.PostgresURLEnv, --postgres-url not given: a message about it
// must name the variable, not a flag the user never passed.
func (b BackendFlags) fromEnv() bool {
	given := false
	b.fs.Visit(func(f *flag.Flag) { given = given || f.Name == "postgres-url" })
	return !given && backend.Server() != backend.LocalPostgres
}

// urlSource names where the server's URL comes from, for a message:
// --postgres-url, or the environment's variable.
func (b BackendFlags) urlSource() string {
	if b.fromEnv() {
		return backend.PostgresURLEnv
	}
	return "--postgres-url"
}

// backend is the backend --backend names, without a connection to
// anything: a usage error for a name that is none.
func (b BackendFlags) Backend() (backend.Backend, error) {
	which, err := backend.Parse(*b.name)
	if err != nil {
		return "", fmt.Errorf("%w: --backend: %s", ErrUsage, strings.TrimPrefix(err.Error(), "handoff: "))
	}
	return which, nil
}

// flags are the flags that say b again in a command line: none for the
// default backend, the server's URL only when it is not the default.
func (b BackendFlags) Flags() string {
	if *b.name == string(backend.SQLite) {
		return ""
	}
	s := " --backend " + *b.name
	if *b.url != backend.Server() {
		s += " --postgres-url " + ShellWord(system.Redact(*b.url))
	}
	if *b.Wait != system.DefaultConnectWait {
		s += " --connect-wait " + b.Wait.String()
	}
	return s
}

// ConnectionsNeeded says how many connections to the server at url a run
// of the harness in lanes lanes holds at most, and how to stay within a
// shared server's limit.
func ConnectionsNeeded(url string, lanes int) string {
	n := lanes * backend.PostgresConnections
	return fmt.Sprintf("on PostgreSQL at %s: this run holds at most %d connections (%d per lane, %s); --parallel sets the lanes",
		system.Redact(url), n, backend.PostgresConnections, words.HowMany(lanes, "lane"))
}
