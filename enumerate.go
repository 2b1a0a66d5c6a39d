package handoff

import (
	"context"
	"fmt"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
)

// CrashPoint is one run of a scenario with a crash injected at one pass of
// a fault point, then a restart, then convergence with faults off.
type CrashPoint struct {
	Pass  int               // which pass crashed, 1-based over the scenario
	Point system.FaultPoint // where that pass is
	Case  Case              // the scenario step that passed it
	// Outcome is the outcome of the first step that broke an invariant
	// after the crash; zero (no Violation) when none did.
	Outcome
}

// EnumerateConfig says what Enumerate crashes and where.
type EnumerateConfig struct {
	// Design is the design the scenario runs on; the zero value means
	// designs.Handoff.
	Design designs.Design
	// Dir must exist; the runs make their databases in folders inside it.
	Dir string
	// Fresh gives every run new databases. Without it one pair of
	// databases serves every run, emptied between runs as an
	// exploration's are (making two databases for every run cost two
	// fifths of the time): a design that keeps its state anywhere but its
	// files needs Fresh (see VerifyOptions.Fresh).
	Fresh bool
}

// Enumerate re-runs sc once per fault-point pass the scenario makes,
// crashing exactly there: random search can miss a narrow window,
// enumeration cannot. The scenario's converge steps are left out and one
// converge ends every run; outputs are not compared, invariants are. It
// runs on SQLite: a scenario whose backend line names PostgreSQL returns
// ErrOtherBackend.
func Enumerate(ctx context.Context, sc Scenario, cfg EnumerateConfig) ([]CrashPoint, error) {
	var cases []Case
	for _, c := range sc.Cases {
		if c.Step.Directive == "design" {
			return nil, fmt.Errorf("%s:%d: %w: enumerate runs the design it is given; remove the design line", sc.Name, c.Line, ErrScenario)
		}
		if c.Step.Directive != "converge" {
			cases = append(cases, c)
		}
	}
	var env *Env
	closeEnv := func() {}
	defer func() { closeEnv() }()
	// run runs the scenario on a renewed Env, or on a new one.
	run := func(crashAt int) (enumerationResult, error) {
		if env == nil || cfg.Fresh {
			closeEnv()
			closeEnv = func() {}
			e, done, err := newEnvIn(ctx, envOptions{Dir: cfg.Dir, Design: cfg.Design, Renewable: !cfg.Fresh})
			if err != nil {
				return enumerationResult{}, err
			}
			env, closeEnv = e, done
		} else if err := env.renew(ctx); err != nil {
			return enumerationResult{}, err
		}
		return enumerationRun(ctx, env, sc.Name, cases, crashAt)
	}
	baseline, err := run(0)
	if err != nil {
		return nil, err
	}
	var points []CrashPoint
	for pass := 1; pass <= len(baseline.trace); pass++ {
		r, err := run(pass)
		if err != nil {
			return nil, err
		}
		points = append(points, CrashPoint{
			Pass: pass, Point: baseline.trace[pass-1], Case: cases[baseline.stepOfPass[pass-1]],
			Outcome: r.broke,
		})
	}
	return points, nil
}

// enumerationResult is what one run of Enumerate saw.
type enumerationResult struct {
	trace      []system.FaultPoint
	stepOfPass []int   // for every pass, the index of the case that made it
	broke      Outcome // the outcome of the first step that broke an invariant
}

// enumerationRun runs cases on env, new or renewed, crashing at pass
// crashAt (0: never), then converges.
func enumerationRun(ctx context.Context, env *Env, name string, cases []Case, crashAt int) (enumerationResult, error) {
	var res enumerationResult
	env.CrashAtPass(crashAt)
	for i, c := range append(cases, Case{Line: 0, Text: "converge", Step: NewStep("converge")}) {
		out, err := env.Apply(ctx, c.Step)
		if err != nil {
			return res, fmt.Errorf("%s:%d: %w", name, c.Line, err)
		}
		trace := env.Trace()
		for len(res.stepOfPass) < len(trace) {
			res.stepOfPass = append(res.stepOfPass, i)
		}
		if out.Violation != nil && res.broke.Violation == nil {
			res.broke = out
		}
		if c.Step.Directive != "converge" {
			res.trace = trace
		}
	}
	return res, nil
}
