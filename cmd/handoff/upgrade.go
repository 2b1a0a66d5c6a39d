package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/outboxlab/handoff/system"
)

// upgrade brings databases an older handoff wrote to this one's schema,
// in place, each in one transaction.
func upgrade(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("upgrade", flag.ContinueOnError)
	appPath := fs.String("app", "", "app database to upgrade (must exist)")
	crmPath := fs.String("crm", "", "CRM database to upgrade (must exist)")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if *appPath == "" && *crmPath == "" {
		return fmt.Errorf("%w: give --app, --crm or both", errUsage)
	}
	app := *appPath
	if system.IsPostgres(app) {
		// A schema an older handoff made is migrated when it is opened for
		// writing; one that holds no app database is refused, not made.
		if err := appMustExist(ctx, app); err != nil {
			return err
		}
		o, err := system.Open(ctx, app, system.Options{})
		if err != nil {
			return err
		}
		o.Close()
		fmt.Fprintf(stdout, "app database %s: %s\n", system.Redact(app), upgraded(o.UpgradedFrom()))
		app = ""
	}
	for _, db := range []struct {
		what, path string
		open       func(string) (upgradedFrom, error)
	}{
		{"app", app, func(p string) (upgradedFrom, error) { return system.Open(ctx, p, system.Options{}) }},
		{"CRM", *crmPath, func(p string) (upgradedFrom, error) { return system.OpenCRM(ctx, p, system.Durable) }},
	} {
		if db.path == "" {
			continue
		}
		if err := mustExist(db.what, db.path); err != nil {
			return err
		}
		if info, err := os.Stat(db.path); err == nil && info.Size() == 0 {
			return fmt.Errorf("the %s database %s is empty: there is nothing to upgrade", db.what, db.path)
		}
		c, err := db.open(db.path)
		if err != nil {
			return err
		}
		c.Close()
		fmt.Fprintf(stdout, "%s database %s: %s\n", db.what, db.path, upgraded(c.UpgradedFrom()))
	}
	return nil
}

// upgradedFrom is a database upgrade opens: it says what it upgraded.
type upgradedFrom interface {
	io.Closer
	UpgradedFrom() int
}

// upgraded says what an upgrade did, from the version it upgraded from
// (0: nothing).
func upgraded(from int) string {
	if from == 0 {
		return "up to date already; nothing changed"
	}
	return fmt.Sprintf("upgraded in place from schema version %d; up to date", from)
}
