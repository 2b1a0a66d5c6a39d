package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/outboxlab/handoff"
)

// replay replays scenario files and compares every step's output.
func replay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	quiet := fs.Bool("quiet", false, "print only mismatches and the summary")
	if err := parse(fs, args, stderr, true); err != nil {
		return err
	}
	scenarios, err := readScenarios(fs.Args())
	if err != nil {
		return err
	}
	steps, mismatches := 0, 0
	for _, sc := range scenarios {
		outputs, problems, err := replayOne(ctx, sc)
		if err != nil {
			return err
		}
		steps += len(outputs)
		mismatches += len(problems)
		if !*quiet {
			fmt.Fprintf(stdout, "== %s (design %s)\n", sc.Name, sc.Design())
			for i, c := range sc.Cases {
				fmt.Fprintf(stdout, "%s\n    %s\n", c.Text, strings.ReplaceAll(outputs[i], "\n", "\n    "))
			}
		}
		for _, p := range problems {
			fmt.Fprintln(stderr, p.Error())
		}
	}
	if mismatches > 0 {
		return fmt.Errorf("%d of %d steps in %d files did not match", mismatches, steps, len(scenarios))
	}
	fmt.Fprintf(stdout, "replayed %d files, %d steps: every output matches\n", len(scenarios), steps)
	return nil
}

// readScenarios reads the named files, or the embedded corpus when none are
// named.
func readScenarios(files []string) ([]handoff.Scenario, error) {
	var scenarios []handoff.Scenario
	if len(files) == 0 {
		for _, name := range handoff.CorpusFiles() {
			b, err := handoff.Corpus.ReadFile(name)
			if err != nil {
				return nil, err
			}
			sc, err := handoff.ParseScenario(name, string(b))
			if err != nil {
				return nil, err
			}
			scenarios = append(scenarios, sc)
		}
		return scenarios, nil
	}
	for _, f := range files {
		sc, err := handoff.ReadScenario(f)
		if err != nil {
			return nil, err
		}
		scenarios = append(scenarios, sc)
	}
	return scenarios, nil
}

// replayOne replays a scenario in a temporary folder of its own.
func replayOne(ctx context.Context, sc handoff.Scenario) ([]string, []handoff.Problem, error) {
	dir, err := os.MkdirTemp("", "handoff-replay-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	return handoff.Replay(ctx, sc, dir)
}
