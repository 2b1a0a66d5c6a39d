// Package sim is the fault simulation harness of the handoff: the
// scenario step language, the environment that applies a step to the
// reference model and to the real system (through the faults the step
// names), the invariants of the spec checked after every step, the rapid
// property that draws random steps, and the corpus of scenario files that
// replays them.
package sim

import (
	"errors"
	"fmt"

	"github.com/outboxlab/handoff/internal/line"
)

// ErrScenario is returned for scenario text the harness cannot run: an
// unknown directive or argument, a malformed value. It is a mistake in the
// scenario, never an outcome of the system.
var ErrScenario = errors.New("handoff: malformed scenario")

// Arg is one key=value argument of a step.
type Arg = line.Arg

// Step is one line of the scenario language: a directive and its
// arguments, for example
//
//	deliver fault=lost-reply
//
// in the syntax of package line, which running schedules share. A Step
// prints as the line that parses back to it.
type Step = line.Line

// NewStep builds a step from a directive and key, value pairs.
func NewStep(directive string, keyValues ...string) Step { return line.New(directive, keyValues...) }

// ParseStep parses one line of scenario text.
func ParseStep(text string) (Step, error) {
	s, err := line.Parse(text)
	if err != nil {
		return Step{}, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	return s, nil
}
