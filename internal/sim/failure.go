package sim

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/violation"
	"github.com/outboxlab/handoff/internal/words"
)

// Run is one sequence of steps and what each did.
type Run struct {
	Design   string
	Steps    []Step
	Outcomes []Outcome
}

// DesignLines is how many design and transport lines the run starts
// with: steps are numbered, and counted, without them.
func (r Run) DesignLines() int {
	n := 0
	for n < len(r.Steps) && (r.Steps[n].Directive == "design" || r.Steps[n].Directive == "transport") {
		n++
	}
	return n
}

// Length is the number of steps of the run, not counting the design and
// transport lines it starts with.
func (r Run) Length() int { return len(r.Steps) - r.DesignLines() }

// Outputs is the output of every step of the run, in order: for a
// replayed scenario, what Scenario.Format writes in place of the
// expected outputs.
func (r Run) Outputs() []string {
	outputs := make([]string, len(r.Outcomes))
	for i, out := range r.Outcomes {
		outputs[i] = out.Output
	}
	return outputs
}

// Failure is a sequence that broke an invariant.
type Failure struct {
	Run
	Violation violation.Violation
	// Unshrunk says the run is as it was found, not shrunk: the fuzzer
	// found it (see PropertyConfig.Fuzzing).
	Unshrunk bool
	// Shortest says the run is the shortest that breaks an invariant, by
	// construction: an exhaustive search found it, breadth first.
	Shortest bool
	// Disagreement is where the model and the system first disagreed, its
	// step counted without a design line; zero when they never did.
	Disagreement Disagreement
}

// Scenario prints the run as a scenario file that replays it, headed by
// the given comment lines.
func (r Run) Scenario(header ...string) string {
	var b strings.Builder
	for _, h := range header {
		fmt.Fprintf(&b, "# %s\n", h)
	}
	for i, s := range r.Steps {
		if i > 0 || len(header) > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s\n----\n%s\n", s, r.Outcomes[i].Output)
	}
	return b.String()
}

// Report says in plain words what broke, shows the minimal scenario (or,
// unshrunk, the scenario as found) as a ready corpus file, and where the
// model and the system first disagreed. reproduce, if not empty, is the
// command that reproduces and saves it.
func (f *Failure) Report(reproduce string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "design %s broke invariant %d (%s) at step %d:\n  %s\n",
		f.Design, f.Violation.Invariant, f.Violation.Name, f.Length(), f.Violation.Detail)
	if reproduce != "" {
		fmt.Fprintf(&b, "reproduce and save: %s\n", reproduce)
	}
	shown := "minimal scenario"
	if f.Unshrunk {
		shown = "scenario as found, not shrunk"
	}
	fmt.Fprintf(&b, "\n%s (%s):\n\n%s%s", shown, words.HowMany(f.Length(), "step"), f.Scenario(f.Header()...), f.Diverged())
	return b.String()
}

// Diverged says where the model and the system first disagreed, as a
// go-cmp diff; empty when they never did.
func (f *Failure) Diverged() string {
	if f.Disagreement.Diff == "" {
		return ""
	}
	return fmt.Sprintf("\nthe model and the system first disagreed at step %d (-model +system):\n%s", f.Disagreement.Step, f.Disagreement.Diff)
}

// Table prints the failing run as a table: every step with the system's
// answer, and where the step's action key then stood: its outbox state,
// its attempts and the receiver's tasks for it. The violation follows.
func (f *Failure) Table() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tstep\tresult\toutbox\tattempts\ttasks for key")
	key := ""
	for i, s := range f.Steps[f.DesignLines():] {
		out := f.Outcomes[i+f.DesignLines()]
		if out.Key != "" {
			key = out.Key
		}
		state, attempts, tasks := "none", 0, 0
		for _, r := range out.Observed.Outbox {
			if r.Key == key {
				state, attempts = r.State, r.Attempts
			}
		}
		for _, t := range out.Observed.Tasks {
			if t.Key == key {
				tasks++
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\n", i+1, s, out.Answer.Kind, state, attempts, tasks)
	}
	tw.Flush()
	fmt.Fprintf(&b, "%s\n", f.Violation)
	return b.String()
}

// Header is the comment a saved counterexample starts with: whether it was
// shrunk and, for a design of the catalog, what go test does with it; for
// another, what Verify does.
func (f *Failure) Header() []string {
	shape, by := "Minimal after shrinking.", "exploration"
	switch {
	case f.Unshrunk:
		shape = "Found by the fuzzer, not shrunk: steps that do not matter may remain."
	case f.Shortest:
		shape, by = "Shortest by construction: no shorter sequence of the search's alphabet breaks an invariant.", "exhaustive search"
	}
	next := shape + " For the real design this is a bug: fix it, then rewrite the expectations."
	if _, err := designs.Lookup(f.Design); err != nil {
		next = shape + " Verify replays it and fails until the design is fixed; the outputs below are the broken design's, and Verify does not compare them."
	}
	return []string{fmt.Sprintf("Found by %s: design %s breaks invariant %d (%s).", by, f.Design, f.Violation.Invariant, f.Violation.Name), next}
}
