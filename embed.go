package handoff

import "embed"

// Corpus is the module's scenario corpus, built into the binary: the
// files under corpus/ (the real design's scenarios, and in
// corpus/fragile each fragile design's minimal counterexample). Paths
// start with "corpus/".
//
//go:embed corpus
var Corpus embed.FS
