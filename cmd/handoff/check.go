package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	receiver "github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/internal/sim"
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
	findings, files, err := sim.CheckFiles(ctx, *appPath, *crmPath)
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
		}{App: shown(*appPath), CRM: optional(*crmPath), Rows: len(files.App.Outbox), Tasks: len(files.Tasks), OK: len(findings) == 0, Problems: []jsonProblem{}}
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
		if len(findings) == 0 {
			fmt.Fprintf(stdout, "%s: ok (%s, %s, %s; invariants %s hold)\n", what, checked, words.HowMany(len(files.App.Outbox), "row"), words.HowMany(len(files.Tasks), "task"), checkedInvariants(*crmPath))
		} else {
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

// checkedInvariants names the invariants check can see with or without a
// CRM file.
func checkedInvariants(crmPath string) string {
	if crmPath == "" {
		return "2 and 4 (pass --crm for 1, 3, 5 and the CRM's identity)"
	}
	return "1 to 5 and the CRM's identity"
}

// crmCmd runs the CRM's subcommands: init creates a CRM database, serve
// serves one over HTTP with SPEC's Idempotency-Key contract.
func crmCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
		if !slices.Contains(crmSubcommands, sub) {
			return fmt.Errorf("%w: unknown subcommand %q; want %s", errUsage, sub, strings.Join(crmSubcommands, " or "))
		}
	}
	return inSubcommand(sub, crmRun(ctx, sub, args, stdout, stderr))
}

// crmSubcommands are the subcommands of crm.
var crmSubcommands = []string{"init", "serve"}

// crmRun runs the crm subcommand sub ("" when none was given) with args.
func crmRun(ctx context.Context, sub string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("crm", flag.ContinueOnError)
	crmPath := fs.String("crm", "", "CRM database: created by init (must not exist), served by serve (must exist)")
	addr := fs.String("addr", "127.0.0.1:8080", "serve: the address to listen on (port 0: any free port, printed)")
	retention := fs.Duration("retention", 0, "serve: how long the CRM remembers a key, at least 1s; 0 means forever")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if sub == "" {
		return fmt.Errorf("%w: want handoff crm init --crm PATH, or handoff crm serve --crm PATH", errUsage)
	}
	if err := required(fs, "crm"); err != nil {
		return err
	}
	if sub == "serve" {
		if *retention > 0 && *retention < time.Second {
			return fmt.Errorf("%w: --retention is %v, want 0 (forever) or 1s or more", errUsage, *retention)
		}
		return serveCRM(ctx, *crmPath, *addr, *retention, stdout)
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "addr" || f.Name == "retention" })
	if given {
		return fmt.Errorf("%w: --addr and --retention go with crm serve", errUsage)
	}
	if _, err := os.Lstat(*crmPath); err == nil {
		return fmt.Errorf("%s already exists; crm init creates a new CRM database only", *crmPath)
	}
	crm, err := openCRMFile(ctx, *crmPath, true, stdout)
	if err != nil {
		return err
	}
	return crm.Close()
}

// openCRMFile opens the durable CRM database at path; creating says the
// file is new, and then w hears where it was made, with its identity.
func openCRMFile(ctx context.Context, path string, creating bool, w io.Writer) (*system.CRM, error) {
	crm, err := system.OpenCRM(ctx, path, system.Durable)
	if err != nil || !creating {
		return crm, err
	}
	id, err := crm.Identity(ctx)
	if err != nil {
		crm.Close()
		return nil, err
	}
	fmt.Fprintf(w, "created the CRM database %s (identity %s)\n", path, id)
	return crm, nil
}

// serveCRM serves the CRM database at path over HTTP on addr until ctx is
// cancelled (SIGINT, SIGTERM), then shuts down gracefully: requests under
// way finish, for at most five seconds.
func serveCRM(ctx context.Context, path, addr string, retention time.Duration, stdout io.Writer) error {
	if err := mustExist("CRM", path); err != nil {
		return fmt.Errorf("%w; create it with handoff crm init --crm %s", err, path)
	}
	c, err := system.OpenCRMWith(ctx, path, system.CRMOptions{Retention: retention})
	if err != nil {
		return err
	}
	defer c.Close()
	handler, err := receiver.NewServer(c, retention)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	fmt.Fprintf(stdout, "serving the CRM %s on http://%s (POST /tasks, GET /contract)\n", path, ln.Addr())
	stopped := make(chan error, 1)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		stopped <- srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return <-stopped
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
	app := *appPath
	if system.IsPostgres(app) {
		// A PostgreSQL app database has only ever had this handoff's
		// schema: there is nothing to upgrade.
		if err := appMustExist(ctx, app); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "app database %s: up to date\n", system.Redact(app))
		app = ""
	}
	for _, db := range []struct {
		what, path string
		open       func(string) (io.Closer, error)
	}{
		{"app", app, func(p string) (io.Closer, error) { return system.Open(ctx, p, system.Options{}) }},
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
