package sim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/internal/sessions"
	"github.com/outboxlab/handoff/internal/sqlwrap"
	"github.com/outboxlab/handoff/internal/textdiff"
	"github.com/outboxlab/handoff/internal/violation"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// Config says what an Env runs and where.
type Config struct {
	// Design is the design under test; the zero value means designs.Handoff.
	Design designs.Design
	// Dir holds the two database files (app.db, crm.db). It must exist.
	Dir string
	// Backend is where the app database lives; the zero value means
	// SQLite. On Postgres the Env makes a schema of its own on the server
	// PostgresURL names, instead of app.db, and drops it when it closes.
	Backend     backend.Backend
	PostgresURL string
	// ConnectWait is how long a connection to PostgreSQL waits for a
	// server that is full or starting; 0 means system.DefaultConnectWait.
	ConnectWait time.Duration
	// Durability of every commit. The simulation uses system.ProcessSafe:
	// its restarts model process crashes, which lose nothing the operating
	// system holds.
	Durability system.Durability
	// Stats, if not nil, counts what the steps did.
	Stats *Stats
	// Transport carries the worker's requests to the receiver; the zero
	// value means InProcess. A transport step changes it.
	Transport Transport
}

// Env applies scenario steps to the reference model and to the real
// databases of a design, side by side, and checks the invariants of the spec
// after every step. It keeps what an observer outside the system would:
// how often the worker sent each key. Nothing of the system's own survives
// a restart.
type Env struct {
	cfg      Config
	injector faults.Injector
	app      designs.App
	crm      designs.CRM
	// workers are the named workers of the scenario, each its own handle
	// on the app database, as another process would have.
	workers map[string]*worker
	// schema, on PostgreSQL, holds the app database.
	schema *backend.Schema
	// holders are the harness's own connections on the files, by file
	// name: what a database fault holds the write lock with, and checks
	// the file with (see withDatabaseFault); serverDB, on PostgreSQL, its
	// connection to the server (see server).
	holders  map[string]*sql.DB
	serverDB *sql.DB
	// commitLoss is the commit-lost or commit-reply-lost fault of the
	// step that runs until it is armed in commitCut, at the step's
	// before-commit point.
	commitLoss faults.Kind
	commitCut  faults.CommitCut

	sequence // what the oracle knows of the sequence so far
	speed    // what only makes the Env fast
}

// sequence is what the harness knows of a sequence, afresh at its
// start (see begin): the model, the virtual clock, and what an observer
// outside the system saw. The invariants are checked on it alone.
type sequence struct {
	model    model.State
	sends    map[string]int
	applied  int
	before   model.Observation
	diverged Disagreement
	// started is set by the first step that is not design, config,
	// transport or backend.
	started bool
	// burst is the fault the last step fired, and how many steps in a row,
	// up to that one, fired it (see FaultBurst); zero after a step that
	// fired none.
	burst struct {
		fault faults.Kind
		n     int
	}
	// now is the virtual clock in milliseconds since the Unix epoch: time
	// moves only with a tick step (and converge), so nothing a step does
	// depends on when it runs.
	now int64
	// jitter is what the next backoff draws: a settle step sets it.
	jitter time.Duration
	// ceilings are the backoff ceilings the system gave the jitter source
	// during the step (invariant 10).
	ceilings []time.Duration
	// actedFence is, for a key a person acted on, the fence the action
	// left: a send of an older claim (a zombie's) is not the row's to count.
	actedFence map[string]int64
}

// speed is what only makes an Env fast: handles, connections and
// sessions kept from one use to the next instead of opened again. The
// oracle reads none of it; the one shortcut an observation takes (see
// lane.appChanged, lane.crmChanged) has a test that tries to make it
// miss a change (TestObservationCacheMissesNoChange).
type speed struct {
	// idle are handles no crash closed, kept for a later sequence or
	// config (see park); lane, if not nil, holds the files of an Env that
	// runs sequence after sequence (see renew).
	idle idleHandles
	lane *lane
	// pools, on PostgreSQL, are each worker's connections to the
	// server, by worker name, which its handles share from one sequence
	// to the next and across its restarts (see pool).
	pools map[string]*system.PostgresPool
	// keeper, on PostgreSQL, is what the workers connect to the server
	// through: it keeps the sessions of the connections that commitCut
	// closes (see sessions.Keeper).
	keeper *sessions.Keeper
	// kept, on SQLite, keeps the connections of the handles a step
	// closes for the next handle that opens the same way, with their
	// prepared statements (see sqlwrap.Conns.Keep): a simulated crash
	// closes every handle of a process and opens them again, and a new
	// connection costs SQLite a parse of the whole schema. Nothing the
	// system or the oracle sees depends on it: a connection keeps no
	// state beyond its transaction, and one closed with a transaction
	// open is closed for good (SQLite rolls it back).
	kept sqlwrap.Conns
}

// worker is a named worker: its handle, the claim it holds, and what its
// send heard until it settles.
type worker struct {
	app     designs.App
	phases  designs.Phases
	claim   *system.Claim
	heard   bool
	taskID  int64
	sendErr error
	// pipe, for a pipelined worker, is its Pipe and net its receiver.
	pipe designs.Pipe
	net  *pipeNet
}

// clock is the systems' clock: the Env's virtual time.
func (e *Env) clock() time.Time { return time.UnixMilli(e.now).UTC() }

// systemOptions are the system's options for the model's configuration,
// on the Env's clock, drawing the Env's jitter.
func (e *Env) systemOptions(worker string, hook system.Hook) system.Options {
	c := e.model.Config
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	var wrap func(net.Conn) net.Conn
	var dial func(context.Context, string, string) (net.Conn, error)
	wrapSQLite := e.kept.Wrap
	if e.schema != nil {
		wrap, dial, wrapSQLite = e.commitCut.Wrap(worker), e.keeper.Dial, nil
	}
	return system.Options{Dial: dial, MaxConns: 1, ConnectWait: e.cfg.ConnectWait,
		Durability: e.cfg.Durability, Worker: worker, BusyTimeout: busyTimeout,
		MaxAttempts: c.MaxAttempts, Lease: ms(c.Lease), SendTimeout: ms(c.SendTimeout),
		BackoffBase: ms(c.BackoffBase), BackoffCap: ms(c.BackoffCap), NoBackoff: c.BackoffBase == 0,
		MaxAge: ms(c.MaxAge), Retention: ms(c.Retention),
		Harness: system.Harness{
			Hook: hook, Now: e.clock, WrapConn: wrap, WrapSQLite: wrapSQLite,
			Jitter: func(ceiling time.Duration) time.Duration {
				e.ceilings = append(e.ceilings, ceiling)
				return e.jitter
			},
			Background: func(f func()) { f() }, // a Pipeline's background, in line: the model's order
		},
	}
}

// Disagreement is where the model and the system first disagreed: the
// 1-based index of the step, and the diff (-model +system, textdiff.Values)
// of their observations after it. Both are zero while they agree.
type Disagreement struct {
	Step int
	Diff string
}

// diffContext is how many unchanged lines a diff of the model's and the
// system's values keeps around each change.
const diffContext = 2

// diskFull reports whether the folder of the Env's files has no room
// for another 64 KiB: then an invariant a step broke says nothing of the
// design (a write that did not fit with no fault to fill a database is
// the environment's failure).
func (e *Env) diskFull() bool {
	f, err := os.CreateTemp(e.cfg.Dir, "room-")
	if err != nil {
		return errors.Is(err, syscall.ENOSPC)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err = f.Write(make([]byte, 64<<10)); err == nil {
		err = f.Sync()
	}
	return errors.Is(err, syscall.ENOSPC)
}

// Disagreement returns where the model and the system first disagreed.
func (e *Env) Disagreement() Disagreement { return e.diverged }

// NewEnv opens cfg.Design's databases in cfg.Dir with an empty model.
func NewEnv(ctx context.Context, cfg Config) (*Env, error) {
	if cfg.Design.Name == "" {
		cfg.Design = designs.Handoff
	}
	if cfg.Transport == "" {
		cfg.Transport = InProcess
	}
	if cfg.Backend == "" {
		cfg.Backend = backend.SQLite
	}
	if err := cfg.Design.Check(); err != nil {
		return nil, err
	}
	e := &Env{cfg: cfg, speed: speed{kept: sqlwrap.Conns{Keep: true}}}
	e.begin()
	if err := e.makeAppDatabase(ctx); err != nil {
		return nil, err
	}
	if err := e.open(ctx); err != nil {
		return nil, errors.Join(err, e.kept.Drop(), e.closeKeeper(), e.schema.Close(ctx))
	}
	return e, nil
}

// begin starts what a new sequence knows afresh: the model, the clock,
// the workers and what the harness observed.
func (e *Env) begin() {
	m := model.New(system.DefaultMaxAttempts)
	m.RestartKeepsLeases = keepsLeases(e.cfg.Design)
	m.ClaimsDueFirst = e.cfg.Design.Supports.DueFirst
	m.PipeOneCommit = e.cfg.Design.Supports.PipelineOneCommit
	e.sequence = sequence{model: m, sends: map[string]int{}, actedFence: map[string]int64{}, now: m.Now}
	e.workers = map[string]*worker{}
	e.injector = faults.Injector{}
}

// EnvOptions say where NewEnvIn makes an Env and what it runs.
type EnvOptions struct {
	// Dir is where the Env makes the folder of its databases.
	Dir string
	// Design is the design it runs; the zero value means designs.Handoff.
	Design designs.Design
	// Stats (may be nil) counts what its steps do.
	Stats *Stats
	// Backend, PostgresURL and ConnectWait are the Env's (see Config).
	Backend     backend.Backend
	PostgresURL string
	ConnectWait time.Duration
	// Renewable readies the Env to run sequence after sequence on the
	// same files (see renew).
	Renewable bool
}

// NewEnvIn opens a design's databases in a new folder inside opts.Dir,
// with the simulation's durability. done closes the databases and removes
// the folder.
func NewEnvIn(ctx context.Context, opts EnvOptions) (env *Env, done func(), err error) {
	sub, err := os.MkdirTemp(opts.Dir, "env-")
	if err != nil {
		return nil, nil, fmt.Errorf("handoff: %w", err)
	}
	env, err = NewEnv(ctx, Config{Design: opts.Design, Dir: sub, Durability: system.ProcessSafe, Stats: opts.Stats,
		Backend: opts.Backend, PostgresURL: opts.PostgresURL, ConnectWait: opts.ConnectWait})
	if err == nil && opts.Renewable {
		if env.lane, err = openLane(ctx, env); err != nil {
			env.Close()
		}
	}
	if err != nil {
		os.RemoveAll(sub)
		return nil, nil, err
	}
	return env, func() { env.Close(); os.RemoveAll(sub) }, nil
}

// open opens the default worker's and the CRM's handles from their files.
func (e *Env) open(ctx context.Context) error {
	app, err := e.openApp(ctx)
	if err != nil {
		return err
	}
	crm, err := e.openCRM(ctx)
	if err != nil {
		app.Close()
		return err
	}
	return e.attach(app, crm)
}

// attach makes app and crm the default worker's and the receiver's
// handles, crm carried over the Env's transport; when it cannot be, it
// closes both.
func (e *Env) attach(app designs.App, crm designs.CRM) error {
	carried, err := carry(crm, e.cfg.Transport)
	if err != nil {
		app.Close()
		crm.Close()
		return err
	}
	e.app, e.crm = app, carried
	return nil
}

// openApp opens the default worker's handle on the app database, with the
// fault injector's hook (and, on PostgreSQL, the commit-lost fault's).
func (e *Env) openApp(ctx context.Context) (designs.App, error) {
	app, err := e.openDesignApp(ctx, e.systemOptions(model.DefaultWorker, e.hook(model.DefaultWorker, e.injector.Hook())))
	if err != nil {
		return nil, fmt.Errorf("handoff: opening the app database: %w", err)
	}
	return app, nil
}

// openDesignApp opens a handle of the design on the app database with
// opts, and checks that it implements what the design's capabilities ask
// for.
func (e *Env) openDesignApp(ctx context.Context, opts system.Options) (designs.App, error) {
	if e.schema != nil {
		var err error
		if opts.Pool, err = e.pool(ctx, opts); err != nil {
			return nil, err
		}
	}
	app, err := e.cfg.Design.OpenApp(ctx, e.appTarget(), opts)
	if err != nil {
		return nil, err
	}
	if err := e.cfg.Design.CheckApp(app); err != nil {
		app.Close()
		return nil, err
	}
	return app, nil
}

// keepsLeases reports whether design d's workers keep their leases when
// they start again: d has leases, and its restarts do not release them.
func keepsLeases(d designs.Design) bool {
	return d.Supports.Leases && !d.Supports.RestartReleases
}

// recoverLeases has the worker of app release its leases, if it can and
// the design does not keep them (see keepsLeases): it starts, or starts
// again after its process died.
func (e *Env) recoverLeases(ctx context.Context, app designs.App) error {
	if keepsLeases(e.cfg.Design) {
		return nil
	}
	if l, ok := app.(designs.Leaser); ok {
		_, err := l.Recover(ctx)
		return err
	}
	return nil
}

// openCRM opens the receiver's handle on its database.
func (e *Env) openCRM(ctx context.Context) (designs.CRM, error) {
	crm, err := e.cfg.Design.OpenCRM(ctx, filepath.Join(e.cfg.Dir, crmFile), system.CRMOptions{
		Durability: e.cfg.Durability, Retention: time.Duration(e.model.Retention) * time.Millisecond, Now: e.clock, BusyTimeout: busyTimeout,
		WrapSQLite: e.kept.Wrap})
	if err != nil {
		return nil, fmt.Errorf("handoff: opening the receiver database: %w", err)
	}
	return crm, nil
}

// Close closes every database handle, the named workers' too. The files
// stay in Dir; the schema of an app database on PostgreSQL is dropped,
// and its name let go of.
func (e *Env) Close() error {
	err := e.closeDatabases()
	for name, p := range e.pools {
		p.Close()
		delete(e.pools, name)
	}
	return errors.Join(err, e.closeKeeper(), e.schema.Release(context.Background()))
}

// closeKeeper ends the sessions the Env's Keeper holds, if it has one.
func (e *Env) closeKeeper() error {
	if e.keeper == nil {
		return nil
	}
	return e.keeper.Close()
}

// pool returns the connections to the server of the worker that opts
// name, made on first use. A worker's handles share them: the real
// design's Outboxes take their connections from it (see
// system.Options.Pool), so that a simulated restart, which closes every
// handle and opens it again, costs the server no new session, each of
// which it starts a process for. A connection a commit fault ends is
// made anew on the session the Env's Keeper kept (see sessions.Keeper).
// The connections outlive the handles as the server's sessions would not
// outlive a process: the system keeps nothing in a session beyond a
// transaction, and a handle closed with a transaction open (a crash
// inside it) gives its connection back to the pool only rolled back, or
// has it closed. Another design opens connections of its own.
func (e *Env) pool(ctx context.Context, opts system.Options) (*system.PostgresPool, error) {
	if p, ok := e.pools[opts.Worker]; ok {
		return p, nil
	}
	p, err := system.NewPostgresPool(ctx, e.appTarget(), opts)
	if err != nil {
		return nil, fmt.Errorf("handoff: connecting worker %s to the app database: %w", opts.Worker, err)
	}
	if e.pools == nil {
		e.pools = map[string]*system.PostgresPool{}
	}
	e.pools[opts.Worker] = p
	return p, nil
}

// closeDatabases closes every database handle, the named workers' too,
// and drops the schema of an app database on PostgreSQL, whose name the
// Env keeps: the next open makes it again.
func (e *Env) closeDatabases() error {
	err := errors.Join(e.closeWorkers(), e.idle.close(), e.lane.close(), e.closeHolders())
	if e.app != nil {
		err = errors.Join(err, e.app.Close(), e.crm.Close())
	}
	e.app, e.crm, e.lane = nil, nil, nil
	return errors.Join(err, e.kept.Drop(), e.schema.Drop(context.Background()))
}

// worker returns the named worker's handle. On first use, and after its
// process died, the worker starts: it opens its handle (on first use in a
// sequence, an idle one where there is one: see park) and releases every
// lease held under its name, and the model hears of it.
func (e *Env) worker(ctx context.Context, s Step) (string, *worker, error) {
	name, ok := s.Arg("worker")
	switch {
	case !ok || name == "":
		return "", nil, fmt.Errorf("%w: %s needs worker=NAME", ErrScenario, s.Directive)
	case name == model.DefaultWorker:
		return "", nil, fmt.Errorf("%w: worker %q is the one deliver and converge use; name another", ErrScenario, name)
	}
	if w, ok := e.workers[name]; ok {
		return name, w, nil
	}
	app, ok, err := e.idle.takeApp(e.handleKey(name))
	if err != nil {
		return "", nil, fmt.Errorf("handoff: closing an idle handle of worker %s: %w", name, err)
	}
	if !ok {
		if app, err = e.openDesignApp(ctx, e.systemOptions(name, e.hook(name, e.namedHook(name)))); err != nil {
			return "", nil, fmt.Errorf("handoff: opening the app database for worker %s: %w", name, err)
		}
	}
	if err := e.recoverLeases(ctx, app); err != nil {
		app.Close()
		return "", nil, fmt.Errorf("handoff: worker %s starting: %w", name, err)
	}
	e.model, _ = e.model.Restart(name)
	w := &worker{app: app, phases: app.(designs.Phases)} // a named worker needs Workers, hence Phases (see supported, CheckApp)
	e.workers[name] = w
	return name, w, nil
}

// restart is the default worker's process dying and starting again: its
// handles are closed and reopened from their files, and it releases its
// leases. The named workers, other processes, go on.
func (e *Env) restart(ctx context.Context) error {
	err := errors.Join(e.app.Close(), e.crm.Close())
	e.app, e.crm = nil, nil
	if err != nil {
		return fmt.Errorf("handoff: restart: %w", err)
	}
	if err := e.open(ctx); err != nil {
		return err
	}
	// The worker starts again: nothing it had in flight survived.
	if err := e.recoverLeases(ctx, e.app); err != nil {
		return fmt.Errorf("handoff: restart: %w", err)
	}
	return nil
}

// restartAll is every process dying and starting again: the named
// workers start again at their next step.
func (e *Env) restartAll(ctx context.Context) error {
	if err := e.closeWorkers(); err != nil {
		return fmt.Errorf("handoff: restart: %w", err)
	}
	return e.restart(ctx)
}

// closeWorkers closes the named workers' handles.
func (e *Env) closeWorkers() error {
	var err error
	for name, w := range e.workers {
		err = errors.Join(err, w.app.Close())
		delete(e.workers, name)
	}
	return err
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
	Violation *violation.Violation
	// Answer is the system's answer; Key the action key the step worked
	// on, if any; Observed everything observable after the step.
	Answer   Answer
	Key      string
	Observed model.Observation
	// Picture is what a report draws of the step (see picture.go).
	Picture Picture
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
	// claimedForSend is the key of a claim that leads to a send
	// (invariant 11); "" for any other step.
	claimedForSend string
	// backoffAfter, for a settle or a delivery, is the key and attempt
	// whose transient failure the step's backoffs were drawn for
	// (invariant 10); nil for any other step.
	backoffAfter *attemptOf
	// settling says the step is a named worker's settle that answered
	// (invariant 8).
	settling bool
	// settled, for a settle that wrote a final state, is the row and the
	// fence of the claim it settled (invariant 8), on a design that shows
	// fences.
	settled *fenced
	// auditDiff, after an operator or stale step, is how the system's
	// audit log or stale list differs from the model's (invariant 6); ""
	// when it does not.
	auditDiff string
	// otherwise, for a step whose outcome the model cannot tell apart in
	// advance, is the other outcome it predicts: a full database refuses
	// only a write that needs another page, and how full a file's pages
	// are is no fact of the model's. The handler predicts the fault's
	// effect (want, and the Env's model); Apply takes otherwise instead
	// when the system's answer and state are that outcome's.
	otherwise *prediction
}

// prediction is one outcome the model predicts for a step: its state
// after the step and the step's answer.
type prediction struct {
	model model.State
	want  Answer
}

// attemptOf is a row's key and one of its attempts.
type attemptOf struct {
	key     string
	attempt int
}

// fenced is a row's key and the fence a claim gave it.
type fenced struct {
	key   string
	fence int64
}

// Apply runs one step against model and system and checks the invariants.
// An error means the step could not run (ErrScenario for bad scenario
// text, or a failure of the harness itself); what the system answers, its
// errors included, is output.
func (e *Env) Apply(ctx context.Context, s Step) (Outcome, error) {
	d, ok := directives[s.Directive]
	if !ok {
		return Outcome{}, fmt.Errorf("%w: unknown directive %q (want one of %s)", ErrScenario, s.Directive, strings.Join(slices.Sorted(maps.Keys(directives)), ", "))
	}
	if err := s.Only(d.args...); err != nil {
		return Outcome{}, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	if err := Supported(e.cfg.Design, s); err != nil {
		return Outcome{}, err
	}
	e.ceilings = e.ceilings[:0]
	sentBefore := e.sendCount()
	r, err := d.run(e, ctx, s)
	if err != nil {
		return Outcome{}, err
	}
	if !e.cfg.Design.Supports.Time {
		r.got.At, r.want.At = 0, 0
	}
	e.started = e.started || s.Directive != "design" && s.Directive != "config" && s.Directive != "transport" && s.Directive != "backend"
	e.applied++
	obs, err := e.observe(ctx)
	if err != nil {
		return Outcome{}, err
	}
	if o := r.otherwise; o != nil && r.got == o.want && sameObservation(shown(e.cfg.Design, o.model.Observation), obs) {
		e.model, r.want = o.model, o.want // the write found room
	}
	predicted := e.model
	predicted.Observation = shown(e.cfg.Design, e.model.Observation)
	v := checkInvariants(checkInput{obs: obs, model: predicted, sends: e.sends, got: r.got, want: r.want, converging: r.converging,
		before: e.before, claimedForSend: r.claimedForSend, backoffAfter: r.backoffAfter, ceilings: e.ceilings, settling: r.settling, settled: r.settled, auditDiff: r.auditDiff})
	if v != nil && e.diskFull() {
		return Outcome{}, errors.Join(fmt.Errorf("%w: %s broke invariant %d while the disk under %s has no room: %w",
			backend.ErrEnvironment, s, v.Invariant, e.cfg.Dir, system.ErrFull), e.lane.forget())
	}
	if e.diverged.Step == 0 && !sameObservation(predicted.Observation, obs) {
		e.diverged = Disagreement{Step: e.applied, Diff: textdiff.Values(predicted.Observation, obs, diffContext)}
	}
	if r.ifUnchanged != "" && sameObservation(obs, e.before) {
		r.line += r.ifUnchanged
	}
	if r.fired != e.burst.fault {
		e.burst.fault, e.burst.n = r.fired, 0
	}
	if r.fired != "" {
		e.burst.n++
	}
	e.cfg.Stats.count(s, r, e.before, obs, e.burst.n, e.ceilings)
	pic := e.picture(r, predicted.Observation, sentBefore)
	e.before = obs
	out := append([]string{r.line}, render(obs)...)
	if v != nil {
		out = append(out, v.String())
	}
	return Outcome{Output: strings.Join(out, "\n"), Violation: v, Answer: r.got, Key: r.key, Observed: obs, Picture: pic}, nil
}

// observe reads everything observable of the system. If no commit changed
// the app database, or the receiver's, since the last step (see
// lane.appChanged, lane.crmChanged), it takes what that step read of it.
func (e *Env) observe(ctx context.Context) (model.Observation, error) {
	obs, err := e.observeChanged(ctx)
	if err != nil {
		// What was not read is read afresh next time.
		return obs, errors.Join(err, e.lane.forget())
	}
	return obs, nil
}

func (e *Env) observeChanged(ctx context.Context) (model.Observation, error) {
	changed, err := e.lane.appChanged(ctx)
	if err != nil {
		return model.Observation{}, err
	}
	obs := e.before
	if changed {
		snap, err := e.app.Snapshot(ctx)
		if err != nil {
			return model.Observation{}, fmt.Errorf("handoff: reading the app database: %w", err)
		}
		app := shown(e.cfg.Design, filecheck.Observation(snap, nil))
		obs.Approvals, obs.Outbox = app.Approvals, app.Outbox
	}
	changed, err = e.lane.crmChanged()
	if err != nil || !changed {
		return obs, err
	}
	tasks, err := e.crm.Tasks(ctx)
	if err != nil {
		return model.Observation{}, fmt.Errorf("handoff: reading the receiver database: %w", err)
	}
	obs.Tasks = filecheck.Observation(system.Snapshot{}, tasks).Tasks
	return obs, nil
}

// faultArg reads the step's fault= argument, one of the faults its
// directive takes (see directives), or "". A
// fault that needs the other backend is a mistake of the scenario, which
// must say so with a backend line first.
func (e *Env) faultArg(s Step) (faults.Kind, error) {
	v, ok := s.Arg("fault")
	if !ok {
		return "", nil
	}
	k, err := faults.ParseKind(v, FaultsOf(s.Directive)...)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrScenario, s.Directive, err)
	}
	if !RunsOn(k, e.cfg.Backend) {
		only := faultTable[k].only
		return "", fmt.Errorf("%w: %s: fault %s runs on %s only; a scenario of it starts with backend name=%s", ErrScenario, s.Directive, k, only, only)
	}
	if HTTPOnly(k) && e.cfg.Transport != HTTP {
		return "", fmt.Errorf("%w: %s: fault %s is an answer over HTTP; a scenario of it starts with transport name=http", ErrScenario, s.Directive, k)
	}
	return k, nil
}

// Model is the model's state: what the generators look at to draw a step
// that fits (a worker's next phase, a row a person may repair).
func (e *Env) Model() model.State { return e.model }

// Backend is where the Env keeps the app database.
func (e *Env) Backend() backend.Backend { return e.cfg.Backend }

// Transport is how the worker's requests reach the receiver now.
func (e *Env) Transport() Transport { return e.cfg.Transport }
