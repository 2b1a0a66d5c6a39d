package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/system"
)

// check checks real database files, reading them only: integrity, kind
// and schema, the app's CRM, SPEC's invariants 1 to 5.
func check(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	appPath := fs.String("app", "", "app database (must exist)")
	crmPath := fs.String("crm", "", "CRM database (must exist; optional, but invariants 1, 3 and 5 and the identity need it)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if err := required(fs, "app"); err != nil {
		return err
	}
	findings, files, err := handoff.CheckFiles(ctx, *appPath, *crmPath)
	if err != nil {
		return err
	}
	if *asJSON {
		out := struct {
			App      string        `json:"app"`
			CRM      *string       `json:"crm"`
			Rows     int           `json:"rows"`
			Tasks    int           `json:"tasks"`
			OK       bool          `json:"ok"`
			Problems []jsonProblem `json:"problems"`
		}{App: *appPath, CRM: optional(*crmPath), Rows: len(files.App.Outbox), Tasks: len(files.Tasks), OK: len(findings) == 0, Problems: []jsonProblem{}}
		for _, f := range findings {
			out.Problems = append(out.Problems, jsonProblem(f))
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		what := *appPath
		if *crmPath != "" {
			what += " and " + *crmPath
		}
		if len(findings) == 0 {
			fmt.Fprintf(stdout, "%s: ok (integrity, schema, %d rows, %d tasks; invariants %s hold)\n", what, len(files.App.Outbox), len(files.Tasks), checkedInvariants(*crmPath))
		} else {
			fmt.Fprintf(stdout, "%s: %d problem(s)\n", what, len(findings))
			for _, f := range findings {
				fmt.Fprintf(stdout, "  %s\n", f)
			}
		}
	}
	if len(findings) > 0 {
		return fmt.Errorf("%d problem(s) with the files (listed above)", len(findings))
	}
	return nil
}

// checkedInvariants names the invariants check can see with or without a
// CRM file.
func checkedInvariants(crmPath string) string {
	if crmPath == "" {
		return "2 and 4 (pass --crm for 1, 3, 5 and the CRM's identity)"
	}
	return "1 to 5 and the CRM's identity"
}

// crmCmd runs the CRM's subcommands: init creates a CRM database.
func crmCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("crm", flag.ContinueOnError)
	crmPath := fs.String("crm", "", "CRM database to create (must not exist)")
	init := len(args) > 0 && args[0] == "init"
	if init {
		args = args[1:]
	}
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if !init {
		return fmt.Errorf("%w: want handoff crm init --crm PATH", errUsage)
	}
	if err := required(fs, "crm"); err != nil {
		return err
	}
	if _, err := os.Lstat(*crmPath); err == nil {
		return fmt.Errorf("%s already exists; crm init creates a new CRM database only", *crmPath)
	}
	crm, err := system.OpenCRM(ctx, *crmPath, system.Durable)
	if err != nil {
		return err
	}
	defer crm.Close()
	id, err := crm.Identity(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created the CRM database %s (identity %s)\n", *crmPath, id)
	return nil
}

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
	for _, db := range []struct {
		what, path string
		open       func(string) (io.Closer, error)
	}{
		{"app", *appPath, func(p string) (io.Closer, error) { return system.Open(ctx, p, system.Options{}) }},
		{"CRM", *crmPath, func(p string) (io.Closer, error) { return system.OpenCRM(ctx, p, system.Durable) }},
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
		fmt.Fprintf(stdout, "%s database %s: up to date\n", db.what, db.path)
	}
	return nil
}
