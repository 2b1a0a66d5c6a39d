package handoff

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/explore"
	"github.com/outboxlab/handoff/internal/report"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
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
	// passes, once each (see Enumerate), on the backend verified.
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

// Verify checks design d, from any module, against the spec's model and
// invariants, as go test checks the real design: it replays the
// scenarios opts names (every invariant after every step; their expected
// outputs, written by whichever design saved them, are not compared),
// crashes them at every fault point if opts.Enumerate, then runs the
// rapid property of TestSimulation on d. A failure reports the broken
// invariant and the minimal scenario, readable and ready to save. One
// root cause fails the test once: each scenario and the search are a
// subtest, and once one fails the others are skipped, each saying which
// failed first. It logs the guarantees that d's capabilities leave
// unchecked.
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
	if err := nameClash(d); err != nil {
		t.Fatal(err)
	}
	if opts.Steps == 0 {
		opts.Steps = DefaultSteps
	}
	if opts.Backend == "" {
		opts.Backend = SQLite
	}
	if err := backend.Check(backend.Backend(opts.Backend), opts.PostgresURL); err != nil {
		t.Fatal(err)
	}
	env, err := sim.NewEnv(t.Context(), sim.Config{Design: d, Dir: t.TempDir(), Durability: system.ProcessSafe, Backend: backend.Backend(opts.Backend), PostgresURL: opts.PostgresURL})
	if err != nil {
		t.Fatal(err) // the design cannot open, or its app lacks what it declares: once, before any run
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("design %s supports: %s", d.Name, d.Supports)
	for _, line := range Unchecked(d) {
		t.Logf("not checked %s", line)
	}
	paths, err := corpusPaths(opts.Corpus)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Corpus != "" && paths == nil {
		t.Logf("no scenario of yours to replay: %s holds no *.txt file (%s=1 saves a failure's there)", opts.Corpus, SaveEnv)
	}
	if opts.Enumerate {
		t.Logf("Enumerate: every scenario replayed is crashed at every fault point it passes, once each, then restarted and converged")
	}
	var broke firstFailure
	for _, path := range paths {
		broke.run(t, "replay/"+filepath.Base(path), func(t *testing.T) {
			t.Helper()
			sc, err := readOwnScenario(path, d)
			if err != nil {
				t.Fatal(err)
			}
			verifyReplay(t, d, sc, opts)
		})
	}
	if opts.Builtin {
		builtin, err := builtinScenarios(d, opts.Backend)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("replaying %d of the handoff's corpus files: those of the real design on %s whose steps design %s supports", len(builtin), opts.Backend, d.Name)
		for _, sc := range builtin {
			broke.run(t, "replay/handoff/"+filepath.Base(sc.Name), func(t *testing.T) {
				t.Helper()
				verifyReplay(t, d, sc, opts)
			})
		}
	}
	broke.run(t, "property", func(t *testing.T) {
		t.Helper()
		verifyProperty(t, d, opts)
	})
}

// firstFailure runs a check's parts as subtests until one fails: one
// root cause fails the test once, and the parts after it are skipped
// with its name, since they would most likely fail for the same cause.
type firstFailure struct{ name string }

// run runs f as the subtest name, or skips it once a part failed.
func (ff *firstFailure) run(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	broke := ff.name
	if !t.Run(name, func(t *testing.T) {
		t.Helper()
		if broke != "" {
			t.Skipf("not run: %s failed first; fix that, and this runs again", broke)
		}
		f(t)
	}) && ff.name == "" {
		ff.name = t.Name() + "/" + name
	}
}

// nameClash reports a design that takes the name of one of the catalog
// without being it: the harness treats the catalog's designs by name (the
// real one takes faults of its databases), and a saved scenario names its
// design.
func nameClash(d designs.Design) error {
	if c, err := designs.Lookup(d.Name); err == nil && reflect.ValueOf(c.OpenApp).Pointer() != reflect.ValueOf(d.OpenApp).Pointer() {
		return fmt.Errorf("handoff: %s names a design of the catalog (handoff-sim designs lists them): name yours otherwise", d.Name)
	}
	return nil
}

// Unchecked lists the guarantees of the spec that a run on design d does not
// check: those of the capabilities it lacks, the faults of the databases
// for any design but the real one, and, for a receiver of the design's
// own, how it maps its CRM's refusals.
func Unchecked(d designs.Design) []string {
	lines := d.Supports.Unchecked()
	if !sim.TakesDatabaseFaults(d) {
		lines = append(lines, "for any design but the real one: busy and full databases, and a lost commit (the harness holds the real design's databases only)")
	}
	if d.OwnReceiver {
		lines = append(lines, "for a receiver of your own: how it maps its CRM's refusals and retry hints to system.ErrRejected and system.RetryHint (the harness answers refused and throttled itself)")
	}
	return lines
}

// corpusPaths lists the scenario files (*.txt) of dir, none when dir is
// "" or does not exist yet.
func corpusPaths(dir string) ([]string, error) {
	if dir == "" {
		return nil, nil
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, fmt.Errorf("handoff: %w", err)
	}
	return paths, nil
}

// readOwnScenario reads the scenario file at path of a user's corpus for
// design d: one that names d, or no design.
func readOwnScenario(path string, d designs.Design) (sim.Scenario, error) {
	sc, err := sim.ReadScenario(path)
	if err != nil {
		return sim.Scenario{}, fmt.Errorf("%w (every *.txt file of the corpus folder is a scenario)", err)
	}
	if name := sc.Design(); name != d.Name && name != designs.Handoff.Name {
		return sim.Scenario{}, fmt.Errorf("handoff: %s runs design %s, not %s: edit its design line, or move it out of the folder", path, name, d.Name)
	}
	return sc, nil
}

// builtinScenarios are the scenarios of the module's corpus that run the
// real design on backend b and need nothing d lacks, each named
// handoff/corpus/FILE.
func builtinScenarios(d designs.Design, b Backend) ([]sim.Scenario, error) {
	all, err := sim.Corpus(Corpus)
	if err != nil {
		return nil, err
	}
	var scenarios []sim.Scenario
	for _, sc := range all {
		if only := sc.Backend(); sc.Design() == designs.Handoff.Name && (only == "" || only == backend.Backend(b)) && sim.ScenarioSupported(d, sc) == nil {
			sc.Name = "handoff/" + sc.Name
			scenarios = append(scenarios, sc)
		}
	}
	return scenarios, nil
}

// verifyReplay replays sc on d, checking every invariant after every
// step, then, with opts.Enumerate, crashes it at every fault point it
// passes and says where. A broken invariant fails t with the scenario up
// to there and the path of its report.
func verifyReplay(t *testing.T, d designs.Design, sc sim.Scenario, opts VerifyOptions) {
	t.Helper()
	if err := sim.ScenarioSupported(d, sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.Cases) > 0 && sc.Cases[0].Step.Directive == "design" {
		sc.Cases = sc.Cases[1:] // the Env runs d already
	}
	env, err := sim.NewEnv(t.Context(), sim.Config{Design: d, Dir: t.TempDir(), Durability: system.ProcessSafe, Backend: backend.Backend(opts.Backend), PostgresURL: opts.PostgresURL})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	run := sim.Run{Design: d.Name}
	for _, c := range sc.Cases {
		out, err := env.Apply(t.Context(), c.Step)
		if err != nil {
			t.Fatalf("%s:%d: %v", sc.Name, c.Line, err)
		}
		run.Steps, run.Outcomes = append(run.Steps, c.Step), append(run.Outcomes, out)
		if out.Violation != nil {
			f := sim.Failure{Run: run, Violation: *out.Violation, Disagreement: env.Disagreement()}
			v := *out.Violation
			picture := writeReport(t, "", report.Input{Run: run, Violation: &v, Scenario: sc, Reproduce: fmt.Sprintf("go test -run '^%s$'", t.Name())})
			t.Fatalf("%s:%d: design %s broke invariant %d (%s):\n  %s\n\nthe scenario up to there:\n\n%s%s%s",
				sc.Name, c.Line, d.Name, f.Violation.Invariant, f.Violation.Name, f.Violation.Detail, run.Scenario(), f.Diverged(), picture)
		}
	}
	if !opts.Enumerate {
		return
	}
	points, err := sim.Enumerate(t.Context(), sc, sim.EnumerateConfig{Design: d, Dir: t.TempDir(), Fresh: opts.Fresh,
		Backend: backend.Backend(opts.Backend), PostgresURL: opts.PostgresURL})
	if err != nil {
		t.Fatal(err)
	}
	var broken []sim.CrashPoint
	for _, p := range points {
		if p.Violation != nil {
			broken = append(broken, p)
		}
	}
	switch {
	case len(points) == 0:
		t.Logf("%s passes no fault point: Enumerate has nothing to crash", sc.Name)
		return
	case len(broken) == 0:
		t.Logf("%s: %s, one at each fault point the scenario passes (%s), each then restarted and converged: every invariant held",
			sc.Name, words.Agree(len(points), "run", "crashed", "crashed"), crashedWhere(points))
		return
	}
	p := broken[0]
	t.Errorf("%s:%d: %s crashed at %s (fault point %d of the %d the scenario passes), then restarted, faults off and delivering until idle: invariant %d (%s) broke:\n  %s\nthe step that broke it:\n%s\n(%s of %d broke an invariant)",
		sc.Name, p.Case.Line, p.Case.Step.Directive, p.Point, p.Pass, len(points), p.Violation.Invariant, p.Violation.Name, p.Violation.Detail,
		p.Output, words.HowMany(len(broken), "crash"), len(points))
}

// verifyProperty runs the rapid property on d and fails t, once, with
// the minimal failing scenario and the path of its report; it saves the
// scenario into opts.Corpus when the environment asks to. rapid's own
// account is printed only when the harness itself failed.
func verifyProperty(t *testing.T, d designs.Design, opts VerifyOptions) {
	t.Helper()
	rec := &explore.Recorder{}
	save := fmt.Sprintf("%s=1 go test -run '^%s$' in this package's folder (rapid replays its fail file, in testdata/rapid, first)", SaveEnv, t.Name())
	if opts.Corpus == "" {
		save = "set VerifyOptions.Corpus to a folder, then " + save
	}
	prop, done := explore.Property(t.Context(), explore.PropertyConfig{Design: d, Dir: t.TempDir(), MaxSteps: opts.Steps, Fresh: opts.Fresh,
		Backend: backend.Backend(opts.Backend), PostgresURL: opts.PostgresURL, Recorder: rec, Reproduce: save})
	failed, account := explore.CheckQuietly(t, 0, prop)
	done()
	f := rec.Failure
	switch {
	case !failed:
		return
	case f == nil:
		t.Fatalf("the harness itself failed:\n%s", account)
	}
	var saved string
	if os.Getenv(SaveEnv) != "" && opts.Corpus != "" {
		path, err := sim.SaveCounterexample(opts.Corpus, f)
		if err != nil {
			t.Errorf("saving the minimal scenario: %v", err)
		} else {
			saved = "\nsaved the minimal scenario as " + path
		}
	}
	in, err := report.FromFailure(f, save)
	picture := ""
	if err != nil {
		picture = fmt.Sprintf("\n(no report: %v)", err)
	} else {
		picture = writeReport(t, strings.TrimPrefix(saved, "\nsaved the minimal scenario as "), in)
	}
	t.Fatalf("%s%s%s", f.Report(save), picture, saved)
}

// writeReport writes in as a report and returns the line that gives its
// path (see reportPath).
func writeReport(t *testing.T, scenarioPath string, in report.Input) string {
	t.Helper()
	path, err := reportPath(t, scenarioPath)
	if err != nil {
		return fmt.Sprintf("\n(no report: %v)", err)
	}
	written, err := report.WriteFile(path, in)
	if err != nil {
		return fmt.Sprintf("\n(no report: %v)", err)
	}
	return "\nthe failure as a picture: " + written
}

// reportPath is where the report of a failure of t goes: beside the
// scenario at scenarioPath, or, for "", in a folder of this run of the
// test, named after it: its artifact folder when go test runs with
// -artifacts (kept under -outputdir), else a new folder
// handoff-report-TEST-* of the system's temporary folder, which no other
// run shares and which outlives the test, for a person to open.
func reportPath(t *testing.T, scenarioPath string) (string, error) {
	if scenarioPath != "" {
		return report.Beside(scenarioPath), nil
	}
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == ':' || r == '*' {
			return '_'
		}
		return r
	}, t.Name())
	dir := ""
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		dir = t.ArtifactDir()
	} else {
		var err error
		if dir, err = os.MkdirTemp("", "handoff-report-"+name+"-"); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, name+".html"), nil
}

// crashedWhere says where Enumerate crashed a scenario: every step that
// passed a fault point, by its line, with the points it passed.
func crashedWhere(points []sim.CrashPoint) string {
	var parts []string
	for i := 0; i < len(points); {
		c := points[i].Case
		var at []string
		for ; i < len(points) && points[i].Case.Line == c.Line; i++ {
			at = append(at, string(points[i].Point))
		}
		parts = append(parts, fmt.Sprintf("line %d %s at %s", c.Line, c.Step.Directive, strings.Join(at, ", ")))
	}
	return strings.Join(parts, "; ")
}
