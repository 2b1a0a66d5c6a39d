package handoff

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
	"pgregory.net/rapid"
)

// SaveEnv is the environment variable that has Verify save a failure's
// minimal scenario into VerifyOptions.Corpus: HANDOFF_SAVE=1 go test.
const SaveEnv = "HANDOFF_SAVE"

// VerifyOptions say what Verify runs beside its random search.
type VerifyOptions struct {
	// Steps is the most random steps a sequence takes; 0 means
	// DefaultSteps. How many sequences run is rapid's -rapid.checks
	// (default 100; a fifth of it under -short).
	Steps int
	// Corpus is a folder of your own scenario files (testdata/handoff,
	// say), replayed before the search; with HANDOFF_SAVE=1 in the
	// environment, a failure's minimal scenario is saved there. "" means
	// none.
	Corpus string
	// Builtin replays this module's corpus too: every scenario of the
	// real design whose steps the design supports.
	Builtin bool
	// Enumerate crashes every replayed scenario at every fault point it
	// passes, once each (see Enumerate); on SQLite only.
	Enumerate bool
	// Backend is where the app database lives: the zero value means a
	// SQLite file, whose path OpenApp gets; Postgres means a schema of its
	// own for every sequence on the server PostgresURL names, whose URL
	// (with schema=) OpenApp gets.
	Backend     Backend
	PostgresURL string
	// Fresh gives every sequence new databases at new paths. Without it
	// the harness empties them between sequences, which is faster and
	// takes any tables, but only of a SQLite file at the path OpenApp or
	// OpenCRM gets, or of the schema in the URL OpenApp gets: a design
	// that keeps its state elsewhere (a receiver in front of a staging
	// CRM, say, that uses its path as a namespace) needs Fresh.
	Fresh bool
}

// Verify checks design d, from any module, against SPEC's model and
// invariants, as go test checks the real design: it replays the
// scenarios opts names (every invariant after every step; their expected
// outputs, written by whichever design saved them, are not compared),
// crashes them at every fault point if opts.Enumerate, then runs the
// rapid property of TestSimulation on d. A failure reports the broken
// invariant and the minimal scenario, readable and ready to save. It logs
// the guarantees that d's capabilities leave unchecked.
//
// d's databases live under t.TempDir() (the app's, on PostgreSQL, in a
// schema of its own); a restart opens them again at the same paths. Every
// replay opens them at new paths, and so does every sequence with
// opts.Fresh; otherwise sequences empty them (see VerifyOptions.Fresh).
func Verify(t *testing.T, d designs.Design, opts VerifyOptions) {
	t.Helper()
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	if opts.Steps == 0 {
		opts.Steps = DefaultSteps
	}
	if opts.Backend == "" {
		opts.Backend = SQLite
	}
	if err := checkBackend(opts.Backend, opts.PostgresURL); err != nil {
		t.Fatal(err)
	}
	if opts.Enumerate && opts.Backend != SQLite {
		t.Fatalf("handoff: Enumerate runs on SQLite; verify on %s without it", opts.Backend)
	}
	t.Logf("design %s supports: %s", d.Name, d.Supports)
	for _, line := range Unchecked(d) {
		t.Logf("not checked %s", line)
	}
	scenarios, err := verifyScenarios(d, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		t.Run("replay/"+filepath.Base(sc.Name), func(t *testing.T) { verifyReplay(t, d, sc, opts) })
	}
	t.Run("property", func(t *testing.T) { verifyProperty(t, d, opts) })
}

// Unchecked lists the guarantees of SPEC that a run on design d does not
// check: those of the capabilities it lacks, and the faults of the
// databases for any design but the real one.
func Unchecked(d designs.Design) []string {
	lines := d.Supports.Unchecked()
	if !takesDatabaseFaults(d) {
		lines = append(lines, "for any design but the real one: busy and full databases, and a lost commit (the harness holds the real design's databases only)")
	}
	return lines
}

// verifyScenarios returns the scenarios Verify replays for d: those of
// opts.Corpus, then, with opts.Builtin, those of the module's corpus that
// run the real design on opts.Backend and need nothing d lacks.
func verifyScenarios(d designs.Design, opts VerifyOptions) ([]Scenario, error) {
	var scenarios []Scenario
	if opts.Corpus != "" {
		paths, err := filepath.Glob(filepath.Join(opts.Corpus, "*.txt"))
		if err != nil {
			return nil, fmt.Errorf("handoff: %w", err)
		}
		for _, p := range paths {
			sc, err := ReadScenario(p)
			if err != nil {
				return nil, err
			}
			if name := sc.Design(); name != d.Name && name != designs.Handoff.Name {
				return nil, fmt.Errorf("handoff: %s runs design %s, not %s", p, name, d.Name)
			}
			scenarios = append(scenarios, sc)
		}
	}
	if opts.Builtin {
		builtin, err := CorpusScenarios()
		if err != nil {
			return nil, err
		}
		for _, sc := range builtin {
			if b := sc.Backend(); sc.Design() == designs.Handoff.Name && (b == "" || b == opts.Backend) && scenarioSupported(d, sc) == nil {
				scenarios = append(scenarios, sc)
			}
		}
	}
	return scenarios, nil
}

// scenarioSupported reports the first step of sc that d does not
// support, as an ErrUnsupported error, or nil.
func scenarioSupported(d designs.Design, sc Scenario) error {
	for _, c := range sc.Cases {
		if err := supported(d, c.Step); err != nil {
			return fmt.Errorf("%s:%d: %w", sc.Name, c.Line, err)
		}
	}
	return nil
}

// verifyReplay replays sc on d, checking every invariant after every
// step, then, with opts.Enumerate, crashes it at every fault point it
// passes.
func verifyReplay(t *testing.T, d designs.Design, sc Scenario, opts VerifyOptions) {
	if err := scenarioSupported(d, sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.Cases) > 0 && sc.Cases[0].Step.Directive == "design" {
		sc.Cases = sc.Cases[1:] // the Env runs d already
	}
	env, err := NewEnv(t.Context(), Config{Design: d, Dir: t.TempDir(), Durability: system.ProcessSafe, Backend: opts.Backend, PostgresURL: opts.PostgresURL})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	run := Run{Design: d.Name}
	for _, c := range sc.Cases {
		out, err := env.Apply(t.Context(), c.Step)
		if err != nil {
			t.Fatalf("%s:%d: %v", sc.Name, c.Line, err)
		}
		run.Steps, run.Outcomes = append(run.Steps, c.Step), append(run.Outcomes, out)
		if out.Violation != nil {
			f := Failure{Run: run, Violation: *out.Violation, Disagreement: env.Disagreement()}
			t.Fatalf("%s:%d: design %s broke invariant %d (%s):\n  %s\n\nthe scenario up to there:\n\n%s%s",
				sc.Name, c.Line, d.Name, f.Violation.Invariant, f.Violation.Name(), f.Violation.Detail, run.Scenario(), f.Diverged())
		}
	}
	if !opts.Enumerate {
		return
	}
	points, err := Enumerate(t.Context(), sc, d, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var broken []CrashPoint
	for _, p := range points {
		if p.Violation != nil {
			broken = append(broken, p)
		}
	}
	if len(broken) > 0 {
		p := broken[0]
		t.Errorf("%s:%d: a crash at pass %d of a fault point (%s), then convergence (%s of %d broke an invariant):\n%s",
			sc.Name, p.Case.Line, p.Pass, p.Point, plural(len(broken), "crash point", "crash points"), len(points), p.Output)
	}
}

// verifyProperty runs the rapid property on d, and saves the minimal
// failing scenario into opts.Corpus when the environment asks to.
func verifyProperty(t *testing.T, d designs.Design, opts VerifyOptions) {
	rec := &Recorder{}
	save := fmt.Sprintf("%s=1 go test -run '^%s$' with the -rapid.seed or -rapid.failfile that rapid prints", SaveEnv, t.Name())
	if opts.Corpus == "" {
		save = "set VerifyOptions.Corpus to a folder, then " + save
	}
	defer func() {
		if rec.Failure == nil || os.Getenv(SaveEnv) == "" || opts.Corpus == "" {
			return
		}
		path, err := SaveCounterexample(opts.Corpus, rec.Failure)
		if err != nil {
			t.Errorf("saving the minimal scenario: %v", err)
			return
		}
		t.Logf("saved the minimal scenario as %s", path)
	}()
	prop, done := Property(t.Context(), PropertyConfig{Design: d, Dir: t.TempDir(), MaxSteps: opts.Steps, Fresh: opts.Fresh,
		Backend: opts.Backend, PostgresURL: opts.PostgresURL, Recorder: rec, Reproduce: save})
	defer done()
	rapid.Check(t, prop)
}
