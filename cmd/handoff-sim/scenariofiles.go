package main

import (
	"fmt"
	"github.com/outboxlab/handoff/internal/cli"
	"os"

	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/system"
)

// readScenarios reads the named files, or the embedded corpus when none are
// named. A name that is no file is a usage error: the command was told
// to read something that is not there.
func readScenarios(files []string) ([]sim.Scenario, error) {
	if len(files) == 0 {
		return sim.Corpus(handoff.Corpus)
	}
	var scenarios []sim.Scenario
	for _, f := range files {
		sc, err := readScenario(f)
		if err != nil {
			return nil, err
		}
		scenarios = append(scenarios, sc)
	}
	return scenarios, nil
}

// readScenario reads the scenario file path, refusing as a usage error a
// path that names no file or a folder.
func readScenario(path string) (sim.Scenario, error) {
	if system.MistypedURL(path) {
		return sim.Scenario{}, fmt.Errorf("%w: %q looks like a mistyped URL, and a scenario is a file", cli.ErrUsage, system.Redact(path))
	}
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return sim.Scenario{}, fmt.Errorf("%w: scenario file %s: %w", cli.ErrUsage, path, cli.PathCause(err))
	case info.IsDir():
		return sim.Scenario{}, fmt.Errorf("%w: scenario file %s: a folder, not a file", cli.ErrUsage, path)
	}
	return sim.ReadScenario(path)
}
