package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/system"
)

// backendFlags are the --backend and --postgres-url flags of the commands
// that run the harness (explore, replay): where the simulated app
// database lives.
type backendFlags struct {
	name, url *string
}

// addBackendFlags defines the flags on fs.
func addBackendFlags(fs *flag.FlagSet) backendFlags {
	return backendFlags{
		name: fs.String("backend", string(backend.SQLite), "where the app database lives: sqlite (a file per lane), or postgres (a schema per lane on --postgres-url's server, dropped at the end)"),
		url:  fs.String("postgres-url", backend.Server(), "the PostgreSQL server of --backend postgres; $"+backend.PostgresURLEnv+" sets the default"),
	}
}

// values returns the backend and the server's URL: a usage error for a
// bad flag, and for PostgreSQL an error that says why when the server
// cannot be reached, before the command makes anything.
func (b backendFlags) values(ctx context.Context) (backend.Backend, string, error) {
	which, err := backend.Parse(*b.name)
	if err != nil {
		return "", "", fmt.Errorf("%w: --backend: %s", errUsage, strings.TrimPrefix(err.Error(), "handoff: "))
	}
	if which == backend.Postgres && !system.IsPostgres(*b.url) {
		return "", "", fmt.Errorf("%w: --postgres-url %q is not a PostgreSQL URL (postgres://…)", errUsage, system.Redact(*b.url))
	}
	if which == backend.Postgres {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := system.PingPostgres(ctx, *b.url); err != nil {
			return "", "", err
		}
	}
	return which, *b.url, nil
}

// flags are the flags that say b again in a command line: none for the
// default backend, the server's URL only when it is not the default.
func (b backendFlags) flags() string {
	if *b.name == string(backend.SQLite) {
		return ""
	}
	s := " --backend " + *b.name
	if *b.url != backend.Server() {
		s += " --postgres-url " + shellWord(system.Redact(*b.url))
	}
	return s
}
