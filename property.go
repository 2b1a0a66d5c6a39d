package handoff

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/system"
	"pgregory.net/rapid"
)

// The values the generators draw from. Few cases make keys collide; the
// titles make payloads collide, differ only in white space that trimming
// removes, and carry non-ASCII, quotes, HTML and U+2028, which a careless
// JSON encoder escapes.
var (
	cases         = []string{"case-1", "case-2", "case-3"}
	invalidCases  = []string{"", "case/104", strings.Repeat("c", 81), "café"}
	titles        = []string{"Call back", "  Call back  ", "Call back\t", "Rappeler le client — réparation", "修理の件で電話する", `Quote "plan" \ <b>&`, "Line\u2028separated"}
	invalidTitles = []string{"", " \t ", strings.Repeat("é", 161), "bad \xff byte"}
	otherTitle    = "Other content placed by another system"
)

// drawStep draws one step: mostly approvals and deliveries, sometimes a
// task placed at the receiver, rarely a restart (crashes restart too, and
// a restart costs as much as a dozen other steps). Every choice shrinks
// towards a plain approval of case-1 or a delivery without faults.
func drawStep(t *rapid.T) Step {
	switch k := rapid.IntRange(0, 49).Draw(t, "kind"); {
	case k < 22:
		return drawApprove(t)
	case k < 45:
		return drawDeliver(t)
	case k < 49:
		title := rapid.SampledFrom(append([]string{otherTitle}, titles...)).Draw(t, "title")
		return NewStep("crm-task", "case", rapid.SampledFrom(cases).Draw(t, "case"), "title", title)
	}
	return NewStep("restart")
}

// drawApprove draws an approval: one in ten has an invalid or missing case,
// one in ten an invalid or missing title, one in eight crashes.
func drawApprove(t *rapid.T) Step {
	s := NewStep("approve")
	if rapid.IntRange(0, 9).Draw(t, "bad case") < 9 {
		s.Args = append(s.Args, Arg{"case", rapid.SampledFrom(cases).Draw(t, "case")})
	} else if i := rapid.IntRange(0, len(invalidCases)).Draw(t, "invalid case"); i < len(invalidCases) {
		s.Args = append(s.Args, Arg{"case", invalidCases[i]})
	}
	if rapid.IntRange(0, 9).Draw(t, "bad title") < 9 {
		s.Args = append(s.Args, Arg{"title", rapid.SampledFrom(titles).Draw(t, "title")})
	} else if i := rapid.IntRange(0, len(invalidTitles)).Draw(t, "invalid title"); i < len(invalidTitles) {
		s.Args = append(s.Args, Arg{"title", invalidTitles[i]})
	}
	if rapid.IntRange(0, 7).Draw(t, "crash") == 7 {
		s.Args = append(s.Args, Arg{"fault", faults.CrashBetweenInserts.String()})
	}
	return s
}

// drawDeliver draws a delivery: half without a fault, the rest spread over
// every delivery fault.
func drawDeliver(t *rapid.T) Step {
	k := rapid.IntRange(0, 2*len(faults.DeliveryKinds)-1).Draw(t, "fault")
	if k < len(faults.DeliveryKinds) {
		return NewStep("deliver")
	}
	return NewStep("deliver", "fault", faults.DeliveryKinds[k-len(faults.DeliveryKinds)].String())
}

// Run is one sequence of steps and what each did.
type Run struct {
	Design   string
	Steps    []Step
	Outcomes []Outcome
}

// Failure is a sequence that broke an invariant.
type Failure struct {
	Run
	Violation Violation
	// Disagreement is the go-cmp diff (-model +system) where the model and
	// the system first disagreed, at step DisagreementStep (1-based); empty
	// when they never did.
	Disagreement     string
	DisagreementStep int
}

// Recorder keeps the last failing run of a property. rapid replays the
// minimal failing case last, so after a failed check it holds that case.
type Recorder struct {
	Failure *Failure
}

// Property is the rapid property of the harness: a fresh pair of databases
// in its own folder under dir, random steps applied to design and model
// with every invariant checked after each, then faults off and converge.
// It counts into stats (may be nil) and records failures into rec.
func Property(ctx context.Context, design designs.Design, dir string, stats *Stats, rec *Recorder) func(*rapid.T) {
	return func(t *rapid.T) {
		seqDir, err := os.MkdirTemp(dir, "seq-")
		if err != nil {
			t.Fatalf("handoff: %v", err)
		}
		defer os.RemoveAll(seqDir)
		env, err := NewEnv(ctx, Config{Design: design, Dir: seqDir, Durability: system.ProcessSafe, Stats: stats})
		if err != nil {
			t.Fatalf("%v", err)
		}
		defer env.Close()
		if stats != nil {
			stats.Sequences.Add(1)
		}
		run := Run{Design: env.Design().Name}
		apply := func(s Step) {
			out, err := env.Apply(s)
			if err != nil {
				t.Fatalf("step %d %q: %v", len(run.Steps)+1, s, err)
			}
			run.Steps = append(run.Steps, s)
			run.Outcomes = append(run.Outcomes, out)
			if out.Violation != nil {
				f := &Failure{Run: run, Violation: *out.Violation, Disagreement: env.Disagreement, DisagreementStep: env.DisagreementStep}
				if rec != nil {
					rec.Failure = f
				}
				t.Fatalf("%s", f.Report(""))
			}
		}
		if design.Name != designs.Handoff.Name {
			apply(NewStep("design", "name", design.Name))
		}
		t.Repeat(map[string]func(*rapid.T){
			"step": func(t *rapid.T) { apply(drawStep(t)) },
		})
		apply(NewStep("converge"))
	}
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

// Report says in plain words what broke, shows the minimal scenario as a
// ready corpus file, and where the model and the system first disagreed.
// reproduce, if not empty, is the command that reproduces and saves it.
func (f *Failure) Report(reproduce string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "design %s broke invariant %d (%s) at step %d of %d:\n  %s\n",
		f.Design, f.Violation.Invariant, f.Violation.Name(), len(f.Steps), len(f.Steps), f.Violation.Detail)
	if reproduce != "" {
		fmt.Fprintf(&b, "reproduce and save: %s\n", reproduce)
	}
	fmt.Fprintf(&b, "\nminimal scenario (%d steps):\n\n%s", len(f.Steps), f.Scenario(f.Header()...))
	if f.Disagreement != "" {
		fmt.Fprintf(&b, "\nthe model and the system first disagreed at step %d (-model +system):\n%s", f.DisagreementStep, f.Disagreement)
	}
	return b.String()
}

// Header is the comment a saved counterexample starts with.
func (f *Failure) Header() []string {
	return []string{
		fmt.Sprintf("Found by exploration: design %s breaks invariant %d (%s).", f.Design, f.Violation.Invariant, f.Violation.Name()),
		"Minimal after shrinking. For the real design this is a bug: fix it, then rewrite the expectations.",
	}
}
