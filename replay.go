package handoff

import (
	"cmp"
	"context"
	"fmt"
	"os"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/textdiff"
	"github.com/outboxlab/handoff/system"
)

// ErrScenario is scenario text the harness cannot run: an unknown
// directive or argument, a malformed value, a step the design does not
// support. The error names the file and line.
var ErrScenario = sim.ErrScenario

// ReplayOptions say what Replay runs a scenario on.
type ReplayOptions struct {
	// Design is the design to run; the zero value means the design the
	// scenario's design line names, or the real one. A scenario whose
	// design line names another design than Design is refused.
	Design designs.Design
	// Backend and PostgresURL say where the app database lives; the zero
	// value means SQLite.
	Backend     Backend
	PostgresURL string
	// Dir is where the databases are made, in a folder of their own; ""
	// means the system's temporary folder.
	Dir string
}

// Replayed is what a replay did.
type Replayed struct {
	// Output is the scenario file with every step's output in place of
	// the expected one: what to write back when the change is understood.
	Output string
	// Mismatches are the steps whose output differs from the file's.
	Mismatches []Mismatch
	// Violation is the first invariant a step broke, and Line that step's
	// line; nil when none broke.
	Violation *Violation
	Line      int
}

// Mismatch is a step whose output differs from the scenario file's.
type Mismatch struct {
	Line      int    // the line of the step's directive
	Step      string // the directive line
	Got, Want string
}

// Diff shows the lines of Want and Got that differ, marked - and +, with
// the lines both have between them.
func (m Mismatch) Diff() string { return textdiff.Lines(m.Want, m.Got) }

// Replay runs the scenario file at path on new databases, every step
// against the model with every invariant checked, and compares each
// step's output with the file's. A broken invariant is reported, not
// returned as an error: an error means the scenario could not run
// (ErrScenario, with file:line) or a database could not open.
func Replay(ctx context.Context, path string, opts ReplayOptions) (Replayed, error) {
	sc, err := sim.ReadScenario(path)
	if err != nil {
		return Replayed{}, err
	}
	if opts.Design.Name != "" {
		if err := checkDesign(sc, opts.Design); err != nil {
			return Replayed{}, err
		}
	}
	dir, err := os.MkdirTemp(opts.Dir, "handoff-replay-")
	if err != nil {
		return Replayed{}, fmt.Errorf("handoff: %w", err)
	}
	defer os.RemoveAll(dir)
	env, err := sim.NewEnv(ctx, sim.Config{Design: opts.Design, Dir: dir, Durability: system.ProcessSafe,
		Backend: backend.Backend(cmp.Or(opts.Backend, SQLite)), PostgresURL: opts.PostgresURL})
	if err != nil {
		return Replayed{}, err
	}
	defer env.Close()
	var r Replayed
	outputs := make([]string, 0, len(sc.Cases))
	for _, c := range sc.Cases {
		out, err := env.Apply(ctx, c.Step)
		if err != nil {
			return Replayed{}, fmt.Errorf("%s:%d: %w", sc.Name, c.Line, err)
		}
		outputs = append(outputs, out.Output)
		if out.Output != c.Want {
			r.Mismatches = append(r.Mismatches, Mismatch{Line: c.Line, Step: c.Text, Got: out.Output, Want: c.Want})
		}
		if out.Violation != nil && r.Violation == nil {
			v := *out.Violation
			r.Violation, r.Line = &v, c.Line
		}
	}
	r.Output = sc.Format(outputs)
	return r, nil
}

// checkDesign refuses sc for design d when its design line names another
// design.
func checkDesign(sc sim.Scenario, d designs.Design) error {
	if len(sc.Cases) > 0 && sc.Cases[0].Step.Directive == "design" && sc.Design() != d.Name {
		return fmt.Errorf("%w: %s runs design %s, not %s: edit its design line", ErrScenario, sc.Name, sc.Design(), d.Name)
	}
	return nil
}
