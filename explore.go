package handoff

import (
	"cmp"
	"context"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/explore"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/violation"
)

// Defaults of an exploration: DefaultChecks sequences of at most
// DefaultSteps random steps each.
const (
	DefaultChecks = explore.DefaultChecks
	DefaultSteps  = explore.DefaultSteps
)

// Backend is where the app database of a design under test lives. The
// receiver's database is a SQLite file on either.
type Backend string

const (
	// SQLite keeps the app database in a SQLite file: OpenApp gets its
	// path.
	SQLite Backend = "sqlite"
	// Postgres keeps it in a PostgreSQL schema of the run's own on a
	// server (see PostgresURLEnv): OpenApp gets a URL with schema=.
	Postgres Backend = "postgres"
)

// PostgresURLEnv names the variable that gives the PostgreSQL server's
// URL to the module's tests and command line, for example
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const PostgresURLEnv = "HANDOFF_POSTGRES_URL"

// ExploreConfig says what Explore searches and how much.
type ExploreConfig struct {
	// Design is the design under test; the zero value means the real
	// one, designs.Handoff.
	Design designs.Design
	// Checks is how many sequences to run; 0 means DefaultChecks.
	Checks int
	// Steps is the most random steps a sequence takes; 0 means
	// DefaultSteps.
	Steps int
	// Seed is the run's seed, never 0: the same seed, design and steps
	// give the same sequences. 0 means 1.
	Seed uint64
	// Parallel is how many sequences run at once, each in a folder of its
	// own; the sequences are the same whatever it is. 0 means 1.
	Parallel int
	// Backend and PostgresURL say where the app database lives; the zero
	// value means SQLite.
	Backend     Backend
	PostgresURL string
	// Dir is where the sequences keep their databases; "" means the
	// system's temporary folder.
	Dir string
}

// Report is what an exploration found.
type Report struct {
	// Sequences counts the sequences run, Steps their steps, ShrinkRuns
	// the runs rapid's shrinking made after the first failure.
	Sequences, Steps, ShrinkRuns int64
	// Elapsed is how long the run took.
	Elapsed time.Duration
	// Failure is the minimal failing sequence, or nil when every sequence
	// held.
	Failure *Failure
	// FirstSequences is how many sequences had started when the first
	// failure was found, and FirstElapsed how long that took, before
	// shrinking; zero without a failure.
	FirstSequences int64
	FirstElapsed   time.Duration
	// Seed reproduces Failure as the first sequence of an exploration
	// with the same Design and Steps.
	Seed uint64
	// Interrupted says the context ended the run early: the report covers
	// what ran, and a failure may not be minimal.
	Interrupted bool
}

// StepsPerSecond is the simulated steps per second of wall time, each step
// compared with the model and checked against every invariant.
func (r Report) StepsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Steps) / r.Elapsed.Seconds()
}

// Explore runs the rapid property that Verify runs, outside go test: the
// same generators, invariants and shrinking, driven by cfg instead of
// rapid's command-line flags. It stops at the first failure, after
// shrinking it, and returns it in the report rather than failing; an
// error means the run could not start (a bad config, a design that
// cannot open) or the harness itself failed. Cancelling ctx ends the run
// cleanly.
func Explore(ctx context.Context, cfg ExploreConfig) (Report, error) {
	r, err := explore.Run(ctx, explore.Config{
		Design: cfg.Design, Checks: cmp.Or(cfg.Checks, DefaultChecks), Steps: cmp.Or(cfg.Steps, DefaultSteps), Seed: cmp.Or(cfg.Seed, 1),
		Parallel: cfg.Parallel, Backend: backend.Backend(cmp.Or(cfg.Backend, SQLite)), PostgresURL: cfg.PostgresURL, Dir: cfg.Dir})
	if err != nil {
		return Report{}, err
	}
	if r.Problem != "" {
		return Report{}, &harnessError{r.Problem}
	}
	return Report{Sequences: r.Stats.Sequences.Load(), Steps: r.Stats.Steps.Load(), ShrinkRuns: r.Stats.ShrinkRuns.Load(),
		Elapsed: r.Elapsed, Failure: newFailure(r.Failure), FirstSequences: r.FirstSequences, FirstElapsed: r.FirstElapsed(),
		Seed: r.FailureSeed, Interrupted: r.Interrupted}, nil
}

// harnessError is a failure of the harness itself during an exploration
// (a panic, a database it could not open), as rapid reported it.
type harnessError struct{ account string }

func (e *harnessError) Error() string { return "handoff: the harness itself failed:\n" + e.account }

// Failure is a sequence that broke an invariant, shrunk to a minimal one.
type Failure struct {
	// Design is the name of the design that broke it.
	Design string
	// Violation is the invariant its last step broke.
	Violation Violation
	// Steps is how many steps it takes, not counting a design line.
	Steps int
	// Unshrunk says it is as found, not minimal.
	Unshrunk bool

	f *sim.Failure
}

// newFailure is the Failure of f; nil for nil.
func newFailure(f *sim.Failure) *Failure {
	if f == nil {
		return nil
	}
	return &Failure{Design: f.Design, Violation: f.Violation, Steps: f.Length(), Unshrunk: f.Unshrunk, f: f}
}

// Report says in plain words what broke, shows the scenario as a ready
// corpus file, and where the model and the system first disagreed.
// reproduce, if not empty, is the command a reader runs to reproduce it.
func (f *Failure) Report(reproduce string) string { return f.f.Report(reproduce) }

// Scenario is the failing sequence as a scenario file: every step with
// its output, headed by what broke. Replay replays it.
func (f *Failure) Scenario() string { return f.f.Scenario(f.f.Header()...) }

// Save writes the scenario into dir, named after the design and the
// invariant, never over an existing file, and returns its path.
func (f *Failure) Save(dir string) (string, error) { return sim.SaveCounterexample(dir, f.f) }

// Violation is a broken invariant of the contract (docs/spec.md numbers
// them): its number (Invariant), what it demands (Name), what broke it
// (Detail) and the other invariants the same step broke (Also). Breaks
// says whether the step broke a given invariant, first or also, and
// AsDocumented whether it is how a fragile design's catalog entry says
// it is caught. It is the harness's one type of a broken check: the
// running mode's history checks fill Check and At instead of Invariant
// and Also.
type Violation = violation.Violation
