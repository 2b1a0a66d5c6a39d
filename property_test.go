package handoff

import (
	"encoding/binary"
	"flag"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"pgregory.net/rapid"
)

var (
	save    = flag.String("save", "", "TestSimulation: save the minimal failing scenario into this folder")
	steps   = flag.Int("steps", DefaultSteps, "TestSimulation: the most random steps a sequence takes")
	noSwarm = flag.Bool("noswarm", false, "TestSimulation, FuzzSimulation: draw every sequence at the default levels, without swarm testing")
	design  = flag.String("design", designs.Handoff.Name, "TestSimulation, FuzzSimulation: the design to explore")
)

// TestSimulation explores random fault sequences against the real design
// and fails with the minimal scenario that breaks an invariant. Use
// -rapid.checks to explore more, -rapid.seed to reproduce, -save corpus to
// keep a counterexample.
func TestSimulation(t *testing.T) {
	t.Parallel()
	rec, stats := &Recorder{}, NewStats()
	defer func() {
		t.Logf("%d sequences (and %d shrink runs), %d steps; faults %v; transitions %v; worker results %v",
			stats.Sequences.Load(), stats.ShrinkRuns.Load(), stats.Steps.Load(), stats.Faults, stats.Transitions, stats.Results)
		if rec.Failure != nil && *save != "" {
			path, err := SaveCounterexample(*save, rec.Failure)
			if err != nil {
				t.Errorf("saving the counterexample: %v", err)
				return
			}
			t.Logf("saved the minimal scenario as %s", path)
		}
	}()
	d, err := designs.Lookup(*design)
	if err != nil {
		t.Fatal(err)
	}
	prop, done := Property(t.Context(), PropertyConfig{Design: d, Dir: t.TempDir(), MaxSteps: *steps, NoSwarm: *noSwarm, Stats: stats, Recorder: rec})
	defer done()
	rapidFlags.checkAsGiven(t, prop)
}

// FuzzSimulation is the property of TestSimulation driven by Go's
// coverage-guided fuzzer (go test -fuzz=FuzzSimulation -run XXX .): the
// fuzzer's input is the sequence's stream of draws, eight bytes a draw. A
// failure prints the scenario, and the command that replays the failing
// input and saves the scenario into corpus/. Without -fuzz it runs three
// seed sequences.
func FuzzSimulation(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3} {
		f.Add(drawStream(seed, 1024))
	}
	d, err := designs.Lookup(*design)
	if err != nil {
		f.Fatal(err)
	}
	rec := &Recorder{}
	prop, done := Property(f.Context(), PropertyConfig{Design: d, Dir: f.TempDir(), MaxSteps: *steps, NoSwarm: *noSwarm, Recorder: rec, Fuzzing: true})
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
			if *save != "" {
				path, err := SaveCounterexample(*save, rec.Failure)
				if err != nil {
					t.Errorf("saving the counterexample: %v", err)
					return
				}
				t.Logf("saved the scenario as %s", path)
			}
		})
		check(t, input)
	})
}

// drawStream returns n draws' worth of fuzz input (eight bytes a draw)
// from a splitmix64 stream with the given seed.
func drawStream(seed uint64, n int) []byte {
	b := make([]byte, 0, 8*n)
	for i := range n {
		b = binary.LittleEndian.AppendUint64(b, splitmix64(seed, int64(i+1)))
	}
	return b
}

// TestFuzzingFailuresSayTheyAreNotShrunk: a failure of the property
// configured for the fuzzer (rapid.MakeFuzz does not shrink) is reported
// and headed as found, not as minimal; configured for rapid.Check it is
// minimal. It runs both under rapid.Check: what it tests is that the
// configuration reaches the report.
func TestFuzzingFailuresSayTheyAreNotShrunk(t *testing.T) {
	d, err := designs.Lookup("two-writes")
	if err != nil {
		t.Fatal(err)
	}
	if err := rapidFlags.begin(); err != nil {
		t.Fatal(err)
	}
	defer rapidFlags.end()
	for _, tt := range []struct {
		fuzzing        bool
		report, header string
	}{
		{false, "\nminimal scenario (", "Minimal after shrinking."},
		{true, "\nscenario as found, not shrunk (", "Found by the fuzzer, not shrunk"},
	} {
		rec := &Recorder{}
		prop, done := Property(t.Context(), PropertyConfig{Design: d, Dir: t.TempDir(), MaxSteps: DefaultSteps, Recorder: rec, Fuzzing: tt.fuzzing})
		rapidFlags.check(&exploreTB{name: t.Name()}, SequenceSeed(1, 5), prop)
		done()
		if rec.Failure == nil {
			t.Fatalf("two-writes did not fail on seed %d", SequenceSeed(1, 5))
		}
		f := rec.Failure
		if f.Unshrunk != tt.fuzzing || !strings.Contains(f.Report(""), tt.report) || !strings.HasPrefix(f.Header()[1], tt.header) {
			t.Errorf("fuzzing %v: Unshrunk %v, header %q, report:\n%s\nwant Unshrunk %v, %q in the report, a header starting %q",
				tt.fuzzing, f.Unshrunk, f.Header()[1], f.Report(""), tt.fuzzing, tt.report, tt.header)
		}
	}
}
