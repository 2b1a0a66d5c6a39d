package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	receiver "github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/internal/metrics"
	"github.com/outboxlab/handoff/system"
)

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
	metricsAddr := fs.String("metrics-addr", "", "serve: "+metricsHelp)
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
		return serveCRM(ctx, *crmPath, *addr, *retention, *metricsAddr, stdout, stderr)
	}
	given := false
	fs.Visit(func(f *flag.Flag) {
		given = given || f.Name == "addr" || f.Name == "retention" || f.Name == "metrics-addr"
	})
	if given {
		return fmt.Errorf("%w: --addr, --retention and --metrics-addr go with crm serve", errUsage)
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

// serveCRM serves the CRM database at path over HTTP on addr until ctx is
// cancelled (SIGINT, SIGTERM), then shuts down gracefully: requests under
// way finish, for at most five seconds. With metricsAddr it serves its
// metrics and health checks there (see opsserver.go), logging on stderr.
func serveCRM(ctx context.Context, path, addr string, retention time.Duration, metricsAddr string, stdout, stderr io.Writer) error {
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
	defer ln.Close()
	if metricsAddr != "" {
		log := slog.New(slog.NewTextHandler(stderr, nil))
		m := metrics.NewReceiver(handler)
		ready := []readiness{{"CRM database", func(ctx context.Context) error {
			_, err := c.Identity(ctx)
			return err
		}}}
		at, err := serveOps(ctx, metricsAddr, opsHandler(m.Handler(log), ready), log)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "serving metrics on http://%s/metrics (and /healthz, /readyz)\n", at)
	}
	fmt.Fprintf(stdout, "serving the CRM %s on http://%s (POST /tasks, GET /contract)\n", path, ln.Addr())
	return serveUntil(ctx, newHTTPServer(handler, defaultLimits), ln)
}

// crmServeHelp says what crm serve exposes, for its help.
func crmServeHelp() string {
	return "crm serve exposes, without authentication, to whoever reaches --addr (loopback by default): " +
		"POST /tasks, which creates tasks; GET /tasks/{id} and GET /tasks?key=KEY, which show every task's key and payload; GET /contract. " +
		"A body over " + fmt.Sprint(receiver.MaxBodyBytes>>10) + " KiB is refused (413). " + limitsHelp() +
		" Bind another address only behind a proxy that authenticates. --metrics-addr serves counts and times only."
}
