package handoff

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
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
)

// stepGenerator draws one step as one group of draws, which rapid's
// shrinker can remove whole. The zero Step ends the sequence, so a
// sequence needs no separate length that removing a step would break.
var stepGenerator = rapid.Custom(drawStep)

// pick draws an index below len(weights), each as likely as its weight,
// from plain bits: rapid's integer generators add two 53-bit floats to
// every draw, and minimizing those costs its shrinker hundreds of runs
// against real databases. Index 0 is where every choice shrinks to.
func pick(t *rapid.T, label string, weights ...int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	v, n := 0, 1
	for ; n < total; n <<= 1 {
		v <<= 1
		if rapid.Bool().Draw(t, label) {
			v |= 1
		}
	}
	v = v * total / n // scaled, not reduced modulo total, which would favour low choices
	for i, w := range weights {
		if v < w {
			return i
		}
		v -= w
	}
	panic("unreachable")
}

// pickOf draws one of n equally likely indexes, as pick does.
func pickOf(t *rapid.T, label string, n int) int {
	weights := make([]int, n)
	for i := range weights {
		weights[i] = 1
	}
	return pick(t, label, weights...)
}

// drawStep draws one step: approvals and deliveries, rarely a restart
// (crashes restart too, and a restart costs as much as a dozen other
// steps), or, one time in 25, the end of the sequence. Every choice
// shrinks towards the end, then a plain approval of case-1 or a delivery
// without faults.
func drawStep(t *rapid.T) Step {
	switch pick(t, "kind", 2, 22, 25, 1) {
	case 0:
		return Step{}
	case 1:
		return drawApprove(t)
	case 2:
		return drawDeliver(t)
	}
	return NewStep("restart")
}

// drawApprove draws an approval: one in eight has an invalid or missing
// case, one in eight an invalid or missing title, one in eight crashes.
func drawApprove(t *rapid.T) Step {
	s := NewStep("approve")
	if c := pick(t, "case", 7*len(cases), len(invalidCases)+1); c == 0 {
		s.Args = append(s.Args, Arg{"case", cases[pickOf(t, "valid case", len(cases))]})
	} else if i := pickOf(t, "invalid case", len(invalidCases)+1); i < len(invalidCases) { // the last: missing
		s.Args = append(s.Args, Arg{"case", invalidCases[i]})
	}
	if c := pick(t, "title", 7*len(titles), len(invalidTitles)+1); c == 0 {
		s.Args = append(s.Args, Arg{"title", titles[pickOf(t, "valid title", len(titles))]})
	} else if i := pickOf(t, "invalid title", len(invalidTitles)+1); i < len(invalidTitles) { // the last: missing
		s.Args = append(s.Args, Arg{"title", invalidTitles[i]})
	}
	if pick(t, "crash", 7, 1) == 1 {
		s.Args = append(s.Args, Arg{"fault", faults.CrashBetweenInserts.String()})
	}
	return s
}

// drawDeliver draws a delivery: half without a fault, the rest spread over
// every delivery fault, in the order faults.DeliveryKinds gives.
func drawDeliver(t *rapid.T) Step {
	if pick(t, "faulty", 1, 1) == 0 {
		return NewStep("deliver")
	}
	k := faults.DeliveryKinds[pickOf(t, "fault", len(faults.DeliveryKinds))]
	return NewStep("deliver", "fault", k.String())
}

// Run is one sequence of steps and what each did.
type Run struct {
	Design   string
	Steps    []Step
	Outcomes []Outcome
}

// designLines is 1 when the run starts with a design line, else 0: steps
// are numbered, and counted, without it.
func (r Run) designLines() int {
	if len(r.Steps) > 0 && r.Steps[0].Directive == "design" {
		return 1
	}
	return 0
}

// Length is the number of steps of the run, not counting a leading design
// line.
func (r Run) Length() int { return len(r.Steps) - r.designLines() }

// Failure is a sequence that broke an invariant.
type Failure struct {
	Run
	Violation Violation
	// Disagreement is the go-cmp diff (-model +system) where the model and
	// the system first disagreed, at step DisagreementStep (1-based, not
	// counting a design line); empty when they never did.
	Disagreement     string
	DisagreementStep int
}

// Recorder keeps the last failing run of a property. rapid replays the
// minimal failing case last, so after a failed check it holds that case.
// FirstSequences is how many sequences had started when the first failure
// was found (before any shrinking), FirstAt when.
type Recorder struct {
	Failure        *Failure
	FirstSequences int64
	FirstAt        time.Time
}

// Property is the rapid property of the harness: a fresh pair of databases
// in its own folder under dir, random steps (about 19 on average,
// maxSteps at most) applied to design and model with every invariant checked after
// each, then faults off and converge. It counts into stats (may be nil)
// and records failures into rec.
//
// Each step is one draw that may end the sequence: rapid's Repeat would
// add a 53-bit coin per step, and minimizing those costs its shrinker
// thousands of runs against real databases.
func Property(ctx context.Context, design designs.Design, dir string, maxSteps int, stats *Stats, rec *Recorder) func(*rapid.T) {
	var fresh map[string][]byte
	return func(t *rapid.T) {
		if fresh == nil {
			var err error
			if fresh, err = freshDatabases(ctx, design, dir); err != nil {
				t.Fatalf("%v", err)
			}
		}
		env, done, err := newEnvIn(ctx, dir, design, fresh, stats)
		if err != nil {
			t.Fatalf("%v", err)
		}
		defer done()
		if stats != nil {
			stats.Sequences.Add(1)
		}
		run := Run{Design: env.Design().Name}
		var failure *Failure
		// apply runs a step and reports whether the sequence may go on.
		apply := func(s Step) bool {
			out, err := env.Apply(s)
			if err != nil {
				t.Fatalf("step %d %q: %v", len(run.Steps)+1, s, err)
			}
			run.Steps = append(run.Steps, s)
			run.Outcomes = append(run.Outcomes, out)
			if out.Violation != nil {
				failure = &Failure{Run: run, Violation: *out.Violation, Disagreement: env.Disagreement,
					DisagreementStep: env.DisagreementStep - run.designLines()}
			}
			return failure == nil
		}
		ok := design.Name == designs.Handoff.Name || apply(NewStep("design", "name", design.Name))
		for i := 0; ok && i < maxSteps; i++ {
			s := stepGenerator.Draw(t, "step")
			if s.Directive == "" {
				break
			}
			ok = apply(s)
		}
		if ok {
			apply(NewStep("converge"))
		}
		if failure != nil {
			if rec != nil {
				rec.Failure = failure
				if rec.FirstAt.IsZero() {
					rec.FirstAt = time.Now()
					if stats != nil {
						rec.FirstSequences = stats.Sequences.Load()
					}
				}
			}
			// One call site for every violation: rapid's shrinker takes two
			// failures for the same only when their tracebacks match.
			t.Fatalf("%s", failure.Report(""))
		}
	}
}

// freshDatabases creates design's two databases once, closes them and
// returns their files, so that each sequence starts from a copy instead of
// creating the schema again: a third of a short sequence's time.
func freshDatabases(ctx context.Context, design designs.Design, dir string) (map[string][]byte, error) {
	env, done, err := newEnvIn(ctx, dir, design, nil, nil)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := env.Close(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(env.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("handoff: %w", err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if files[e.Name()], err = os.ReadFile(filepath.Join(env.cfg.Dir, e.Name())); err != nil {
			return nil, fmt.Errorf("handoff: %w", err)
		}
	}
	return files, nil
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
	fmt.Fprintf(&b, "design %s broke invariant %d (%s) at step %d:\n  %s\n",
		f.Design, f.Violation.Invariant, f.Violation.Name(), f.Length(), f.Violation.Detail)
	if reproduce != "" {
		fmt.Fprintf(&b, "reproduce and save: %s\n", reproduce)
	}
	fmt.Fprintf(&b, "\nminimal scenario (%d steps):\n\n%s%s", f.Length(), f.Scenario(f.Header()...), f.Diverged())
	return b.String()
}

// Diverged says where the model and the system first disagreed, as a
// go-cmp diff; empty when they never did.
func (f *Failure) Diverged() string {
	if f.Disagreement == "" {
		return ""
	}
	return fmt.Sprintf("\nthe model and the system first disagreed at step %d (-model +system):\n%s", f.DisagreementStep, f.Disagreement)
}

// Table prints the failing run as a table: every step with the system's
// answer, and where the step's action key then stood: its outbox state,
// its attempts and the receiver's tasks for it. The violation follows.
func (f *Failure) Table() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tstep\tresult\toutbox\tattempts\ttasks for key")
	key := ""
	for i, s := range f.Steps[f.designLines():] {
		out := f.Outcomes[i+f.designLines()]
		if out.Key != "" {
			key = out.Key
		}
		result, _, _ := strings.Cut(out.Result, " ")
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
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\n", i+1, s, result, state, attempts, tasks)
	}
	tw.Flush()
	fmt.Fprintf(&b, "%s\n", f.Violation)
	return b.String()
}

// Header is the comment a saved counterexample starts with.
func (f *Failure) Header() []string {
	return []string{
		fmt.Sprintf("Found by exploration: design %s breaks invariant %d (%s).", f.Design, f.Violation.Invariant, f.Violation.Name()),
		"Minimal after shrinking. For the real design this is a bug: fix it, then rewrite the expectations.",
	}
}
