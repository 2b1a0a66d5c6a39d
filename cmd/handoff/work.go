package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/outboxlab/handoff/internal/metrics"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

// work runs a pool of workers that deliver from an app database to its
// CRM, a database file or an HTTP receiver, until it is interrupted, or
// with --until-idle until nothing is pending. With --metrics-addr it
// serves its metrics and health checks (see opsserver.go).
func work(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("work", flag.ContinueOnError)
	appPath := fs.String("app", "", "app database (must exist)")
	crmPath := fs.String("crm", "", "CRM database (must exist: handoff crm init); or --crm-url")
	crmURL := fs.String("crm-url", "", "the CRM's HTTP receiver (handoff crm serve, or one with its contract), instead of --crm")
	workers := fs.Int("workers", system.DefaultPoolWorkers, "workers in this process, each with its own database handle and name")
	name := fs.String("worker", "", "name the workers NAME:1 to NAME:N (default HOST:PID); a stable name lets a restarted process release its leases at once")
	lease := fs.Duration("lease", system.DefaultLease, "how long a claim keeps other workers off a row")
	sendTimeout := fs.Duration("send-timeout", system.DefaultSendTimeout, "the longest one send may take; shorter than --lease")
	maxAttempts := fs.Int("max-attempts", system.PoolMaxAttempts, "attempts before a row blocks")
	maxAge := fs.Duration("max-age", 0, "time budget: a row approved longer ago than this blocks instead of being sent; 0 means none")
	backoffBase := fs.Duration("backoff-base", system.DefaultBackoffBase, "the backoff ceiling after the first transient failure, doubled after each next one; 0 retries at once")
	backoffCap := fs.Duration("backoff-cap", system.DefaultBackoffCap, "the longest backoff ceiling")
	untilIdle := fs.Bool("until-idle", false, "exit once nothing is pending, instead of waiting for new approvals until SIGINT or SIGTERM")
	logFormat := fs.String("log-format", "text", "the log lines on stderr: text or json")
	metricsAddr := fs.String("metrics-addr", "", metricsHelp)
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if err := required(fs, "app"); err != nil {
		return err
	}
	if err := oneCRM(fs); err != nil {
		return err
	}
	opts := system.Options{MaxAttempts: *maxAttempts, Lease: *lease, SendTimeout: *sendTimeout, MaxAge: *maxAge,
		BackoffBase: *backoffBase, BackoffCap: *backoffCap, NoBackoff: *backoffBase == 0, MaxConns: workerConnections}
	if err := checkWorkFlags(fs, opts, *name, *logFormat); err != nil {
		return err
	}
	var remote *remoteCRM
	if *crmURL != "" {
		r, err := newRemoteCRM(*crmURL, *workers)
		if err != nil {
			return err
		}
		remote = r
		defer r.client.CloseIdleConnections()
	}
	if err := appMustExist(ctx, *appPath); err != nil {
		return err
	}
	if remote != nil {
		// Before the app database is opened: a receiver that does not
		// state its contract leaves the app file as it was.
		if err := remote.readContract(ctx, *sendTimeout); err != nil {
			return err
		}
	} else {
		if err := mustExist("CRM", *crmPath); err != nil {
			if errors.Is(err, errMissing) {
				return fmt.Errorf("%w; create it with handoff crm init --crm %s (or give the receiver's URL with --crm-url)", err, *crmPath)
			}
			return err
		}
		if info, err := os.Stat(*crmPath); err == nil && info.Size() == 0 {
			return fmt.Errorf("the CRM database %s is empty; create it with handoff crm init --crm %s", *crmPath, *crmPath)
		}
	}
	prefix := *name
	if prefix == "" {
		prefix = processPrefix()
	}
	// On a terminal the log lines scroll above a status line; anywhere
	// else they are all there is, clean for a machine to read.
	var status *statusLine
	logTo := stderr
	if stderrIsTerminal(stderr) {
		status = &statusLine{w: stderr}
		logTo = status
	}
	p := &system.Pool{UntilIdle: *untilIdle, Log: newLogger(logTo, *logFormat)}
	var ready []readiness
	for i := range *workers {
		o := opts
		o.Worker = fmt.Sprintf("%s:%d", prefix, i+1)
		app, err := system.Open(ctx, *appPath, o)
		if err != nil {
			return err
		}
		defer app.Close()
		p.Outboxes = append(p.Outboxes, app)
	}
	if remote != nil {
		p.Receiver = remote.sender
		if err := bindCRM(ctx, p.Outboxes[0], remote.contract.Identity, remote.url, remote.taskKey); err != nil {
			return err
		}
		ready = append(ready, readiness{"receiver", func(ctx context.Context) error {
			_, status, err := remote.get(ctx, "contract")
			if err == nil && status != http.StatusOK {
				err = fmt.Errorf("GET /contract answered %d %s", status, http.StatusText(status))
			}
			return err
		}})
	} else {
		crm, err := system.OpenCRMWith(ctx, *crmPath, system.CRMOptions{Durability: system.Durable})
		if err != nil {
			return err
		}
		defer crm.Close()
		p.Receiver = crm
		identity, err := crm.Identity(ctx)
		if err != nil {
			return err
		}
		if err := bindCRM(ctx, p.Outboxes[0], identity, *crmPath, fileTaskKey(crm)); err != nil {
			return err
		}
		ready = append(ready, readiness{"receiver", func(ctx context.Context) error {
			_, err := crm.Identity(ctx)
			return err
		}})
	}
	// The counts of a scrape, and the readiness check, read the app
	// database through a handle of their own, so that they never wait
	// behind a worker's transaction, nor a worker behind them.
	watched := p.Outboxes[0]
	if *metricsAddr != "" {
		o := opts
		o.Worker = prefix + ":metrics"
		w, err := system.Open(ctx, *appPath, o)
		if err != nil {
			return err
		}
		defer w.Close()
		watched = w
	}
	counted := metrics.NewWorker(watched)
	p.Observer = counted
	p.Receiver = counted.Timed(p.Receiver)
	if *metricsAddr != "" {
		ready = append([]readiness{{"app database", watched.Ping}}, ready...)
		// The operations address closes when work returns.
		ops, stopOps := context.WithCancel(ctx)
		defer stopOps()
		addr, err := serveOps(ops, *metricsAddr, opsHandler(counted.Handler(p.Log), ready), p.Log)
		if err != nil {
			return err
		}
		p.Log.Info("serving metrics", "url", "http://"+addr.String()+"/metrics")
	}
	// A worker of another process that died on this host holds leases
	// no worker will release under its name: release them now, before
	// any worker claims (a live one's are kept, see workerGone).
	released, err := p.Outboxes[0].ReleaseGone(ctx, workerGone)
	if err != nil {
		if ctx.Err() != nil {
			return nil // an interrupt before any worker started is a clean stop
		}
		return err
	}
	for worker, n := range released {
		p.Log.Info("released the leases of a worker gone", "worker", worker, "released_leases", n)
		counted.Released(n)
	}
	start := time.Now()
	err = runShowing(ctx, p, status)
	elapsed := time.Since(start)
	// The summary is read after an interrupt too.
	counts, cerr := countStates(context.WithoutCancel(ctx), p.Outboxes[0])
	if err == nil {
		err = cerr
	}
	workSummary(stdout, p, elapsed, counts, ctx.Err() != nil)
	return err
}

// checkWorkFlags refuses, as usage errors, the values of work's flags
// that system.Open would refuse, and a bad --worker or --log-format.
func checkWorkFlags(fs *flag.FlagSet, opts system.Options, name, logFormat string) error {
	for _, d := range []struct {
		flag     string
		value    time.Duration
		zeroMean string // what 0 means; empty: 0 is refused
	}{
		{"lease", opts.Lease, ""},
		{"send-timeout", opts.SendTimeout, ""},
		{"max-age", opts.MaxAge, "none"},
		{"backoff-base", opts.BackoffBase, "retry at once"},
		{"backoff-cap", opts.BackoffCap, ""},
	} {
		switch {
		case d.value < 0 && d.zeroMean != "":
			return fmt.Errorf("%w: --%s is %v, want 0 (%s) or more", errUsage, d.flag, d.value, d.zeroMean)
		case d.value <= 0 && d.zeroMean == "":
			return fmt.Errorf("%w: --%s is %v, want more than 0", errUsage, d.flag, d.value)
		}
	}
	if opts.SendTimeout >= opts.Lease {
		return fmt.Errorf("%w: --send-timeout is %v, want less than --lease (%v)", errUsage, opts.SendTimeout, opts.Lease)
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "worker" })
	if given && strings.TrimSpace(name) == "" {
		return fmt.Errorf("%w: --worker is empty", errUsage)
	}
	if logFormat != "text" && logFormat != "json" {
		return fmt.Errorf("%w: --log-format is %q, want text or json", errUsage, logFormat)
	}
	return nil
}

// newLogger returns the logger of the log lines on w.
func newLogger(w io.Writer, format string) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// runShowing runs p with the status line drawn on status, unless it is
// nil, and erased at the end.
func runShowing(ctx context.Context, p *system.Pool, status *statusLine) error {
	if status == nil {
		return p.Run(ctx)
	}
	drawing, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		showStatus(drawing, p, status)
	}()
	err := p.Run(ctx)
	stop()
	<-done
	status.clear()
	return err
}

// workSummary prints what the pool p did, and where the outbox stands.
func workSummary(w io.Writer, p *system.Pool, elapsed time.Duration, states map[system.State]int, interrupted bool) {
	results := p.Results()
	n := 0
	for _, c := range results {
		n += c
	}
	how := ""
	if interrupted {
		how = " (interrupted: deliveries under way finished)"
	}
	// A delivery that ended pending is an attempt to be retried, not a
	// row: said so, it cannot be read against the outbox's own counts.
	ended := map[string]int{}
	for r, c := range results {
		if r == string(system.ResultPending) {
			ended["to retry"] += c
		} else {
			ended[r] += c
		}
	}
	fmt.Fprintf(w, "work: %s by %s in %v (%.1f/s)%s; the attempts ended %s\n", words.HowMany(n, "delivery"), words.HowMany(len(p.Outboxes), "worker"), elapsed.Round(time.Millisecond),
		float64(n)/max(elapsed.Seconds(), 1e-9), how, counts(ended))
	fmt.Fprintf(w, "outbox: %d pending, %d sent, %d blocked\n", states[system.Pending], states[system.Sent], states[system.Blocked])
}

// workDefaultsHelp says what work's defaults add up to, for its help.
func workDefaultsHelp() string {
	opts := system.Options{MaxAttempts: system.PoolMaxAttempts, BackoffBase: system.DefaultBackoffBase, BackoffCap: system.DefaultBackoffCap,
		SendTimeout: system.DefaultSendTimeout}
	backoff, total := opts.RetryBound()
	return fmt.Sprintf("Defaults that ride out a restart of the receiver: --max-attempts %d with --backoff-base %s and --backoff-cap %s "+
		"spread a failing row's attempts over up to %s of backoff (full jitter: about half that on average). "+
		"A receiver down for a minute or two (a restart, a deploy) blocks no row: the chance that a row spends its %d attempts within two minutes is below one in a trillion. "+
		"One gone for good blocks each row within %s of its first attempt (the backoff, and %d sends of at most --send-timeout %s); --max-age adds a time budget. "+
		"deliver, one attempt by hand, keeps the contract's %d attempts.",
		system.PoolMaxAttempts, shortDuration(system.DefaultBackoffBase), shortDuration(system.DefaultBackoffCap), shortDuration(backoff),
		system.PoolMaxAttempts, shortDuration(total), system.PoolMaxAttempts, shortDuration(system.DefaultSendTimeout), system.DefaultMaxAttempts)
}

// shortDuration is d as Go writes it, without the zero units it ends
// with: 5m, not 5m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	for _, zero := range []string{"m0s", "h0m"} {
		if strings.HasSuffix(s, zero) {
			s = strings.TrimSuffix(s, zero[1:])
		}
	}
	return s
}

// workerConnections is the most connections to PostgreSQL one worker of
// work holds: its Pipeline records an answer or claims the next row on
// one while the other waits for the send.
const workerConnections = 2

// workConnections is the most connections to PostgreSQL a work process
// with workers workers holds, a handle for the metrics included.
func workConnections(workers int) int { return (workers + 1) * workerConnections }
