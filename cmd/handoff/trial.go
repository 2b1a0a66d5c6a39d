package main

import (
	"context"
	"flag"
	"fmt"
	"hash/maphash"
	"io"
	"os"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/trial"
	"github.com/outboxlab/handoff/system"
)

// trialCmd runs the handoff as production runs it, a crm serve process
// and work processes on real files, and SIGKILLs those processes at
// moments drawn from a seed; then it drains and checks every invariant
// the files show, and SQLite's integrity check (see trial.Run).
func trialCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trial", flag.ContinueOnError)
	kills := fs.Int("kills", 0, "SIGKILLs in each trial, each at a moment drawn from the seed; 0 runs without")
	trials := fs.Int("trials", 1, "trials to run, each on new files with its own seed (the seed, the seed+1, ...)")
	seed := fs.Uint64("seed", 0, "seed of the first trial (default: a fresh one, printed)")
	workers := fs.Int("workers", 3, "work processes, each with two workers")
	rows := fs.Int("rows", 200, "approvals each trial records as it goes")
	dir := fs.String("dir", "", "folder to create for the trials' files, kept (default: a temporary folder, removed unless a trial fails)")
	crmURL := fs.String("crm-url", "", "trial a receiver that already runs, instead of starting crm serve: only workers are killed, its tasks are read at GET /tasks?key=KEY")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	backendFlags := addBackendFlags(fs)
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if err := mistypedURL("dir", *dir); err != nil {
		return err
	}
	which, postgresURL, err := backendFlags.Values(ctx, func(u string) string { return trialConnections(u, *workers) })
	if err != nil {
		return err
	}
	if err := required(fs, "kills"); err != nil {
		return err
	}
	if *kills < 0 {
		return fmt.Errorf("%w: --kills is %d, want 0 or more", errUsage, *kills)
	}
	if *crmURL != "" {
		// A receiver that states no contract is refused before a folder
		// is made.
		remote, err := newRemoteCRM(*crmURL, 1)
		if err != nil {
			return err
		}
		if err := remote.readContract(ctx, trial.StartTimeout); err != nil {
			return err
		}
	}
	if *dir != "" {
		if _, err := os.Lstat(*dir); err == nil {
			return fmt.Errorf("--dir %s already exists; trial creates a new folder", *dir)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the handoff executable to start: %w", err)
	}
	if *seed == 0 {
		*seed = new(maphash.Hash).Sum64() | 1
	}
	again := fmt.Sprintf("%s trial --kills %d --seed %d --trials %d --workers %d --rows %d", invokedAs(os.Args[0]), *kills, *seed, *trials, *workers, *rows)
	if *crmURL != "" {
		again += " --crm-url " + shellWord(*crmURL)
	}
	again += backendFlags.Flags()
	if which == backend.Postgres {
		fmt.Fprintln(stderr, trialConnections(postgresURL, *workers))
	}
	return trial.Run(ctx, trial.Config{Exe: exe, Seed: *seed, Trials: *trials, Kills: *kills, Workers: *workers, Rows: *rows, Dir: *dir,
		CRMURL: *crmURL, Backend: which, PostgresURL: postgresURL, Connect: connectTrialReceiver, Again: again, JSON: *asJSON}, stdout, stderr)
}

// connectTrialReceiver returns the receiver at url as a trial reads it,
// once it has stated its contract within trial.StartTimeout.
func connectTrialReceiver(ctx context.Context, url string) (trial.Receiver, error) {
	remote, err := newRemoteCRM(url, 2)
	if err != nil {
		return nil, err
	}
	if err := remote.readContract(ctx, trial.StartTimeout); err != nil {
		remote.client.CloseIdleConnections()
		return nil, err
	}
	return trialReceiver{remote}, nil
}

// trialReceiver is a remoteCRM as a trial reads it.
type trialReceiver struct{ *remoteCRM }

func (r trialReceiver) Identity() string { return r.contract.Identity }

func (r trialReceiver) TasksFor(ctx context.Context, key string) ([]system.Task, error) {
	return r.tasksFor(ctx, key)
}

func (r trialReceiver) Close() { r.client.CloseIdleConnections() }

// trialConnections says how many connections to the server at url a
// trial with workers work processes holds at most: each worker process
// and the drain run work with trial's --workers 2; trial itself records
// and reads on one connection each.
func trialConnections(url string, workers int) string {
	return fmt.Sprintf("on PostgreSQL at %s: this run holds at most %d connections (%d work processes of %d, and trial's own 2)",
		system.Redact(url), (workers+1)*workConnections(2)+2, workers+1, workConnections(2))
}
