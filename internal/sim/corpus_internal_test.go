package sim

import (
	"os"
	"testing"
)

// corpusScenarios are the scenarios of the module's corpus, read from the
// source tree, in the order of Corpus.
func corpusScenarios(t *testing.T) []Scenario {
	t.Helper()
	scenarios, err := Corpus(os.DirFS("../.."))
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) == 0 {
		t.Fatal("no scenario files under corpus/")
	}
	return scenarios
}

// corpus returns corpusScenarios by name (corpus/NAME.txt).
func corpus(t *testing.T) map[string]Scenario {
	t.Helper()
	byPath := map[string]Scenario{}
	for _, sc := range corpusScenarios(t) {
		byPath[sc.Name] = sc
	}
	return byPath
}
