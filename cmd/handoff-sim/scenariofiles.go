package main

import (
	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/internal/sim"
)

// readScenarios reads the named files, or the embedded corpus when none are
// named.
func readScenarios(files []string) ([]sim.Scenario, error) {
	if len(files) == 0 {
		return sim.Corpus(handoff.Corpus)
	}
	var scenarios []sim.Scenario
	for _, f := range files {
		sc, err := sim.ReadScenario(f)
		if err != nil {
			return nil, err
		}
		scenarios = append(scenarios, sc)
	}
	return scenarios, nil
}
