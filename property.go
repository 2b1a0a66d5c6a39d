package handoff

import (
	"context"
	"fmt"
	"math/bits"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/words"
	"pgregory.net/rapid"
)

// pick draws an index below len(weights), each as likely as its weight,
// from the fewest plain bits that resolve the weights (see choose).
func pick(t *rapid.T, label string, weights ...int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	return choose(t, label, bits.Len(uint(total-1)), weights...)
}

// choose draws an index below len(weights), each as likely as its weight,
// from width plain bits (1<<width at least the total weight): rapid's
// integer generators add two 53-bit floats to every draw, and minimizing
// those costs its shrinker hundreds of runs against real databases. Index
// 0, or the first with a weight, is where every choice shrinks to.
func choose(t *rapid.T, label string, width int, weights ...int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	v := 0
	for range width {
		v <<= 1
		if rapid.Bool().Draw(t, label) {
			v |= 1
		}
	}
	v = v * total >> width // scaled, not reduced modulo total, which would favour low choices
	for i, w := range weights {
		if v < w {
			return i
		}
		v -= w
	}
	panic("handoff: choose needs a positive total weight")
}

// pickOf draws one of n equally likely indexes, as pick does.
func pickOf(t *rapid.T, label string, n int) int {
	weights := make([]int, n)
	for i := range weights {
		weights[i] = 1
	}
	return pick(t, label, weights...)
}

// Run is one sequence of steps and what each did.
type Run struct {
	Design   string
	Steps    []Step
	Outcomes []Outcome
}

// designLines is how many design and transport lines the run starts
// with: steps are numbered, and counted, without them.
func (r Run) designLines() int {
	n := 0
	for n < len(r.Steps) && (r.Steps[n].Directive == "design" || r.Steps[n].Directive == "transport") {
		n++
	}
	return n
}

// Length is the number of steps of the run, not counting the design and
// transport lines it starts with.
func (r Run) Length() int { return len(r.Steps) - r.designLines() }

// Failure is a sequence that broke an invariant.
type Failure struct {
	Run
	Violation Violation
	// Unshrunk says the run is as it was found, not shrunk: the fuzzer
	// found it (see PropertyConfig.Fuzzing).
	Unshrunk bool
	// Disagreement is where the model and the system first disagreed, its
	// step counted without a design line; zero when they never did.
	Disagreement Disagreement
}

// Recorder is what a property keeps of its failures: the last failing
// run (rapid replays the minimal failing case last, so after a failed
// check it holds that case); FirstSequences, how many sequences had
// started when the first failure was found (before any shrinking), and
// FirstAt, when. An exploration's Report holds the failing lane's.
type Recorder struct {
	Failure        *Failure
	FirstSequences int64
	FirstAt        time.Time
}

// PropertyConfig says what Property runs and where it keeps and counts
// what it does.
type PropertyConfig struct {
	Design designs.Design // the zero value means designs.Handoff
	// Dir is where each sequence makes the folder of its databases.
	Dir string
	// MaxSteps is the most random steps a sequence takes.
	MaxSteps int
	// NoSwarm draws every sequence at the default levels (see mix).
	NoSwarm bool
	// Transport carries the worker's requests; the zero value means
	// InProcess. Over HTTP every sequence starts with a transport line.
	Transport Transport
	// Backend and PostgresURL say where the app database lives (see
	// Config): on PostgreSQL, in a schema of the property's own.
	Backend     Backend
	PostgresURL string
	// Fresh gives every sequence new databases (a new folder, a new
	// schema) instead of emptying the last ones: for a design whose
	// databases the harness cannot empty, not being SQLite files, say.
	Fresh bool
	// Reproduce, if not empty, is the command a failure's report gives
	// to reproduce and save it.
	Reproduce string
	// Stats (may be nil) counts what the sequences did.
	Stats *Stats
	// Recorder (may be nil) keeps the last failing run.
	Recorder *Recorder
	// Fuzzing says the property runs under rapid.MakeFuzz, which does
	// not shrink: its failures are reported as found, not as minimal.
	Fuzzing bool
	// FirstFailure, if not nil, is called when Recorder first records a
	// failure, before rapid shrinks it: an exploration's other lanes stop
	// then instead of after the shrinking.
	FirstFailure func()
}

// Property is the rapid property of the harness: a pair of databases in
// a folder of its own under cfg.Dir, a swarm mix (see mix), random steps
// (about 19 on average, cfg.MaxSteps at most) applied to the design and
// the model with every invariant checked after each, then faults off and
// converge. Its runs share the databases, emptied between them (see
// renew), unless cfg.Fresh; done closes them and removes their folder,
// after the last run.
//
// It counts a run into cfg.Stats as a sequence until cfg.Recorder holds a
// failure, and as a shrink run after: rapid shrinks right after the first
// failure. Cancelling ctx never cuts a run short (the databases are used
// without its cancellation), but a shrink run that starts after ctx is
// done fails at once as the last one did, without running or counting:
// rapid, taking every smaller draw for the same failure, ends its
// shrinking within a few runs, and cfg.Recorder keeps the failure found
// before. (Skipped runs would keep rapid trying candidates for up to half
// a minute.) Without a Recorder, shrinking runs to its end.
//
// Each step is one draw that may end the sequence: rapid's Repeat would
// add a 53-bit coin per step, and minimizing those costs its shrinker
// thousands of runs against real databases.
func Property(ctx context.Context, cfg PropertyConfig) (prop func(*rapid.T), done func()) {
	if cfg.Design.Name == "" {
		cfg.Design = designs.Handoff
	}
	stats, rec, dbCtx := cfg.Stats, cfg.Recorder, context.WithoutCancel(ctx)
	var (
		env      *Env
		closeEnv func()
	)
	done = func() {
		if env != nil {
			closeEnv()
			env = nil
		}
	}
	// shrinking says whether rapid shrinks a failure: it does from the
	// first one on.
	shrinking := func() bool { return rec != nil && !rec.FirstAt.IsZero() }
	// sequence runs the sequence t draws and returns the failure, if any.
	sequence := func(t *rapid.T) *Failure {
		var err error
		if env != nil && cfg.Fresh {
			done()
		}
		if env == nil {
			env, closeEnv, err = newEnvIn(dbCtx, envOptions{Dir: cfg.Dir, Design: cfg.Design, Stats: stats, Renewable: !cfg.Fresh,
				Backend: cfg.Backend, PostgresURL: cfg.PostgresURL})
		} else {
			err = env.renew(dbCtx)
		}
		if err != nil {
			t.Fatalf("%v", err)
		}
		switch {
		case stats == nil:
		case shrinking():
			stats.ShrinkRuns.Add(1)
		default:
			stats.Sequences.Add(1)
		}
		run := Run{Design: env.Design().Name}
		var failure *Failure
		// apply runs a step and reports whether the sequence may go on.
		apply := func(s Step) bool {
			out, err := env.Apply(dbCtx, s)
			if err != nil {
				t.Fatalf("step %d %q: %v", len(run.Steps)+1, s, err)
			}
			run.Steps = append(run.Steps, s)
			run.Outcomes = append(run.Outcomes, out)
			if out.Violation != nil {
				d := env.Disagreement()
				if d.Step > 0 {
					d.Step -= run.designLines()
				}
				failure = &Failure{Run: run, Violation: *out.Violation, Disagreement: d, Unshrunk: cfg.Fuzzing}
			}
			return failure == nil
		}
		ok := cfg.Design.Name == designs.Handoff.Name || apply(NewStep("design", "name", cfg.Design.Name))
		if ok && cfg.Transport == HTTP {
			ok = apply(NewStep("transport", "name", string(HTTP)))
		}
		if c := drawConfig(t); ok && c.Directive != "" && supported(cfg.Design, c) == nil {
			ok = apply(c)
		}
		m := drawMix(t, !cfg.NoSwarm, cfg.Design, env.cfg.Backend)
		steps := rapid.Custom(func(t *rapid.T) Step { return m.drawStep(t, env) })
		for i := 0; ok && i < cfg.MaxSteps; i++ {
			s := steps.Draw(t, "step")
			if s.Directive == "" {
				break
			}
			ok = apply(s)
		}
		if ok {
			apply(NewStep("converge"))
		}
		return failure
	}
	prop = func(t *rapid.T) {
		var failure *Failure
		if shrinking() && ctx.Err() != nil {
			failure = rec.Failure
		} else if failure = sequence(t); failure != nil && rec != nil {
			rec.Failure = failure
			if rec.FirstAt.IsZero() {
				rec.FirstAt = time.Now()
				if stats != nil {
					rec.FirstSequences = stats.Sequences.Load()
				}
				if cfg.FirstFailure != nil {
					cfg.FirstFailure()
				}
			}
		}
		if failure != nil {
			// One call site for every violation: rapid's shrinker takes two
			// failures for the same only when their messages and
			// tracebacks match.
			t.Fatalf("%s", failure.Report(cfg.Reproduce))
		}
	}
	return prop, done
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
		f.Design, f.Violation.Invariant, f.Violation.Name(), f.Length(), f.Violation.Detail)
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
	for i, s := range f.Steps[f.designLines():] {
		out := f.Outcomes[i+f.designLines()]
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
	shape := "Minimal after shrinking."
	if f.Unshrunk {
		shape = "Found by the fuzzer, not shrunk: steps that do not matter may remain."
	}
	next := shape + " For the real design this is a bug: fix it, then rewrite the expectations."
	if _, err := designs.Lookup(f.Design); err != nil {
		next = shape + " Verify replays it and fails until the design is fixed; the outputs below are the broken design's, and Verify does not compare them."
	}
	return []string{fmt.Sprintf("Found by exploration: design %s breaks invariant %d (%s).", f.Design, f.Violation.Invariant, f.Violation.Name()), next}
}
