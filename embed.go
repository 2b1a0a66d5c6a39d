package handoff

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

// Corpus is the scenario corpus built into the binary, so that replay and
// enumerate work with no files at hand. Paths start with "corpus/".
//
//go:embed corpus
var Corpus embed.FS

// CorpusFiles lists the scenario files of Corpus in lexical order.
func CorpusFiles() []string {
	var files []string
	_ = fs.WalkDir(Corpus, "corpus", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".txt") {
			files = append(files, path)
		}
		return err
	})
	return files
}

// CorpusScenarios parses every scenario file of Corpus, in the order of
// CorpusFiles; each is named by its path.
func CorpusScenarios() ([]Scenario, error) {
	var scenarios []Scenario
	for _, name := range CorpusFiles() {
		b, err := Corpus.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("handoff: %w", err)
		}
		sc, err := ParseScenario(name, string(b))
		if err != nil {
			return nil, err
		}
		scenarios = append(scenarios, sc)
	}
	return scenarios, nil
}
