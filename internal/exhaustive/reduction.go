package exhaustive

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
)

// Reduction says which states the search counts as one beyond equal ones.
type Reduction int

// The reductions.
const (
	// NoReduction counts two states as one only when their lines (see
	// sim.Env.StateLines) are equal.
	NoReduction Reduction = iota
	// KeySymmetry counts a state and the same state with the alphabet's
	// two cases swapped as one: the two cases' letters are the same, and
	// the system treats keys alike (it orders rows by when they were
	// recorded, never by key), so each state's future is the other's with
	// the cases swapped. A search with it expands one of each such pair.
	KeySymmetry
)

// Reductions are the reductions by name, as the command line takes them.
var Reductions = map[string]Reduction{"none": NoReduction, "keys": KeySymmetry}

// String is the reduction's name.
func (r Reduction) String() string {
	for name, v := range Reductions {
		if v == r {
			return name
		}
	}
	return fmt.Sprintf("Reduction(%d)", int(r))
}

// fingerprint is the digest of a state's lines under r: for KeySymmetry,
// of the lesser of the lines and the lines with a's two cases swapped.
func (r Reduction) fingerprint(lines []string, a Alphabet) [sha256.Size]byte {
	text := strings.Join(lines, "\n")
	if r == KeySymmetry && len(a.Cases) == 2 {
		swap := strings.NewReplacer(a.Cases[0], a.Cases[1], a.Cases[1], a.Cases[0])
		swapped := make([]string, len(lines))
		for i, l := range lines {
			swapped[i] = swap.Replace(l)
		}
		slices.Sort(swapped)
		text = min(text, strings.Join(swapped, "\n"))
	}
	return sha256.Sum256([]byte(text))
}
