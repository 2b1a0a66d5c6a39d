package handoff

// The entry points of the harness's tests: the rapid property on every
// backend and transport, the corpus replayed on every backend and
// transport, and the fragile catalog searched and replayed. The unit
// tests of each layer live with it (internal/sim, internal/explore,
// system, model, ...).

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/explore"
	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/internal/sim"
	"pgregory.net/rapid"
)

// The flags of the harness's tests, beside rapid's own (-rapid.checks,
// -rapid.seed, ...).
var (
	rewrite = flag.Bool("rewrite", false, "TestCorpus: rewrite the expected outputs of the corpus files (only commit the diff if you understand it)")
	save    = flag.String("save", "", "TestSimulation, FuzzSimulation: save the minimal failing scenario into this folder")
	steps   = flag.Int("steps", DefaultSteps, "TestSimulation, FuzzSimulation: the most random steps a sequence takes")
	noSwarm = flag.Bool("noswarm", false, "TestSimulation, FuzzSimulation: draw every sequence at the default levels, without swarm testing")
	design  = flag.String("design", designs.Handoff.Name, "TestSimulation, FuzzSimulation: the design to explore")
	deep    = flag.Bool("deep", false, "TestFewerViews: also search for no-fencing's counterexample on the design without fences shown; TestVerifyRunningPoolOnPostgres: 300 schedules, not 30, and each saved one replayed 10 times, not 3; as .ci/deep runs them")
)

// TestSimulation explores random fault sequences against the design
// -design names (the real one by default) and fails with the minimal
// scenario that breaks an invariant. Use -rapid.checks to explore more,
// -rapid.seed to reproduce, -save corpus to keep a counterexample.
func TestSimulation(t *testing.T) {
	t.Parallel()
	d, err := designs.Lookup(*design)
	if err != nil {
		t.Fatal(err)
	}
	rec, stats := &explore.Recorder{}, sim.NewStats()
	defer func() {
		t.Logf("%d sequences (and %d shrink runs), %d steps; faults %v; transitions %v; worker results %v",
			stats.Sequences.Load(), stats.ShrinkRuns.Load(), stats.Steps.Load(), stats.Faults, stats.Transitions, stats.Results)
		saveFailure(t, rec.Failure)
	}()
	prop, done := explore.Property(t.Context(), explore.PropertyConfig{Design: d, Dir: t.TempDir(), MaxSteps: *steps, NoSwarm: *noSwarm, Stats: stats, Recorder: rec})
	defer done()
	explore.Check(t, prop)
}

// saveFailure saves f into the folder -save names, if it names one.
func saveFailure(t *testing.T, f *sim.Failure) {
	if f == nil || *save == "" {
		return
	}
	path, err := sim.SaveCounterexample(*save, f)
	if err != nil {
		t.Errorf("saving the counterexample: %v", err)
		return
	}
	t.Logf("saved the scenario as %s", path)
}

// FuzzSimulation is the property of TestSimulation driven by Go's
// coverage-guided fuzzer (go test -fuzz=FuzzSimulation -run XXX .): the
// fuzzer's input is the sequence's stream of draws, eight bytes a draw. A
// failure prints the scenario as found (the fuzzer does not shrink), and
// the command that replays the failing input and saves the scenario into
// corpus/. Without -fuzz it runs three seed sequences.
func FuzzSimulation(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3} {
		f.Add(explore.DrawStream(seed, 1024))
	}
	d, err := designs.Lookup(*design)
	if err != nil {
		f.Fatal(err)
	}
	rec := &explore.Recorder{}
	prop, done := explore.Property(f.Context(), explore.PropertyConfig{Design: d, Dir: f.TempDir(), MaxSteps: *steps, NoSwarm: *noSwarm, Recorder: rec, Fuzzing: true})
	f.Cleanup(done)
	check := rapid.MakeFuzz(prop)
	f.Fuzz(func(t *testing.T, input []byte) {
		rec.Failure = nil
		t.Cleanup(func() {
			if rec.Failure == nil {
				return
			}
			name := t.Name()
			if !strings.Contains(name, "/") {
				name += "/NAME (the file name go test prints below, after testdata/fuzz/FuzzSimulation/)"
			}
			t.Logf("reproduce and save: go test -run=%s -design %s -save corpus .", name, d.Name)
			saveFailure(t, rec.Failure)
		})
		check(t, input)
	})
}

// postgresChecks is how many sequences TestSimulationOnPostgres runs (none
// under -short).
const postgresChecks = 100

// TestSimulationOnPostgres explores with the app database in PostgreSQL,
// the sequences of seed 1: the corpus shows each behaviour there, and
// this that the Env renews its schema between sequences as it empties a
// file. It checks PostgreSQL's reach too: the lost commit, the lost
// reply to a commit and the busy app database take effect, and app-full,
// which needs a SQLite file, never does.
func TestSimulationOnPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: TestCorpus replays PostgreSQL's own scenarios; run without -short to explore on PostgreSQL")
	}
	r := exploreOK(t, explore.Config{Checks: postgresChecks, Steps: DefaultSteps, Seed: 1, Dir: t.TempDir(),
		Backend: backend.Postgres, PostgresURL: pgtest.URL(t)})
	for _, k := range []faults.Kind{faults.CommitLost, faults.CommitReplyLost, faults.AppBusy} {
		if r.Stats.Faults[k] == 0 {
			t.Errorf("fault %s never took effect on PostgreSQL", k)
		}
	}
	if n := r.Stats.Faults[faults.AppFull]; n > 0 {
		t.Errorf("fault %s took effect %d times on PostgreSQL, want never", faults.AppFull, n)
	}
}

// TestSimulationOverHTTP explores the real design over HTTP: every
// network fault takes effect as the fault proxy's action or the server's
// answer, every answer of the spec's sender table among them, each read
// as the model predicts. (300 sequences; 150 with -short.)
func TestSimulationOverHTTP(t *testing.T) {
	t.Parallel()
	checks := 300
	if testing.Short() {
		checks = 150
	}
	r := exploreOK(t, explore.Config{Checks: checks, Steps: DefaultSteps, Seed: 1, Parallel: 2, Transport: sim.HTTP, Dir: t.TempDir()})
	for _, k := range sim.NetworkFaults() {
		if r.Stats.Faults[k] == 0 {
			t.Errorf("network fault %s never took effect over http", k)
		}
	}
}

// exploreOK runs an exploration of the real design and fails t unless
// every sequence ran and none broke an invariant.
func exploreOK(t *testing.T, cfg explore.Config) explore.Report {
	t.Helper()
	r, err := explore.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case r.Problem != "":
		t.Fatalf("the harness failed:\n%s", r.Problem)
	case r.Failure != nil:
		t.Fatalf("the real design failed:\n%s", r.Failure.Report(""))
	case r.Stats.Sequences.Load() != int64(cfg.Checks):
		t.Errorf("ran %d sequences, want %d", r.Stats.Sequences.Load(), cfg.Checks)
	}
	t.Logf("%d steps at %.0f steps/s; faults %v", r.Stats.Steps.Load(), r.StepsPerSecond(), r.Stats.Faults)
	return r
}

// corpusCell is a backend and a transport the corpus is replayed on.
type corpusCell struct {
	backend   backend.Backend
	transport sim.Transport
}

// corpusCells are the backends and transports every corpus file is
// replayed on. The outputs are the same on every one: nothing a step
// prints names the backend or the transport.
var corpusCells = []corpusCell{
	{backend.SQLite, sim.InProcess},
	{backend.SQLite, sim.HTTP},
	{backend.Postgres, sim.InProcess},
}

// TestCorpus replays every scenario file of corpus/ (fragile designs'
// included) on every cell of corpusCells and compares each step's output
// with the file. A file whose backend line names the other backend is
// skipped as not applicable; over HTTP, a design whose shortcut is in
// the receiver must be refused as running in process only. With -rewrite
// it writes the outputs back: those of SQLite in process, and of
// PostgreSQL for the files of PostgreSQL only. With -short, PostgreSQL
// replays only its own files.
func TestCorpus(t *testing.T) {
	t.Parallel()
	for _, b := range backend.All {
		if !slices.ContainsFunc(corpusCells, func(c corpusCell) bool { return c.backend == b }) {
			t.Errorf("backend %s has no cell in corpusCells", b)
		}
	}
	scenarios, err := sim.Corpus(Corpus)
	if err != nil {
		t.Fatal(err)
	}
	for _, cell := range corpusCells {
		t.Run(fmt.Sprintf("%s/%s", cell.backend, cell.transport), func(t *testing.T) {
			t.Parallel()
			cfg := sim.Config{Backend: cell.backend, Transport: cell.transport}
			if cell.backend == backend.Postgres {
				cfg.PostgresURL = pgtest.URL(t)
			}
			for _, sc := range scenarios {
				if cell.backend == backend.Postgres && testing.Short() && sc.Backend() != backend.Postgres {
					continue
				}
				t.Run(strings.TrimSuffix(strings.TrimPrefix(sc.Name, "corpus/"), ".txt"), func(t *testing.T) {
					t.Parallel()
					replayCorpusFile(t, sc, cfg)
				})
			}
		})
	}
}

// replayCorpusFile replays sc on cfg (in a folder of its own) for
// TestCorpus.
func replayCorpusFile(t *testing.T, sc sim.Scenario, cfg sim.Config) {
	d, err := designs.Lookup(sc.Design())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dir = t.TempDir()
	run, problems, err := sim.Replay(t.Context(), sc, cfg)
	switch {
	case errors.Is(err, sim.ErrOtherBackend):
		t.Skip(err)
	case cfg.Transport == sim.HTTP && d.OwnReceiver:
		if !errors.Is(err, sim.ErrScenario) || !strings.Contains(err.Error(), "in process only") {
			t.Errorf("design %s over http: got %v, want it refused as running in process only", d.Name, err)
		}
		return
	case err != nil:
		t.Fatal(err)
	}
	writes := cfg.Transport == sim.InProcess && (cfg.Backend == backend.SQLite) == (sc.Backend() != backend.Postgres)
	if *rewrite && writes {
		if err := os.WriteFile(filepath.FromSlash(sc.Name), []byte(sc.Format(run.Outputs())), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// fragileSeeds are the seeds go test explores every fragile design with;
// handoff designs --measure SEEDS (in .ci/deep: three, seeds 1 to 3) shows that
// the catch does not depend on one lucky seed. Seed 4 is among the
// cheapest of seeds 1 to 6 in steps to find and shrink every design (see
// docs/performance.md).
var fragileSeeds = []uint64{4}

// TestFragile runs every design of the fragile catalog (designs.Fragile):
// its minimal counterexample in corpus/fragile gives the file's outputs
// and breaks the documented invariant at the documented length, and not
// before; and (but with -short, which leaves out searching and shrinking
// every design, half a minute) the property finds a violation within the
// default budget, the documented invariant, shrunk to the documented
// length.
func TestFragile(t *testing.T) {
	t.Parallel()
	scenarios, err := sim.Corpus(Corpus)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]sim.Scenario{}
	for _, sc := range scenarios {
		byName[sc.Name] = sc
	}
	for _, d := range designs.Fragile {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			t.Run("corpus", func(t *testing.T) { fragileCorpusFile(t, d, byName["corpus/fragile/"+d.Name+".txt"]) })
			t.Run("search", func(t *testing.T) {
				if testing.Short() {
					t.Skip("-short: the corpus file shows the catch; run without -short to search and shrink")
				}
				fragileSearch(t, d)
			})
		})
	}
}

// fragileCorpusFile checks d's minimal counterexample sc.
func fragileCorpusFile(t *testing.T, d designs.Design, sc sim.Scenario) {
	if sc.Name == "" {
		t.Fatalf("no corpus/fragile/%s.txt", d.Name)
	}
	if sc.Design() != d.Name {
		t.Fatalf("the scenario runs design %q", sc.Design())
	}
	env, err := sim.NewEnv(t.Context(), sim.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	var last sim.Outcome
	for _, c := range sc.Cases {
		if last, err = env.Apply(t.Context(), c.Step); err != nil {
			t.Fatalf("%s:%d: %v", sc.Name, c.Line, err)
		}
		if last.Output != c.Want {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", sc.Name, c.Line, c.Text, last.Output, c.Want)
		}
		if last.Violation != nil && c.Line != sc.Cases[len(sc.Cases)-1].Line {
			t.Fatalf("line %d broke invariant %d before the last step", c.Line, last.Violation.Invariant)
		}
	}
	if v := last.Violation; v == nil || !v.AsDocumented(d) || len(sc.Cases)-1 != d.MinimalSteps {
		t.Errorf("got violation %v after %d steps, want invariant %d after %d", v, len(sc.Cases)-1, d.Invariant, d.MinimalSteps)
	}
}

// fragileSearch explores d on every seed of fragileSeeds.
func fragileSearch(t *testing.T, d designs.Design) {
	for _, seed := range fragileSeeds {
		r, err := explore.Run(t.Context(), explore.Config{Design: d, Checks: DefaultChecks, Steps: DefaultSteps, Seed: seed, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		switch f := r.Failure; {
		case f == nil:
			t.Errorf("seed %d: no violation in %d sequences; %s", seed, DefaultChecks, r.Problem)
		case !f.Violation.AsDocumented(d) || f.Length() < d.MinimalSteps || f.Length() > max(d.MinimalSteps, d.MostSteps):
			t.Errorf("seed %d: got invariant %d in %d steps, want invariant %d in %d to %d steps:\n%s",
				seed, f.Violation.Invariant, f.Length(), d.Invariant, d.MinimalSteps, max(d.MinimalSteps, d.MostSteps), f.Report(""))
		}
	}
}
