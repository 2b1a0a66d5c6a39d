package handoff

import (
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

var (
	rewrite = flag.Bool("rewrite", false, "TestCorpus: rewrite the expected outputs of the corpus files (only commit the diff if you understand it)")
	save    = flag.String("save", "", "TestSimulation: save the minimal failing scenario into this folder")
	steps   = flag.Int("steps", DefaultSteps, "TestSimulation: the most random steps a sequence takes")
	noSwarm = flag.Bool("noswarm", false, "TestSimulation: draw every sequence at the default levels, without swarm testing")
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
	rapid.Check(t, Property(context.Background(), PropertyConfig{Dir: t.TempDir(), MaxSteps: *steps, NoSwarm: *noSwarm, Stats: stats, Recorder: rec}))
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
				t.Error(p.Error(file))
			}
		})
	}
}
