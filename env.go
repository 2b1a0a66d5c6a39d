package handoff

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// Config says what an Env runs and where.
type Config struct {
	// Design is the design under test; the zero value means designs.Handoff.
	Design designs.Design
	// Dir holds the two database files (app.db, crm.db). It must exist.
	Dir string
	// Durability of every commit. The simulation uses system.ProcessSafe:
	// its restarts model process crashes, which lose nothing the operating
	// system holds.
	Durability system.Durability
	// Stats, if not nil, counts what the steps did.
	Stats *Stats
}

// simulationClock is the clock of every simulated system: time stands
// still at one instant, so that nothing a step does depends on when it
// runs.
func simulationClock() time.Time { return time.UnixMilli(model.ScenarioStart).UTC() }

// Env applies scenario steps to the reference model and to the real
// databases of a design, side by side, and checks the invariants of SPEC
// after every step. It keeps what an observer outside the system would:
// how often the worker sent each key. Nothing of the system's own survives
// a restart.
type Env struct {
	cfg      Config
	injector faults.Injector
	app      designs.App
	crm      designs.CRM
	model    model.State
	sends    map[string]int
	applied  int
	before   model.Observation
	diverged Disagreement
}

// Disagreement is where the model and the system first disagreed: the
// 1-based index of the step, and the go-cmp diff (-model +system) of
// their observations after it. Both are zero while they agree.
type Disagreement struct {
	Step int
	Diff string
}

// Disagreement returns where the model and the system first disagreed.
func (e *Env) Disagreement() Disagreement { return e.diverged }

// NewEnv opens cfg.Design's databases in cfg.Dir with an empty model.
func NewEnv(ctx context.Context, cfg Config) (*Env, error) {
	if cfg.Design.Name == "" {
		cfg.Design = designs.Handoff
	}
	e := &Env{
		cfg:   cfg,
		model: model.New(system.DefaultMaxAttempts),
		sends: map[string]int{},
	}
	if err := e.open(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// newEnvIn opens design's databases in a new folder inside dir, with the
// simulation's durability, counting into stats (may be nil). The folder
// starts with files (name to content), or empty when files is nil. done
// closes the databases and removes the folder.
func newEnvIn(ctx context.Context, dir string, design designs.Design, files map[string][]byte, stats *Stats) (env *Env, done func(), err error) {
	sub, err := os.MkdirTemp(dir, "env-")
	if err != nil {
		return nil, nil, fmt.Errorf("handoff: %w", err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(sub, name), b, 0o644); err != nil {
			os.RemoveAll(sub)
			return nil, nil, fmt.Errorf("handoff: %w", err)
		}
	}
	env, err = NewEnv(ctx, Config{Design: design, Dir: sub, Durability: system.ProcessSafe, Stats: stats})
	if err != nil {
		os.RemoveAll(sub)
		return nil, nil, err
	}
	return env, func() { env.Close(); os.RemoveAll(sub) }, nil
}

func (e *Env) open(ctx context.Context) error {
	app, err := e.cfg.Design.OpenApp(ctx, filepath.Join(e.cfg.Dir, "app.db"),
		system.Options{Durability: e.cfg.Durability, Hook: e.injector.Hook(), Now: simulationClock, NoBackoff: true, Worker: model.DefaultWorker})
	if err != nil {
		return fmt.Errorf("handoff: opening the app database: %w", err)
	}
	crm, err := e.cfg.Design.OpenCRM(ctx, filepath.Join(e.cfg.Dir, "crm.db"), e.cfg.Durability)
	if err != nil {
		app.Close()
		return fmt.Errorf("handoff: opening the receiver database: %w", err)
	}
	e.app, e.crm = app, crm
	return nil
}

// Close closes every database handle. The files stay in Dir.
func (e *Env) Close() error {
	if e.app == nil {
		return nil
	}
	err := errors.Join(e.app.Close(), e.crm.Close())
	e.app, e.crm = nil, nil
	return err
}

// restart closes every handle and reopens both databases from their files.
func (e *Env) restart(ctx context.Context) error {
	if err := e.Close(); err != nil {
		return fmt.Errorf("handoff: restart: %w", err)
	}
	if err := e.open(ctx); err != nil {
		return err
	}
	// The worker starts again: nothing it had in flight survived.
	if _, err := e.app.Recover(ctx); err != nil {
		return fmt.Errorf("handoff: restart: %w", err)
	}
	return nil
}

// CrashAtPass makes the n-th fault point the Env's system passes (1-based,
// counted from NewEnv) crash, whichever point it is.
func (e *Env) CrashAtPass(n int) { e.injector.CrashAtPass(n) }

// Trace returns the fault points the system has passed, in order.
func (e *Env) Trace() []system.FaultPoint { return e.injector.Trace() }

// Design is the design the Env runs.
func (e *Env) Design() designs.Design { return e.cfg.Design }

// Outcome is what one step did: the output a scenario file expects, and
// the first invariant it broke, if any.
type Outcome struct {
	Output    string
	Violation *Violation
	// Answer is the system's answer; Key the action key the step worked
	// on, if any; Observed everything observable after the step.
	Answer   Answer
	Key      string
	Observed model.Observation
}

// stepResult is what a handler reports: a line in words, and the system's
// answer and the model's prediction.
type stepResult struct {
	line       string
	got, want  Answer
	key        string // the action key the step worked on
	converging bool   // the step claims convergence: invariant 7 applies
	// fired is the fault that took effect: a crash struck, or a request
	// went out over a faulty network.
	fired faults.Kind
	// ifUnchanged is added to line when the step changed nothing observable.
	ifUnchanged string
}

// handlers maps every directive to the one method that runs it, each in
// a file of its own (directive_NAME.go).
var handlers = map[string]func(*Env, context.Context, Step) (stepResult, error){
	"approve":  (*Env).approve,
	"deliver":  (*Env).deliver,
	"restart":  (*Env).restartStep,
	"converge": (*Env).converge,
	"design":   (*Env).design,
}

// Apply runs one step against model and system and checks the invariants.
// An error means the step could not run (ErrScenario for bad scenario
// text, or a failure of the harness itself); what the system answers, its
// errors included, is output.
func (e *Env) Apply(ctx context.Context, s Step) (Outcome, error) {
	h, ok := handlers[s.Directive]
	if !ok {
		return Outcome{}, fmt.Errorf("%w: unknown directive %q (want one of %s)", ErrScenario, s.Directive, strings.Join(slices.Sorted(maps.Keys(handlers)), ", "))
	}
	r, err := h(e, ctx, s)
	if err != nil {
		return Outcome{}, err
	}
	e.applied++
	obs, err := e.observe(ctx)
	if err != nil {
		return Outcome{}, err
	}
	v := checkInvariants(checkInput{obs: obs, model: e.model, sends: e.sends, got: r.got, want: r.want, converging: r.converging})
	if e.diverged.Step == 0 && !cmp.Equal(e.model.Observation, obs) {
		e.diverged = Disagreement{Step: e.applied, Diff: cmp.Diff(e.model.Observation, obs)}
	}
	if r.ifUnchanged != "" && cmp.Equal(obs, e.before) {
		r.line += r.ifUnchanged
	}
	e.cfg.Stats.count(s, r, e.before, obs)
	e.before = obs
	out := append([]string{r.line}, render(obs)...)
	if v != nil {
		out = append(out, v.String())
	}
	return Outcome{Output: strings.Join(out, "\n"), Violation: v, Answer: r.got, Key: r.key, Observed: obs}, nil
}

// observe reads everything observable of the system.
func (e *Env) observe(ctx context.Context) (model.Observation, error) {
	snap, err := e.app.Snapshot(ctx)
	if err != nil {
		return model.Observation{}, fmt.Errorf("handoff: reading the app database: %w", err)
	}
	tasks, err := e.crm.Tasks(ctx)
	if err != nil {
		return model.Observation{}, fmt.Errorf("handoff: reading the receiver database: %w", err)
	}
	return observation(snap, tasks), nil
}

// faultArg reads the step's fault= argument, one of allowed, or "".
func faultArg(s Step, allowed ...faults.Kind) (faults.Kind, error) {
	v, ok := s.Arg("fault")
	if !ok {
		return "", nil
	}
	k, err := faults.ParseKind(v, allowed...)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrScenario, s.Directive, err)
	}
	return k, nil
}
