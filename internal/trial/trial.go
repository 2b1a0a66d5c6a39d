// Package trial runs the handoff as production runs it, a crm serve
// process and work processes of the handoff executable on real files, and
// SIGKILLs those processes at moments drawn from a seed; then it drains,
// checks every invariant the files show and SQLite's integrity check, and
// prints a summary. It is the trial command of handoff: the command reads
// its flags, and Run does the rest.
//
// Every choice of a trial (the approvals before each kill, which process
// is killed and when, the pause before its restart) is drawn from the
// trial's seed alone (planTrial); where a kill lands depends on the
// machine, and the kill log says where each one did.
package trial

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

// StartTimeout is how long a process of a trial may take to start, and a
// receiver to state its contract.
const StartTimeout = 15 * time.Second

// The trial's timing: the longest wait for the deliveries drawn before a
// kill, the longest extra wait drawn after them, the longest pause drawn
// before the restart, and how long a process may take to stop after
// SIGTERM, and to drain.
const (
	maxWait      = 500 * time.Millisecond
	maxExtra     = 20 * time.Millisecond
	maxPause     = 100 * time.Millisecond
	stopTimeout  = 15 * time.Second
	drainTimeout = 2 * time.Minute
)

// workFlags are the options of the trial's work processes: a short
// lease, and backoffs that mostly outlast a killed server's restart. The
// attempt budget is the contract's 3, not work's larger default: a row
// whose three attempts all find the server down blocks, as it should,
// so that a short trial reaches blocked rows too.
var workFlags = []string{"--workers", "2", "--lease", "2s", "--send-timeout", "1s",
	"--backoff-base", "250ms", "--backoff-cap", "1s", "--max-attempts", "3"}

// Receiver is a CRM's HTTP receiver as a trial reads it, once it has
// stated its contract: its identity, and the tasks it holds for a key (at
// GET /tasks?key=KEY).
type Receiver interface {
	Identity() string
	TasksFor(ctx context.Context, key string) ([]system.Task, error)
	// Close releases the connections kept open to the receiver.
	Close()
}

// Config is what the trials run, and what Run needs of the command that
// runs them.
type Config struct {
	// Exe is the handoff executable the trials' processes run.
	Exe string
	// Seed is the first trial's seed; each next trial's is one more.
	Seed uint64
	// Trials is how many trials run, each on new files; Kills how many
	// SIGKILLs each has; Workers how many work processes; Rows how many
	// approvals each records as it goes.
	Trials, Kills, Workers, Rows int
	// Dir is the folder to create for the trials' files, kept; "" means a
	// temporary folder, removed unless a trial fails.
	Dir string
	// CRMURL is a receiver that runs already, whose tasks are read at GET
	// /tasks?key=KEY: only workers are killed. "" starts crm serve in each
	// trial.
	CRMURL string
	// Backend is where the app database lives: on backend.Postgres each
	// trial has a schema of its own on the server PostgresURL names,
	// dropped unless a trial fails.
	Backend     backend.Backend
	PostgresURL string
	// Connect returns the receiver at url once it has stated its
	// contract, within StartTimeout.
	Connect func(ctx context.Context, url string) (Receiver, error)
	// Again is the command line that runs the trials again, printed
	// first.
	Again string
	// JSON prints the summary as one JSON object.
	JSON bool
}

// Run runs the trials cfg describes, one after the other, and prints the
// summary on stdout, and a line for each trial on stderr. It fails when a
// trial could not run to its end, and when the checks found a violation;
// the files are kept then, and the error says where.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	root, keep := cfg.Dir, cfg.Dir != ""
	var err error
	if keep {
		err = os.MkdirAll(root, 0o755)
	} else {
		root, err = os.MkdirTemp("", "handoff-trial-")
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "trial: seed %d, files in %s; to run it again: %s\n", cfg.Seed, root, cfg.Again)

	sum := summary{Seed: cfg.Seed, Trials: cfg.Trials, Workers: cfg.Workers, Rows: cfg.Rows, CRMURL: optional(cfg.CRMURL), Backend: cfg.Backend, Schemas: []string{},
		KillsByTarget: map[string]int{}, Landed: map[string]int{}, LastLines: map[string]int{}, Problems: []problem{}, KillLog: []killRecord{}}
	start := time.Now()
	var runErr error
	var schemas []string // the app databases the trials made on PostgreSQL
	for i := range cfg.Trials {
		one := config{exe: cfg.Exe, index: i + 1, seed: cfg.Seed + uint64(i), kills: cfg.Kills, workers: cfg.Workers, rows: cfg.Rows,
			dir: filepath.Join(root, fmt.Sprintf("trial-%d", i+1)), crmURL: cfg.CRMURL, connect: cfg.Connect}
		one.app = filepath.Join(one.dir, "app.db")
		if cfg.Backend == backend.Postgres {
			// Workers on many machines, as far as one can show it: each
			// work process has a pool of its own on the server.
			if one.app, err = system.WithSchema(cfg.PostgresURL, fmt.Sprintf("trial_%d_%d", os.Getpid(), i+1)); err != nil {
				return err
			}
			schemas = append(schemas, one.app)
		}
		began := time.Now()
		r, err := runTrial(ctx, one)
		sum.add(one, r)
		if err != nil {
			fmt.Fprintf(stderr, "trial %d of %d (seed %d): stopped after %s, %.1fs: %v\n",
				one.index, cfg.Trials, one.seed, words.HowMany(len(r.kills), "kill"), time.Since(began).Seconds(), err)
		} else {
			fmt.Fprintf(stderr, "trial %d of %d (seed %d): %s, %d of %s sent, %s, %.1fs\n",
				one.index, cfg.Trials, one.seed, words.HowMany(len(r.kills), "kill"), r.sent, words.HowMany(cfg.Rows, "row"), words.HowMany(len(r.findings), "violation"), time.Since(began).Seconds())
		}
		if err != nil {
			runErr = fmt.Errorf("trial %d (seed %d): %w", one.index, one.seed, err)
			break
		}
	}
	sum.ElapsedSeconds = time.Since(start).Seconds()
	if runErr != nil || sum.Violations > 0 || keep {
		sum.Dir = &root
		for _, s := range schemas {
			sum.Schemas = append(sum.Schemas, system.Redact(s))
		}
	} else {
		for _, s := range schemas {
			if err := system.DropPostgres(ctx, s); err != nil {
				return err
			}
		}
		if err := os.RemoveAll(root); err != nil {
			return err
		}
	}
	if cfg.JSON {
		if err := sum.writeJSON(stdout); err != nil {
			return err
		}
	} else {
		sum.writeText(stdout, runErr != nil)
	}
	switch {
	case runErr != nil:
		return fmt.Errorf("%w; the files are kept in %s", runErr, root)
	case sum.Violations > 0:
		return fmt.Errorf("%s (listed above); the files are kept in %s", words.HowMany(sum.Violations, "violation"), root)
	}
	return nil
}
