package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/internal/words"
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
	findings, files, err := filecheck.CheckFiles(ctx, *appPath, *crmPath)
	if err != nil {
		return err
	}
	if *asJSON {
		out := struct {
			App      string        `json:"app"`
			CRM      *string       `json:"crm"`
			Rows     int           `json:"rows"`
			Tasks    *int          `json:"tasks"`
			OK       bool          `json:"ok"`
			Problems []jsonProblem `json:"problems"`
		}{App: shown(*appPath), CRM: optional(*crmPath), Rows: len(files.App.Outbox), OK: len(findings) == 0, Problems: []jsonProblem{}}
		if *crmPath != "" {
			n := len(files.Tasks)
			out.Tasks = &n
		}
		for _, f := range findings {
			out.Problems = append(out.Problems, jsonProblem(f))
		}
		if err := encodeJSON(stdout, out); err != nil {
			return err
		}
	} else {
		what := shown(*appPath)
		if *crmPath != "" {
			what += " and " + *crmPath
		}
		// PostgreSQL keeps its own pages sound: only SQLite files get
		// an integrity check.
		checked := "integrity, schema"
		switch {
		case system.IsPostgres(*appPath) && *crmPath != "":
			checked = "schema, the CRM file's integrity"
		case system.IsPostgres(*appPath):
			checked = "schema"
		}
		switch {
		case len(findings) == 0 && *crmPath == "":
			// No CRM file: its tasks were not read, and "0 tasks"
			// would read as a finding.
			fmt.Fprintf(stdout, "%s: ok (%s, %s; invariants 2 and 4 hold); no CRM given, so no task was read and invariants 1, 3, 5 and the CRM's identity were not checked: pass --crm PATH\n",
				what, checked, words.HowMany(len(files.App.Outbox), "row"))
		case len(findings) == 0:
			fmt.Fprintf(stdout, "%s: ok (%s, %s, %s; invariants %s hold)\n", what, checked, words.HowMany(len(files.App.Outbox), "row"), words.HowMany(len(files.Tasks), "task"), "1 to 5 and the CRM's identity")
		default:
			fmt.Fprintf(stdout, "%s: %s\n", what, words.HowMany(len(findings), "problem"))
			for _, f := range findings {
				fmt.Fprintf(stdout, "  %s\n", system.OneLine(f.String()))
			}
		}
	}
	if len(findings) > 0 {
		return fmt.Errorf("%s with the files (listed above)", words.HowMany(len(findings), "problem"))
	}
	return nil
}
