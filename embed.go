package handoff

import (
	"embed"
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
