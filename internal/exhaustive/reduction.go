package exhaustive

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
)

// Reduction says which states the search counts as one beyond equal
// ones: a set of symmetries, each a renaming under which the system and
// the alphabet behave alike, so that a state's future is that of its
// renamed twin, renamed. The search expands one state of each set of
// twins.
type Reduction int

// The symmetries a Reduction holds.
const (
	// NoReduction counts two states as one only when their lines (see
	// sim.Env.StateLines) are equal.
	NoReduction Reduction = 0
	// KeySymmetry swaps the alphabet's two cases: their letters are the
	// same, and the system treats keys alike (it orders rows by when they
	// were recorded, never by key).
	KeySymmetry Reduction = 1 << iota
	// WorkerSymmetry swaps the alphabet's first two named workers (A and
	// B): their letters are the same, and a worker's name only says whose
	// lease and claim is whose.
	WorkerSymmetry
	// BothSymmetries is KeySymmetry and WorkerSymmetry at once.
	BothSymmetries = KeySymmetry | WorkerSymmetry
)

// Reductions are the reductions by name, as the command line takes them.
var Reductions = map[string]Reduction{"none": NoReduction, "keys": KeySymmetry, "workers": WorkerSymmetry, "both": BothSymmetries}

// String is the reduction's name.
func (r Reduction) String() string {
	for name, v := range Reductions {
		if v == r {
			return name
		}
	}
	return fmt.Sprintf("Reduction(%d)", int(r))
}

// fingerprint is the digest of a state's lines under renamings: of the
// least, as text, of the lines as they are and as each renaming renames
// them, each sorted again.
func fingerprint(lines []string, renamings []renaming) [sha256.Size]byte {
	text := strings.Join(lines, "\n")
	for _, rn := range renamings {
		renamed := make([]string, len(lines))
		for i, l := range lines {
			renamed[i] = rn.rename(l)
		}
		slices.Sort(renamed)
		text = min(text, strings.Join(renamed, "\n"))
	}
	return sha256.Sum256([]byte(text))
}

// renaming is one of a reduction's renamings: the names it renames, and
// a replacer that swaps them at once.
type renaming struct {
	names []string
	swap  *strings.Replacer
}

// newRenaming is the renaming of the old, new pairs given.
func newRenaming(pairs []string) renaming {
	rn := renaming{swap: strings.NewReplacer(pairs...)}
	for i := 0; i < len(pairs); i += 2 {
		rn.names = append(rn.names, pairs[i])
	}
	return rn
}

// rename is line renamed. Most lines name no case and no worker: those
// are returned as they are, without the replacer's scan.
func (rn renaming) rename(line string) string {
	for _, n := range rn.names {
		if strings.Contains(line, n) {
			return rn.swap.Replace(line)
		}
	}
	return line
}

// renamings are the renamings of r besides the identity, on alphabet a:
// the cases swapped, the workers swapped (as quoted names, which is how
// the state's lines print them), and both.
func (r Reduction) renamings(a Alphabet) []renaming {
	var keys, workers []string
	if r&KeySymmetry != 0 && len(a.Cases) == 2 {
		keys = []string{a.Cases[0], a.Cases[1], a.Cases[1], a.Cases[0]}
	}
	if phased := a.phasedWorkers(); r&WorkerSymmetry != 0 && len(phased) >= 2 {
		x, y := fmt.Sprintf("%q", phased[0]), fmt.Sprintf("%q", phased[1])
		workers = []string{x, y, y, x}
	}
	var pairs [][]string
	if len(keys) > 0 {
		pairs = append(pairs, keys)
	}
	if len(workers) > 0 {
		pairs = append(pairs, workers)
	}
	if len(keys) > 0 && len(workers) > 0 {
		pairs = append(pairs, append(keys[:len(keys):len(keys)], workers...))
	}
	var rs []renaming
	for _, p := range pairs {
		rs = append(rs, newRenaming(p))
	}
	return rs
}
