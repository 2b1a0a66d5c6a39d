// Package violation is what the harness reports when a check breaks, in
// either of its modes: an invariant of the spec broken by a step of the
// step mode (internal/sim), or a history check broken by a run of the
// running mode (internal/running). It is the type behind
// handoff.Violation.
package violation

import (
	"fmt"
	"slices"
	"time"

	"github.com/outboxlab/handoff/designs"
)

// Violation is a check that broke: an invariant of the step mode (its
// number in Invariant, with the others the same step broke in Also), or
// a history check of the running mode (its name in Check, with the
// virtual time it broke at in At).
type Violation struct {
	// Invariant is the number of the broken invariant (docs/spec.md
	// numbers them); 0 for a history check.
	Invariant int
	// Check is the history check that broke, H1 to H8, or run (the app
	// did not boot, run or stop as it must); "" for an invariant.
	Check string
	// Name says what the broken invariant or check demands.
	Name string
	// Detail says what broke it.
	Detail string
	// Also are the numbers of the other invariants the step broke, in the
	// order they are checked. One step can break several (a second task
	// for a key breaks invariant 1, and invariant 6 with it), and which is
	// reported is the order's choice, not the design's.
	Also []int
	// At is when the history check broke, in the run's virtual time; 0
	// for an invariant.
	At time.Duration
}

// Breaks reports whether the step broke invariant n, first or also.
func (v Violation) Breaks(n int) bool { return v.Invariant == n || slices.Contains(v.Also, n) }

// AsDocumented reports whether v is how design d's catalog entry says it
// is caught: d.Invariant broken first, or d.OrInvariant broken first with
// d.Invariant at the same step.
func (v Violation) AsDocumented(d designs.Design) bool {
	return v.Invariant == d.Invariant || d.OrInvariant != 0 && v.Invariant == d.OrInvariant && v.Breaks(d.Invariant)
}

// String is, for an invariant, the line a scenario shows for v; for a
// history check, which broke, when, and what the history shows.
func (v Violation) String() string {
	if v.Check != "" {
		return fmt.Sprintf("%s (%s) broke at %s: %s", v.Check, v.Name, v.At, v.Detail)
	}
	return fmt.Sprintf("violation: invariant %d (%s): %s", v.Invariant, v.Name, v.Detail)
}
