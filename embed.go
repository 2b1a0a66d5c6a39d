package handoff

import "embed"

// Corpus is the module's scenario corpus, built into the binary: the
// scenario files under corpus/ (the real design's scenarios, and in
// corpus/fragile each fragile design's minimal counterexample), not the
// reports a replay or an exploration may leave beside them. Paths start
// with "corpus/".
//
//go:embed corpus/*.txt corpus/fragile/*.txt
var Corpus embed.FS
