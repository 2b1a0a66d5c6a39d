package sim

import (
	"context"
	"fmt"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/backend"
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
	// Backend and PostgresURL say where the app database lives (see
	// Config); the zero value means SQLite.
	Backend     backend.Backend
	PostgresURL string
}

// Enumerate re-runs sc once per fault-point pass the scenario makes,
// crashing exactly there: random search can miss a narrow window,
// enumeration cannot. The scenario's converge steps are left out and one
// converge ends every run; outputs are not compared, invariants are. A
// scenario whose backend line names the other backend returns
// ErrOtherBackend. A pass at a point no crash fault strikes (see
// crashable) is not crashed.
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
	// run runs the scenario on a renewed Env, or on a new one, crashing at
	// pass crashAt (0: never), and returns the outcome of the first step
	// that broke an invariant, the fault points passed before the final
	// converge, and for every pass the index of the case that made it.
	run := func(crashAt int) (broke Outcome, trace []system.FaultPoint, stepOfPass []int, err error) {
		if env == nil || cfg.Fresh {
			closeEnv()
			closeEnv = func() {}
			e, done, err := NewEnvIn(ctx, EnvOptions{Dir: cfg.Dir, Design: cfg.Design, Renewable: !cfg.Fresh, Backend: cfg.Backend, PostgresURL: cfg.PostgresURL})
			if err != nil {
				return Outcome{}, nil, nil, err
			}
			env, closeEnv = e, done
		} else if err := env.Renew(ctx); err != nil {
			return Outcome{}, nil, nil, err
		}
		env.CrashAtPass(crashAt)
		for i, c := range append(cases, Case{Line: 0, Text: "converge", Step: NewStep("converge")}) {
			out, err := env.Apply(ctx, c.Step)
			if err != nil {
				return Outcome{}, nil, nil, fmt.Errorf("%s:%d: %w", sc.Name, c.Line, err)
			}
			passed := env.Trace()
			for len(stepOfPass) < len(passed) {
				stepOfPass = append(stepOfPass, i)
			}
			if out.Violation != nil && broke.Violation == nil {
				broke = out
			}
			if c.Step.Directive != "converge" {
				trace = passed
			}
		}
		return broke, trace, stepOfPass, nil
	}
	_, trace, stepOfPass, err := run(0)
	if err != nil {
		return nil, err
	}
	var points []CrashPoint
	for pass := 1; pass <= len(trace); pass++ {
		if !crashable(trace[pass-1]) {
			continue
		}
		broke, _, _, err := run(pass)
		if err != nil {
			return nil, err
		}
		points = append(points, CrashPoint{Pass: pass, Point: trace[pass-1], Case: cases[stepOfPass[pass-1]], Outcome: broke})
	}
	return points, nil
}

// crashable reports whether a crash fault strikes at p, so that the
// model knows what a crash there means. PostgreSQL's before-commit is
// not one: a process that dies there is what commit-lost injects (the
// COMMIT never reaches the server), which the harness does with the
// connection itself.
func crashable(p system.FaultPoint) bool {
	for k := range faultTable {
		if faults.Point(k) == p {
			return true
		}
	}
	return false
}
