package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

// deliver makes one delivery attempt, with an optional fault, to a CRM
// database file or to an HTTP receiver.
func deliver(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("deliver", flag.ContinueOnError)
	appPath := fs.String("app", "", "app database (must exist)")
	crmPath := fs.String("crm", "", "CRM database (must exist, unless --create-crm); or --crm-url")
	crmURL := fs.String("crm-url", "", "the CRM's HTTP receiver (handoff crm serve, or one with its contract), instead of --crm")
	createCRM := fs.Bool("create-crm", false, "create the CRM database if it does not exist")
	fault := fs.String("fault", "", deliverFaultHelp())
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if err := required(fs, "app"); err != nil {
		return err
	}
	if err := oneCRM(fs); err != nil {
		return err
	}
	if *createCRM && *crmURL != "" {
		return fmt.Errorf("%w: --create-crm goes with --crm PATH, not --crm-url", errUsage)
	}
	var kind faults.Kind
	if *fault != "" {
		k, err := parseDeliverFault(*fault)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		kind = k
	}
	var remote *remoteCRM
	if *crmURL != "" {
		r, err := newRemoteCRM(*crmURL, 1)
		if err != nil {
			return err
		}
		remote = r
		defer r.client.CloseIdleConnections()
	}
	if err := appMustExist(ctx, *appPath); err != nil {
		return err
	}
	creating := false
	if remote != nil {
		// Before the app database is opened: a receiver that does not
		// state its contract leaves the app file as it was.
		if err := remote.readContract(ctx, system.DefaultSendTimeout); err != nil {
			return err
		}
	} else {
		if err := system.CheckPath(*crmPath); err != nil {
			return err
		}
		// A missing or empty CRM file is created only when asked for, and
		// only for an app database that does not deliver to a CRM already.
		if info, err := os.Stat(*crmPath); err != nil || info.Size() == 0 {
			if !*createCRM {
				return fmt.Errorf("the CRM database %s does not exist or is empty; create it with handoff crm init --crm %s, or pass --create-crm", *crmPath, *crmPath)
			}
			creating = true
		}
	}
	var injector faults.Injector
	// deliver is one attempt by hand: it retries at once, with no backoff,
	// as a worker named after its process (see deliverWorker), within the
	// budget every command shows for the row.
	app, err := openWithinBudget(ctx, *appPath, system.Options{Worker: deliverWorker(), NoBackoff: true, Harness: system.Harness{Hook: injector.Hook()}})
	if err != nil {
		return err
	}
	defer app.Close()
	var target system.Receiver
	if remote != nil {
		if err := bindCRM(ctx, app, remote.contract.Identity, remote.url, remote.taskKey); err != nil {
			return err
		}
		// A simulated fault wraps the sender; the claim still hears the
		// retention the receiver stated.
		target = retaining{faults.Network(kind, remote.sender), remote.sender}
	} else {
		bound, err := app.Receiver(ctx)
		if err != nil {
			return err
		}
		if creating && bound != "" {
			return fmt.Errorf("%s delivers to CRM %s already; --create-crm would make another, whose task ids name other tasks: is %s the right path?", shown(*appPath), bound, *crmPath)
		}
		if err := system.CheckPath(*crmPath); err != nil {
			return err
		}
		crm, err := openCRMFile(ctx, *crmPath, creating, stderr)
		if err != nil {
			return err
		}
		defer crm.Close()
		identity, err := crm.Identity(ctx)
		if err != nil {
			return err
		}
		if err := bindCRM(ctx, app, identity, *crmPath, fileTaskKey(crm)); err != nil {
			return err
		}
		target = faults.Network(kind, crm)
	}
	// What a deliver (or a work process) that died left leased is
	// released at once; a deliver that still runs beside this one keeps
	// its lease, and its settle its fence.
	if _, err := app.Recover(ctx); err != nil {
		return err
	}
	if _, err := app.ReleaseGone(ctx, workerGone); err != nil {
		return err
	}

	injector.Arm(faults.Point(kind))
	d, err := app.DeliverOne(ctx, target)
	if p := injector.Crashed(); p != "" {
		return fmt.Errorf("simulated crash at %s delivering %s: attempt %d of %d counted; deliver again", p, d.Key, d.Attempts, app.MaxAttempts())
	}
	if err != nil {
		return err
	}
	switch d.Result {
	case system.Idle:
		counts, err := countStates(ctx, app)
		if err != nil {
			return err
		}
		switch {
		case counts[system.Pending] > 0:
			fmt.Fprintf(stdout, "idle: %s, none eligible before %s (leased by another worker, or waiting out its backoff)\n",
				words.HowMany(counts[system.Pending], "pending row"), d.NextEligible.UTC().Format("2006-01-02 15:04:05.000Z"))
		case counts[system.Blocked] > 0:
			fmt.Fprintf(stdout, "idle: nothing pending, but %s for a person (handoff inspect --state blocked)\n", words.Agree(counts[system.Blocked], "blocked row", "waits", "wait"))
		default:
			fmt.Fprintln(stdout, "idle: nothing pending")
		}
	case system.ResultStale:
		fmt.Fprintf(stdout, "stale %s: attempt %d of %d was sent, but another worker or a person acted on the row since; nothing recorded\n", d.Key, d.Attempts, app.MaxAttempts())
	case system.ResultSent:
		fmt.Fprintf(stdout, "sent %s: CRM task %d (attempt %d of %d)\n", d.Key, d.RemoteID, d.Attempts, app.MaxAttempts())
	case system.ResultPending:
		fmt.Fprintf(stdout, "pending %s: %s failure (attempt %d of %d); deliver again to retry with the same key\n", d.Key, d.LastError, d.Attempts, app.MaxAttempts())
	default:
		fmt.Fprintf(stdout, "blocked %s: %s after %s; a person must reconcile this key in the CRM\n", d.Key, d.LastError, words.HowMany(d.Attempts, "attempt"))
	}
	return nil
}

// openWithinBudget opens the app database at path with opts, whose
// MaxAttempts becomes the budget of its rows (see rowBudget): opened
// again with it when a worker recorded a larger one than the default.
func openWithinBudget(ctx context.Context, path string, opts system.Options) (*system.Outbox, error) {
	app, err := system.Open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	budget, err := budgetOf(ctx, app)
	if err != nil {
		app.Close()
		return nil, err
	}
	if int(budget) == app.MaxAttempts() {
		return app, nil
	}
	if err := app.Close(); err != nil {
		return nil, err
	}
	opts.MaxAttempts = int(budget)
	return system.Open(ctx, path, opts)
}

// deliverWorker is the worker name of the deliver command: HOST:PID:deliver,
// so that two runs that overlap (a scheduler's, every minute) never share
// a name, and a run that starts can tell that an earlier one is gone.
func deliverWorker() string { return processPrefix() + ":deliver" }
