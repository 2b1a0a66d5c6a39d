package handoff

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
func simulationClock() time.Time { return time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC) }

// Env applies scenario steps to the reference model and to the real
// databases of a design, side by side, and checks the invariants of SPEC
// after every step. It keeps what an observer outside the system would:
// how often the worker sent each key. Nothing of the system's own survives
// a restart.
type Env struct {
	ctx      context.Context
	cfg      Config
	injector faults.Injector
	app      designs.App
	crm      designs.CRM
	model    model.State
	sends    map[string]int
	applied  int
	before   model.Observation

	// Disagreement is the go-cmp diff (-model +system) at the first step
	// where the system's observation and the model's differed, and Step the
	// 1-based index of that step; both are zero while they agree.
	Disagreement     string
	DisagreementStep int
}

// NewEnv opens cfg.Design's databases in cfg.Dir with an empty model.
func NewEnv(ctx context.Context, cfg Config) (*Env, error) {
	if cfg.Design.Name == "" {
		cfg.Design = designs.Handoff
	}
	e := &Env{
		ctx:   ctx,
		cfg:   cfg,
		model: model.New(system.DefaultMaxAttempts),
		sends: map[string]int{},
	}
	if err := e.open(); err != nil {
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

func (e *Env) open() error {
	app, err := e.cfg.Design.OpenApp(e.ctx, filepath.Join(e.cfg.Dir, "app.db"),
		system.Options{Durability: e.cfg.Durability, Hook: e.injector.Hook(), Now: simulationClock})
	if err != nil {
		return fmt.Errorf("handoff: opening the app database: %w", err)
	}
	crm, err := e.cfg.Design.OpenCRM(e.ctx, filepath.Join(e.cfg.Dir, "crm.db"), e.cfg.Durability)
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
func (e *Env) restart() error {
	if err := e.Close(); err != nil {
		return fmt.Errorf("handoff: restart: %w", err)
	}
	return e.open()
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

// handlers maps every directive to the one method that runs it.
var handlers = map[string]func(*Env, Step) (stepResult, error){
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
func (e *Env) Apply(s Step) (Outcome, error) {
	h, ok := handlers[s.Directive]
	if !ok {
		return Outcome{}, fmt.Errorf("%w: unknown directive %q (want approve, deliver, restart, converge or design)", ErrScenario, s.Directive)
	}
	r, err := h(e, s)
	if err != nil {
		return Outcome{}, err
	}
	e.applied++
	obs, err := e.observe()
	if err != nil {
		return Outcome{}, err
	}
	v := checkInvariants(checkInput{obs: obs, model: e.model, sends: e.sends, got: r.got, want: r.want, converging: r.converging})
	if e.Disagreement == "" && !cmp.Equal(e.model.Observation, obs) {
		e.Disagreement, e.DisagreementStep = cmp.Diff(e.model.Observation, obs), e.applied
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
func (e *Env) observe() (model.Observation, error) {
	snap, err := e.app.Snapshot(e.ctx)
	if err != nil {
		return model.Observation{}, fmt.Errorf("handoff: reading the app database: %w", err)
	}
	tasks, err := e.crm.Tasks(e.ctx)
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

// approve records an approval; case and title may be missing (then empty).
//
//	approve case=case-104 title="Call about the approved repair plan" [fault=crash-between-inserts]
func (e *Env) approve(s Step) (stepResult, error) {
	if err := s.only("case", "title", "fault"); err != nil {
		return stepResult{}, err
	}
	fault, err := faultArg(s, faults.CrashBetweenInserts)
	if err != nil {
		return stepResult{}, err
	}
	caseID, _ := s.Arg("case")
	title, _ := s.Arg("title")

	e.injector.Arm(FaultPoint(fault))
	key, err := e.app.RecordApproval(e.ctx, caseID, title)
	e.injector.Arm("")
	var r stepResult
	crashed := e.injector.Crashed()
	switch {
	case crashed != "":
		r.line, r.got, r.fired = fmt.Sprintf("crashed at %s; restarted", crashed), Answer{Kind: Crashed}, fault
		if err := e.restart(); err != nil {
			return stepResult{}, err
		}
	case err == nil:
		a, _ := system.NewApproval(caseID, title) // valid: the system just accepted it
		r.line, r.got = fmt.Sprintf("approved %s %s", key, visible(a.Payload)), Answer{Kind: Approved, Key: key}
		r.ifUnchanged = " (already approved: nothing changed)"
	default:
		r.line, r.got = "refused: "+err.Error(), Answer{Kind: refusal(err)}
	}

	// The model hears of the crash the step asked for, or of one that
	// struck where the harness enumerates crash points.
	crash := faultTable[fault].crashesApproval || crashAt(crashed).crashesApproval
	var verdict model.Verdict
	e.model, verdict, key = e.model.Approve(caseID, title, crash)
	r.key, r.want = key, Answer{Kind: verdictAnswers[verdict]}
	if r.want.Kind == Approved {
		r.want.Key = key
	}
	return r, nil
}

// refusal classifies a refused approval for comparison with the model.
func refusal(err error) AnswerKind {
	switch {
	case errors.Is(err, system.ErrInvalidInput):
		return Invalid
	case errors.Is(err, system.ErrKeyConflict):
		return Conflict
	}
	return Error
}

// deliver makes one delivery attempt with an optional fault.
//
//	deliver [fault=duplicate-request|foreign-task|offline|lost-reply|crash-after-reply|crash-before-send]
func (e *Env) deliver(s Step) (stepResult, error) {
	if err := s.only("fault"); err != nil {
		return stepResult{}, err
	}
	fault, err := faultArg(s, faults.DeliveryKinds...)
	if err != nil {
		return stepResult{}, err
	}
	sent := e.sendCount()
	e.injector.Arm(FaultPoint(fault))
	d, err := e.app.DeliverOne(e.ctx, faults.Counted(e.sends, faults.Network(fault, e.crm)))
	e.injector.Arm("")
	var r stepResult
	if FaultPoint(fault) == "" && e.sendCount() > sent {
		r.fired = fault
	}
	crashed := e.injector.Crashed()
	switch {
	case crashed != "":
		r.line, r.got, r.fired = fmt.Sprintf("crashed at %s delivering %s; restarted", crashed, d.Key), Answer{Kind: Crashed, Key: d.Key}, fault
		if err := e.restart(); err != nil {
			return stepResult{}, err
		}
	case err != nil:
		r.line, r.got = "error: "+err.Error(), Answer{Kind: Error}
	default:
		r.line, r.got = e.describe(d), Answer{Kind: workerAnswers[d.Result], Key: d.Key}
	}

	effect := faultTable[fault]
	in := model.Delivery{Network: effect.network, Crash: effect.crash, Foreign: faults.ForeignPayload}
	if c := crashAt(crashed).crash; c != model.NoCrash { // also a crash the harness enumerated
		in.Crash = c
	}
	var result model.Result
	e.model, result, r.key = e.model.Deliver(in)
	r.want = Answer{Kind: resultAnswers[result], Key: r.key}
	return r, nil
}

// sendCount is how many requests the worker has sent in all.
func (e *Env) sendCount() int {
	n := 0
	for _, c := range e.sends {
		n += c
	}
	return n
}

// describe says in words what a delivery did.
func (e *Env) describe(d system.Delivery) string {
	switch {
	case d.Result == system.Idle:
		blocked := 0
		for _, r := range e.before.Outbox {
			if r.State == model.Blocked {
				blocked++
			}
		}
		if blocked > 0 {
			return fmt.Sprintf("idle: nothing pending, but %s for a person", plural(blocked, "blocked row waits", "blocked rows wait"))
		}
		return "idle: nothing pending"
	case d.Result == system.ResultSent:
		return fmt.Sprintf("sent %s: task %d", d.Key, d.RemoteID)
	case d.Result == system.ResultPending:
		return fmt.Sprintf("pending %s: %s failure, the retry sends the same key", d.Key, d.LastError)
	case d.LastError == system.LastErrorConflict:
		return fmt.Sprintf("blocked %s: the receiver holds other content for the key", d.Key)
	case d.LastError == system.LastErrorBudgetExhausted:
		return fmt.Sprintf("blocked %s: budget exhausted after %d attempts, nothing sent", d.Key, d.Attempts)
	}
	return fmt.Sprintf("blocked %s: %s failure on the last of %d attempts", d.Key, d.LastError, d.Attempts)
}

// restartStep closes every database handle and reopens it from its file.
//
//	restart
func (e *Env) restartStep(s Step) (stepResult, error) {
	if err := s.only(); err != nil {
		return stepResult{}, err
	}
	if err := e.restart(); err != nil {
		return stepResult{}, err
	}
	return stepResult{line: "restarted: every handle closed and reopened from its file", got: Answer{Kind: Restarted}, want: Answer{Kind: Restarted}, fired: faults.Restart}, nil
}

// converge turns faults off and delivers until the worker is idle.
//
//	converge
func (e *Env) converge(s Step) (stepResult, error) {
	if err := s.only(); err != nil {
		return stepResult{}, err
	}
	// No correct worker needs more than one claim per attempt, one block
	// and one idle answer per row.
	limit := (len(e.before.Outbox)+1)*(system.DefaultMaxAttempts+2) + 1
	r := stepResult{converging: true}
	n := 0
	for {
		d, err := e.app.DeliverOne(e.ctx, faults.Counted(e.sends, e.crm))
		n++
		if err != nil {
			r.line, r.got = fmt.Sprintf("error on delivery %d: %v", n, err), Answer{Kind: Error}
			break
		}
		if d.Result == system.Idle {
			r.line, r.got = "converged after "+plural(n, "delivery", "deliveries"), Answer{Kind: Idle, N: n}
			break
		}
		if n == limit {
			r.line, r.got = fmt.Sprintf("not idle after %d deliveries", n), Answer{Kind: Busy, N: n}
			break
		}
	}
	var m int
	e.model, m = e.model.Converge()
	r.want = Answer{Kind: Idle, N: m}
	return r, nil
}

// design switches the Env to another design; only the first step may.
//
//	design name=two-writes
func (e *Env) design(s Step) (stepResult, error) {
	if err := s.only("name"); err != nil {
		return stepResult{}, err
	}
	if e.applied > 0 {
		return stepResult{}, fmt.Errorf("%w: design must be the first step", ErrScenario)
	}
	name, _ := s.Arg("name")
	d, err := designs.Lookup(name)
	if err != nil {
		return stepResult{}, fmt.Errorf("%w: %v", ErrScenario, err)
	}
	if d.Name != e.cfg.Design.Name {
		if err := e.switchDesign(d); err != nil {
			return stepResult{}, err
		}
	}
	return stepResult{line: fmt.Sprintf("design %s: %s", d.Name, d.Summary), got: Answer{Kind: Designed}, want: Answer{Kind: Designed}}, nil
}

// switchDesign closes the databases, removes their files and opens d's.
func (e *Env) switchDesign(d designs.Design) error {
	if err := e.Close(); err != nil {
		return err
	}
	for _, f := range []string{"app.db", "crm.db"} {
		if err := os.Remove(filepath.Join(e.cfg.Dir, f)); err != nil {
			return fmt.Errorf("handoff: switching design: %w", err)
		}
	}
	e.cfg.Design = d
	return e.open()
}
