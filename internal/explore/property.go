package explore

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/sim"
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

// Recorder is what a property keeps of its failures: the last failing
// run (rapid replays the minimal failing case last, so after a failed
// check it holds that case); FirstSequences, how many sequences had
// started when the first failure was found (before any shrinking), and
// FirstAt, when. An exploration's Report holds the failing lane's.
// Environment is the failure of the environment (see
// backend.ErrEnvironment) that ended the property, if one did: every run
// after it fails at once with the same message, so that rapid's shrinking
// ends within a few runs and nothing is reported as a counterexample.
type Recorder struct {
	Failure        *sim.Failure
	FirstSequences int64
	FirstAt        time.Time
	Environment    error
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
	Transport sim.Transport
	// Backend and PostgresURL say where the app database lives (see
	// Config): on PostgreSQL, in a schema of the property's own.
	Backend     backend.Backend
	PostgresURL string
	// ConnectWait is how long a connection waits for a full or starting
	// server (see sim.Config).
	ConnectWait time.Duration
	// Fresh gives every sequence new databases (a new folder, a new
	// schema) instead of emptying the last ones: for a design whose
	// databases the harness cannot empty, not being SQLite files, say.
	Fresh bool
	// Reproduce, if not empty, is the command a failure's report gives
	// to reproduce and save it.
	Reproduce string
	// Stats (may be nil) counts what the sequences did.
	Stats *sim.Stats
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
// (cfg.MaxSteps at most; each draw may end the sequence) applied to the design and
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
		env      *sim.Env
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
	sequence := func(t *rapid.T) *sim.Failure {
		var err error
		if env != nil && cfg.Fresh {
			done()
		}
		if env == nil {
			env, closeEnv, err = sim.NewEnvIn(dbCtx, sim.EnvOptions{Dir: cfg.Dir, Design: cfg.Design, Stats: stats, Renewable: !cfg.Fresh,
				Backend: cfg.Backend, PostgresURL: cfg.PostgresURL, ConnectWait: cfg.ConnectWait})
		} else {
			err = env.Renew(dbCtx)
		}
		if err != nil {
			harnessFailed(t, rec, "", err)
		}
		switch {
		case stats == nil:
		case shrinking():
			stats.ShrinkRuns.Add(1)
		default:
			stats.Sequences.Add(1)
		}
		run := sim.Run{Design: env.Design().Name}
		var failure *sim.Failure
		// apply runs a step and reports whether the sequence may go on.
		apply := func(s sim.Step) bool {
			out, err := env.Apply(dbCtx, s)
			if err != nil {
				harnessFailed(t, rec, fmt.Sprintf("step %d %q: ", len(run.Steps)+1, s), err)
			}
			run.Steps = append(run.Steps, s)
			run.Outcomes = append(run.Outcomes, out)
			if out.Violation != nil {
				d := env.Disagreement()
				if d.Step > 0 {
					d.Step -= run.DesignLines()
				}
				failure = &sim.Failure{Run: run, Violation: *out.Violation, Disagreement: d, Unshrunk: cfg.Fuzzing}
			}
			return failure == nil
		}
		ok := cfg.Design.Name == designs.Handoff.Name || apply(sim.NewStep("design", "name", cfg.Design.Name))
		if ok && cfg.Transport == sim.HTTP {
			ok = apply(sim.NewStep("transport", "name", string(sim.HTTP)))
		}
		if c := drawConfig(t); ok && c.Directive != "" && sim.Supported(cfg.Design, c) == nil {
			ok = apply(c)
		}
		m := drawMix(t, !cfg.NoSwarm, cfg.Design, env.Backend(), env.Transport())
		steps := rapid.Custom(func(t *rapid.T) sim.Step { return m.drawStep(t, env) })
		for i := 0; ok && i < cfg.MaxSteps; i++ {
			s := steps.Draw(t, "step")
			if s.Directive == "" {
				break
			}
			ok = apply(s)
		}
		if ok {
			apply(sim.NewStep("converge"))
		}
		return failure
	}
	prop = func(t *rapid.T) {
		if rec != nil && rec.Environment != nil {
			harnessFailed(t, rec, "", rec.Environment)
		}
		var failure *sim.Failure
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

// harnessFailed fails t for err, an error of the harness rather than a
// violation, which where said it arose. A failure of the environment is
// recorded in rec (when there is one) and reported from one place, the
// same way every time, so that rapid takes every later run's for the same
// failure.
func harnessFailed(t *rapid.T, rec *Recorder, where string, err error) {
	if err = backend.Environmental(err); errors.Is(err, backend.ErrEnvironment) {
		if rec != nil {
			if rec.Environment == nil {
				rec.Environment = err
			}
			err = rec.Environment
		}
		t.Fatalf("%v", err)
	}
	t.Fatalf("%s%v", where, err)
}
