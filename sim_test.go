package handoff

import (
	"context"
	"encoding/binary"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"pgregory.net/rapid"
)

var (
	rewrite = flag.Bool("rewrite", false, "TestCorpus: rewrite the expected outputs of the corpus files (only commit the diff if you understand it)")
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
	rapid.Check(t, Property(context.Background(), PropertyConfig{Design: d, Dir: t.TempDir(), MaxSteps: *steps, NoSwarm: *noSwarm, Stats: stats, Recorder: rec}))
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
	check := rapid.MakeFuzz(Property(context.Background(), PropertyConfig{Design: d, Dir: f.TempDir(), MaxSteps: *steps, NoSwarm: *noSwarm, Recorder: rec}))
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
				t.Logf("saved the minimal scenario as %s", path)
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

// TestCorpus replays every scenario file under corpus/ and compares each
// step's output with the file. With -rewrite it writes the outputs back.
func TestCorpus(t *testing.T) {
	var files []string
	err := filepath.WalkDir("corpus", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".txt") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenario files under corpus/")
	}
	for _, file := range files {
		t.Run(filepath.ToSlash(strings.TrimSuffix(strings.TrimPrefix(file, "corpus"+string(filepath.Separator)), ".txt")), func(t *testing.T) {
			sc, err := ReadScenario(file)
			if err != nil {
				t.Fatal(err)
			}
			outputs, problems, err := Replay(context.Background(), sc, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if *rewrite {
				if err := os.WriteFile(file, []byte(sc.Format(outputs)), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}
