package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

// The trial's timing: the longest wait for the deliveries drawn before a
// kill, the longest extra wait drawn after them, the longest pause drawn
// before the restart, and how long a process may take to start, to stop
// after SIGTERM, and to drain.
const (
	trialMaxWait  = 500 * time.Millisecond
	trialMaxExtra = 20 * time.Millisecond
	trialMaxPause = 100 * time.Millisecond
	trialStart    = 15 * time.Second
	trialStop     = 15 * time.Second
	trialDrain    = 2 * time.Minute
)

// trialWorkFlags are the options of the trial's work processes: a short
// lease, and backoffs that mostly outlast a killed server's restart. The
// attempt budget is the default, the one handoff check holds files to: a
// row whose three attempts all find the server down blocks, as it should.
var trialWorkFlags = []string{"--workers", "2", "--lease", "2s", "--send-timeout", "1s",
	"--backoff-base", "250ms", "--backoff-cap", "1s"}

// trial runs the handoff as production runs it, a crm serve process and
// work processes on real files, and SIGKILLs those processes at moments
// drawn from a seed; then it drains and checks every invariant the files
// show, and SQLite's integrity check.
func trial(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trial", flag.ContinueOnError)
	kills := fs.Int("kills", 0, "SIGKILLs in each trial, each at a moment drawn from the seed; 0 runs without")
	trials := fs.Int("trials", 1, "trials to run, each on new files with its own seed (the seed, the seed+1, ...)")
	seed := fs.Uint64("seed", 0, "seed of the first trial (default: a fresh one, printed)")
	workers := fs.Int("workers", 3, "work processes, each with two workers")
	rows := fs.Int("rows", 200, "approvals each trial records as it goes")
	dir := fs.String("dir", "", "folder to create for the trials' files, kept (default: a temporary folder, removed unless a trial fails)")
	crmURL := fs.String("crm-url", "", "trial a receiver that already runs, instead of starting crm serve: only workers are killed, its tasks are read at GET /tasks?key=KEY")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	backendFlags := addBackendFlags(fs)
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	which, postgresURL, err := backendFlags.values(ctx)
	if err != nil {
		return err
	}
	if err := required(fs, "kills"); err != nil {
		return err
	}
	if *kills < 0 {
		return fmt.Errorf("%w: --kills is %d, want 0 or more", errUsage, *kills)
	}
	if *crmURL != "" {
		// A receiver that states no contract is refused before a folder
		// is made.
		remote, err := newRemoteCRM(*crmURL, 1)
		if err != nil {
			return err
		}
		if err := remote.readContract(ctx, trialStart); err != nil {
			return err
		}
	}
	if *dir != "" {
		if _, err := os.Lstat(*dir); err == nil {
			return fmt.Errorf("--dir %s already exists; trial creates a new folder", *dir)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the handoff executable to start: %w", err)
	}
	if *seed == 0 {
		*seed = new(maphash.Hash).Sum64() | 1
	}
	root, keep := *dir, *dir != ""
	if keep {
		err = os.MkdirAll(root, 0o755)
	} else {
		root, err = os.MkdirTemp("", "handoff-trial-")
	}
	if err != nil {
		return err
	}
	again := fmt.Sprintf("%s trial --kills %d --seed %d --trials %d --workers %d --rows %d", invokedAs(os.Args[0]), *kills, *seed, *trials, *workers, *rows)
	if *crmURL != "" {
		again += " --crm-url " + shellWord(*crmURL)
	}
	again += backendFlags.flags()
	fmt.Fprintf(stderr, "trial: seed %d, files in %s; to run it again: %s\n", *seed, root, again)

	sum := trialSummary{Seed: *seed, Trials: *trials, Workers: *workers, Rows: *rows, CRMURL: optional(*crmURL), Backend: which, Schemas: []string{},
		KillsByTarget: map[string]int{}, Landed: map[string]int{}, LastLines: map[string]int{}, Problems: []trialProblem{}, KillLog: []killRecord{}}
	start := time.Now()
	var runErr error
	var schemas []string // the app databases the trials made on PostgreSQL
	for i := range *trials {
		cfg := trialConfig{exe: exe, index: i + 1, seed: *seed + uint64(i), kills: *kills, workers: *workers, rows: *rows,
			dir: filepath.Join(root, fmt.Sprintf("trial-%d", i+1)), crmURL: *crmURL}
		cfg.app = filepath.Join(cfg.dir, "app.db")
		if which == backend.Postgres {
			// Workers on many machines, as far as one can show it: each
			// work process has a pool of its own on the server.
			if cfg.app, err = system.WithSchema(postgresURL, fmt.Sprintf("trial_%d_%d", os.Getpid(), i+1)); err != nil {
				return err
			}
			schemas = append(schemas, cfg.app)
		}
		began := time.Now()
		r, err := runTrial(ctx, cfg)
		sum.add(cfg, r)
		if err != nil {
			fmt.Fprintf(stderr, "trial %d of %d (seed %d): stopped after %s, %.1fs: %v\n",
				cfg.index, *trials, cfg.seed, words.HowMany(len(r.kills), "kill"), time.Since(began).Seconds(), err)
		} else {
			fmt.Fprintf(stderr, "trial %d of %d (seed %d): %s, %d of %s sent, %s, %.1fs\n",
				cfg.index, *trials, cfg.seed, words.HowMany(len(r.kills), "kill"), r.sent, words.HowMany(*rows, "row"), words.HowMany(len(r.findings), "violation"), time.Since(began).Seconds())
		}
		if err != nil {
			runErr = fmt.Errorf("trial %d (seed %d): %w", cfg.index, cfg.seed, err)
			break
		}
	}
	sum.ElapsedSeconds = time.Since(start).Seconds()
	if runErr != nil || sum.Violations > 0 || keep {
		sum.Dir = &root
		for _, s := range schemas {
			sum.Schemas = append(sum.Schemas, system.Redact(s))
		}
	} else {
		for _, s := range schemas {
			if err := system.DropPostgres(ctx, s); err != nil {
				return err
			}
		}
		if err := os.RemoveAll(root); err != nil {
			return err
		}
	}
	if *asJSON {
		if err := encodeJSON(stdout, sum); err != nil {
			return err
		}
	} else {
		sum.writeText(stdout, runErr != nil)
	}
	switch {
	case runErr != nil:
		return fmt.Errorf("%w; the files are kept in %s", runErr, root)
	case sum.Violations > 0:
		return fmt.Errorf("%s (listed above); the files are kept in %s", words.HowMany(sum.Violations, "violation"), root)
	}
	return nil
}

// trialConfig is one trial.
type trialConfig struct {
	exe                  string // the handoff executable the processes run
	index                int    // 1 for the first trial
	seed                 uint64 // every choice of the trial is drawn from it
	kills, workers, rows int
	dir                  string // created for the trial's files and logs
	app                  string // the app database: a file in dir, or a PostgreSQL URL
	crmURL               string // a receiver that runs already; "" starts crm serve
}

// trialResult is what one trial did and found.
type trialResult struct {
	kills         []killRecord
	findings      []sim.Finding
	sent, blocked int
	deliveries    int // delivery log lines the work processes printed
}

// killRecord is one SIGKILL and where it landed.
type killRecord struct {
	Trial    int    `json:"trial"`
	Kill     int    `json:"kill"`
	Target   string `json:"target"`
	Moment   string `json:"moment"`
	Landed   string `json:"landed"`
	LastLine string `json:"last_line"`
}

// Where a kill landed, as far as the files and the receiver tell.
const (
	landedIdle       = "worker, between deliveries (no row claimed)"
	landedBeforeTask = "worker, a row claimed, the CRM holding no task for it"
	landedAfterTask  = "worker, a row claimed, the CRM holding its task, the outcome not recorded (a lost reply)"
	landedServerIdle = "server, no delivery in flight"
	landedServerBusy = "server, deliveries in flight (rows claimed)"
)

// killPlan is one kill as the seed draws it: once worker process witness
// has logged lines more deliveries (or trialMaxWait passed) and extra
// more has passed, the witness is killed, or the server; it starts again
// after pause.
type killPlan struct {
	witness, lines int
	extra, pause   time.Duration
	server         bool
}

// planTrial draws every choice of a trial from its seed alone: how many
// of the rows are approved before the workers start and before each kill
// (batches), and the kills. The server is killed in one kill in five
// when withServer.
func planTrial(seed uint64, kills, rows, workers int, withServer bool) ([]int, []killPlan) {
	draw := rand.New(rand.NewPCG(seed, 0))
	batches := make([]int, kills+1)
	for range rows {
		batches[draw.IntN(len(batches))]++
	}
	plans := make([]killPlan, kills)
	for k := range plans {
		plans[k] = killPlan{
			witness: draw.IntN(workers),
			lines:   draw.IntN(4),
			extra:   time.Duration(draw.Int64N(int64(trialMaxExtra))),
			server:  draw.IntN(5) == 0 && withServer,
			pause:   time.Duration(draw.Int64N(int64(trialMaxPause))),
		}
	}
	return batches, plans
}

// runTrial runs one trial: it records approvals as it goes, kills and
// restarts processes as the seed draws, drains, and checks the files. An
// error means the trial could not run to its end; what the checks find
// is in the result.
func runTrial(ctx context.Context, cfg trialConfig) (trialResult, error) {
	var res trialResult
	if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return res, err
	}
	batches, plans := planTrial(cfg.seed, cfg.kills, cfg.rows, cfg.workers, cfg.crmURL == "")
	appPath, crmPath := cfg.app, filepath.Join(cfg.dir, "crm.db")
	app, err := system.Open(ctx, appPath, system.Options{})
	if err != nil {
		return res, err
	}
	defer app.Close()
	approved := 0
	approve := func(n int) error {
		for range n {
			if _, err := app.RecordApproval(ctx, fmt.Sprintf("s%d-r%d", cfg.seed, approved), "Follow up on the repair"); err != nil {
				return err
			}
			approved++
		}
		return nil
	}
	if err := approve(batches[0]); err != nil {
		return res, err
	}

	var procs []*process
	defer func() {
		for _, p := range procs {
			p.stop()
			p.log.Close()
		}
	}()
	var server *process
	url := cfg.crmURL
	if url == "" {
		c, err := system.OpenCRM(ctx, crmPath, system.Durable)
		if err != nil {
			return res, err
		}
		if err := c.Close(); err != nil {
			return res, err
		}
		server, err = startProcess(ctx, cfg, &procs, "server", "crm", "serve", "--crm", crmPath, "--addr", "127.0.0.1:0", "--retention", "1h")
		if err != nil {
			return res, err
		}
		url = "http://" + server.addr
		setFlag(server.args, "--addr", server.addr) // a restart listens where the workers send
	}
	remote, err := newRemoteCRM(url, 2)
	if err != nil {
		return res, err
	}
	defer remote.client.CloseIdleConnections()
	if err := remote.readContract(ctx, trialStart); err != nil {
		return res, err
	}
	var workers []*process
	for i := range cfg.workers {
		args := append([]string{"work", "--app", appPath, "--crm-url", url, "--worker", fmt.Sprintf("trial-%d", i+1)}, trialWorkFlags...)
		w, err := startProcess(ctx, cfg, &procs, fmt.Sprintf("worker %d", i+1), args...)
		if err != nil {
			return res, err
		}
		workers = append(workers, w)
	}

	for k := range cfg.kills {
		if err := approve(batches[k+1]); err != nil {
			return res, err
		}
		plan := plans[k]
		w := workers[plan.witness]
		waited, err := w.waitDeliveries(ctx, plan.lines, trialMaxWait)
		if err != nil {
			return res, err
		}
		if err := sleepCtx(ctx, plan.extra); err != nil {
			return res, err
		}
		rec := killRecord{Trial: cfg.index, Kill: k + 1, Moment: fmt.Sprintf("%d of %d deliveries by %s, then %d ms", waited, plan.lines, w.name, plan.extra/time.Millisecond)}
		victim := w
		if plan.server {
			victim = server
			rec.Landed, err = serverLanding(ctx, app)
			if err != nil {
				return res, err
			}
			rec.LastLine = server.kill()
		} else {
			rec.LastLine = w.kill()
			rec.Landed, err = workerLanding(ctx, app, remote, fmt.Sprintf("trial-%d:", plan.witness+1))
			if err != nil {
				return res, err
			}
		}
		rec.Target = victim.name
		res.kills = append(res.kills, rec)
		if err := sleepCtx(ctx, plan.pause); err != nil {
			return res, err
		}
		if err := victim.restart(ctx); err != nil {
			return res, err
		}
		for _, p := range procs {
			if f := p.died(); f != "" {
				res.findings = append(res.findings, sim.Finding{Where: p.name, What: f})
			}
		}
	}

	// Drain: the workers stop as SIGTERM asks, the last approvals are
	// recorded, and one more work process runs until nothing is pending.
	for _, w := range workers {
		if f := w.terminate(); f != "" {
			res.findings = append(res.findings, sim.Finding{Where: w.name, What: f})
		}
	}
	if err := approve(cfg.rows - approved); err != nil {
		return res, err
	}
	drain, err := startProcess(ctx, cfg, &procs, "drain", append([]string{"work", "--app", appPath, "--crm-url", url, "--worker", "trial-drain", "--until-idle"}, trialWorkFlags...)...)
	if err != nil {
		return res, err
	}
	if f := drain.finish(trialDrain); f != "" {
		res.findings = append(res.findings, sim.Finding{Where: "drain (work --until-idle)", What: f})
	}
	for _, p := range append(workers, drain) {
		res.deliveries += p.deliveries()
	}
	if server != nil {
		if f := server.terminate(); f != "" {
			res.findings = append(res.findings, sim.Finding{Where: server.name, What: f})
		}
	}
	if err := app.Close(); err != nil {
		return res, err
	}

	findings, files, err := checkTrial(ctx, appPath, crmPath, cfg.crmURL, remote)
	if err != nil {
		return res, err
	}
	res.findings = append(res.findings, findings...)
	if len(files.App.Approvals) != cfg.rows {
		res.findings = append(res.findings, sim.Finding{Where: "approvals", What: fmt.Sprintf("the app holds %s, the trial recorded %d", words.HowMany(len(files.App.Approvals), "approval"), cfg.rows)})
	}
	var pending []string
	for _, r := range files.App.Outbox {
		switch r.State {
		case system.Sent:
			res.sent++
		case system.Blocked:
			res.blocked++
		default:
			pending = append(pending, r.Key)
		}
	}
	if len(pending) > 0 {
		res.findings = append(res.findings, sim.Finding{Where: "invariant 7 (with faults off, the workers converge)",
			What: fmt.Sprintf("%s still pending after work --until-idle, the first %s", words.HowMany(len(pending), "row"), pending[0])})
	}
	return res, writeKillLog(filepath.Join(cfg.dir, "kills.log"), res)
}

// checkTrial checks the trial's files: with crm serve, the app and CRM
// databases as handoff check does; with a receiver that ran already, the
// app database against the tasks it answers for the app's keys.
func checkTrial(ctx context.Context, appPath, crmPath, crmURL string, remote *remoteCRM) ([]sim.Finding, sim.Files, error) {
	if crmURL == "" {
		return sim.CheckFiles(ctx, appPath, crmPath)
	}
	app, err := system.OpenReadOnly(ctx, appPath)
	if err != nil {
		return nil, sim.Files{}, err
	}
	snap, err := app.Snapshot(ctx)
	app.Close()
	if err != nil {
		return nil, sim.Files{}, err
	}
	var tasks []system.Task
	for _, r := range snap.Outbox {
		t, err := remote.tasksFor(ctx, r.Key)
		if err != nil {
			return nil, sim.Files{}, err
		}
		tasks = append(tasks, t...)
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].ID < tasks[j].ID })
	return sim.CheckReceived(ctx, appPath, crmURL, tasks, remote.contract.Identity)
}

// workerLanding says where the kill of the work process whose workers'
// names start with prefix landed: whether one of its workers held a row,
// and if so whether the CRM had created its task.
func workerLanding(ctx context.Context, app *system.Outbox, remote *remoteCRM, prefix string) (string, error) {
	snap, err := app.Snapshot(ctx)
	if err != nil {
		return "", err
	}
	landed := landedIdle
	for _, r := range snap.Outbox {
		if r.State != system.Pending || !strings.HasPrefix(r.LeaseOwner, prefix) {
			continue
		}
		tasks, err := remote.tasksFor(ctx, r.Key)
		if err != nil {
			return "", err
		}
		if len(tasks) > 0 {
			return landedAfterTask, nil
		}
		landed = landedBeforeTask
	}
	return landed, nil
}

// serverLanding says, just before the server is killed, whether a
// delivery is in flight: a row some worker claimed and has not settled.
func serverLanding(ctx context.Context, app *system.Outbox) (string, error) {
	snap, err := app.Snapshot(ctx)
	if err != nil {
		return "", err
	}
	for _, r := range snap.Outbox {
		if r.State == system.Pending && r.LeaseOwner != "" {
			return landedServerBusy, nil
		}
	}
	return landedServerIdle, nil
}

// writeKillLog writes one line per kill of a trial in its folder.
func writeKillLog(path string, r trialResult) error {
	var b bytes.Buffer
	for _, k := range r.kills {
		fmt.Fprintf(&b, "kill %d: %s at %s: %s; its last line: %s\n", k.Kill, k.Target, k.Moment, k.Landed, k.LastLine)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// sleepCtx waits d (see sleep), or returns ctx's error when it is
// cancelled first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	sleep(ctx, nil, d)
	return context.Cause(ctx)
}

// process is a handoff process of a trial, started again with the same
// arguments after each kill. Everything it prints goes to NAME.log in the
// trial's folder.
type process struct {
	name string
	exe  string
	args []string
	log  *os.File
	addr string // the address crm serve listens on

	out    *lineTracker
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited and its output is read
	err    error         // cmd's exit, once exited is closed
	killed bool          // the trial killed or stopped it: its exit is expected
	past   int           // delivery log lines of the runs before this one
}

// serverAddress is the address in crm serve's first line.
var serverAddress = regexp.MustCompile(`on http://(\S+) `)

// startProcess starts the handoff with args as a process of the trial
// called name, and adds it to procs, the processes to stop at the end,
// even when it fails to start.
func startProcess(ctx context.Context, cfg trialConfig, procs *[]*process, name string, args ...string) (*process, error) {
	log, err := os.Create(filepath.Join(cfg.dir, strings.ReplaceAll(name, " ", "-")+".log"))
	if err != nil {
		return nil, err
	}
	p := &process{name: name, exe: cfg.exe, args: args, log: log}
	*procs = append(*procs, p)
	return p, p.start(ctx)
}

// start starts the process once more, and waits for its first line: crm
// serve listens then, and work has read the receiver's contract and
// started a worker. A kill of the server never finds a worker at its
// start, which would refuse a receiver that does not answer.
func (p *process) start(ctx context.Context) error {
	if p.out != nil {
		p.past += p.out.count()
	}
	fmt.Fprintf(p.log, "=== %s: handoff %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(p.args, " "))
	p.out = newLineTracker(p.log)
	p.cmd = exec.Command(p.exe, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.killed = false
	p.exited = make(chan struct{})
	if err := p.cmd.Start(); err != nil {
		p.err = err
		close(p.exited)
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	cmd, exited := p.cmd, p.exited // a restart replaces both
	go func() {
		p.err = cmd.Wait()
		close(exited)
	}()
	line, err := p.firstLine(ctx)
	if err == nil && p.args[0] == "crm" {
		if m := serverAddress.FindStringSubmatch(line); m != nil {
			p.addr = m[1]
		} else {
			err = fmt.Errorf("%s printed %q, not the address it listens on", p.name, line)
		}
	}
	if err != nil {
		// A process that did not start as it should dies here, so that
		// a restart does not find its port, or its files, still held.
		_ = cmd.Process.Kill()
		<-exited
	}
	return err
}

// firstLine waits, up to trialStart, for the first line the process
// prints: crm serve prints it once it listens, work once a worker started
// (and its signal handlers are in place).
func (p *process) firstLine(ctx context.Context) (string, error) {
	t := time.NewTimer(trialStart)
	defer t.Stop()
	for {
		first, _, changed := p.out.state()
		if first != "" {
			return first, nil
		}
		select {
		case <-changed:
		case <-p.exited:
			return "", fmt.Errorf("%s exited at its start: %v; its last line: %s", p.name, p.err, p.out.last())
		case <-t.C:
			return "", fmt.Errorf("%s printed nothing within %v", p.name, trialStart)
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
	}
}

// waitDeliveries waits until the process has logged n more deliveries,
// for at most d or until it exits, and returns how many it logged.
func (p *process) waitDeliveries(ctx context.Context, n int, d time.Duration) (int, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	_, from, _ := p.out.state()
	for {
		_, now, changed := p.out.state()
		if now-from >= n {
			return now - from, nil
		}
		select {
		case <-changed:
		case <-p.exited:
			return now - from, nil
		case <-t.C:
			return now - from, nil
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	}
}

// restart starts a killed process again. crm serve may find its port
// still held for a moment; it tries again then.
func (p *process) restart(ctx context.Context) error {
	var err error
	for range 20 {
		if err = p.start(ctx); err == nil || p.args[0] != "crm" || ctx.Err() != nil {
			return err
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return err
}

// kill sends SIGKILL, waits for the process to die, and returns the last
// line it printed.
func (p *process) kill() string {
	p.killed = true
	_ = p.cmd.Process.Kill() // it may have died already: died says so
	<-p.exited
	fmt.Fprintf(p.log, "=== %s: SIGKILL\n", time.Now().UTC().Format(time.RFC3339Nano))
	return p.out.last()
}

// died says how the process ended by itself, or "" while it runs.
func (p *process) died() string {
	select {
	case <-p.exited:
		if p.killed {
			return ""
		}
		p.killed = true // reported once
		return fmt.Sprintf("exited by itself (%v); its last line: %s", p.err, p.out.last())
	default:
		return ""
	}
}

// terminate sends SIGTERM and says what went wrong if the process did
// not exit 0 within trialStop.
func (p *process) terminate() string {
	if f := p.died(); f != "" {
		return f
	}
	p.killed = true
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return "SIGTERM: " + err.Error()
	}
	return p.finish(trialStop)
}

// finish waits for the process to exit, within d, and says what went
// wrong unless it exited 0.
func (p *process) finish(d time.Duration) string {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		p.stop()
		return fmt.Sprintf("still running after %v, killed; its last line: %s", d, p.out.last())
	}
	p.killed = true
	if p.err != nil {
		return fmt.Sprintf("exited with %v; its last line: %s", p.err, p.out.last())
	}
	return ""
}

// stop kills the process if it runs.
func (p *process) stop() {
	select {
	case <-p.exited:
	default:
		p.killed = true
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// deliveries is how many delivery log lines the process printed, in all
// its runs.
func (p *process) deliveries() int {
	return p.past + p.out.count()
}

// lineTracker copies a process's output to w, remembers its first and
// last complete lines, and counts its delivery log lines.
type lineTracker struct {
	w io.Writer

	mu         sync.Mutex
	partial    []byte
	first      string
	lastLine   string
	deliveries int
	// changed is closed, and replaced, at every complete line.
	changed chan struct{}
}

func newLineTracker(w io.Writer) *lineTracker {
	return &lineTracker{w: w, changed: make(chan struct{})}
}

func (t *lineTracker) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.lastLine = string(t.partial[:i])
		t.partial = t.partial[i+1:]
		if t.first == "" {
			t.first = t.lastLine
		}
		if strings.Contains(t.lastLine, " msg=delivery ") {
			t.deliveries++
		}
		close(t.changed)
		t.changed = make(chan struct{})
	}
	return t.w.Write(p)
}

// count is the number of delivery lines.
func (t *lineTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deliveries
}

// state returns the first line, the number of delivery lines, and the
// channel closed at the next line.
func (t *lineTracker) state() (string, int, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.first, t.deliveries, t.changed
}

// last is the last complete line written, or "(nothing)".
func (t *lineTracker) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lastLine == "" {
		return "(nothing)"
	}
	return t.lastLine
}

// setFlag sets the value that follows flag in args.
func setFlag(args []string, flag, value string) {
	for i := range args[:len(args)-1] {
		if args[i] == flag {
			args[i+1] = value
		}
	}
}

// The message and the result of a work log line in text.
var (
	logMessage = regexp.MustCompile(`msg=("[^"]*"|\S+)`)
	logResult  = regexp.MustCompile(` result=(\S+)`)
)

// logLineKind names a work log line by its message and result, for the
// summary: "delivery result=sent", "worker started"; another line by its
// first words.
func logLineKind(line string) string {
	msg := logMessage.FindStringSubmatch(line)
	if msg == nil {
		const most = 60
		if len(line) > most {
			line = line[:most] + "…"
		}
		return line
	}
	kind := strings.Trim(msg[1], `"`)
	if r := logResult.FindStringSubmatch(line); r != nil {
		kind += " result=" + r[1]
	}
	return kind
}

// trialSummary is what trial prints: the JSON form, and the text's data.
type trialSummary struct {
	Seed           uint64          `json:"seed"`
	Trials         int             `json:"trials"`
	Workers        int             `json:"workers"`
	Rows           int             `json:"rows"`
	CRMURL         *string         `json:"crm_url"`
	Kills          int             `json:"kills"`
	KillsByTarget  map[string]int  `json:"kills_by_target"`
	Landed         map[string]int  `json:"landed"`
	LastLines      map[string]int  `json:"last_lines"`
	Sent           int             `json:"sent"`
	Blocked        int             `json:"blocked"`
	Deliveries     int             `json:"deliveries"`
	Violations     int             `json:"violations"`
	Problems       []trialProblem  `json:"problems"`
	ElapsedSeconds float64         `json:"elapsed_seconds"`
	Dir            *string         `json:"dir"`
	Backend        backend.Backend `json:"backend"`
	Schemas        []string        `json:"kept_app_databases"` // PostgreSQL URLs, kept with Dir
	KillLog        []killRecord    `json:"kill_log"`
}

// trialProblem is one violation found after a trial.
type trialProblem struct {
	Trial int    `json:"trial"`
	Where string `json:"where"`
	What  string `json:"what"`
}

// add counts the trial cfg ran into s.
func (s *trialSummary) add(cfg trialConfig, r trialResult) {
	for _, k := range r.kills {
		s.Kills++
		target := "worker"
		if k.Target == "server" {
			target = "server"
		} else {
			s.LastLines[logLineKind(k.LastLine)]++
		}
		s.KillsByTarget[target]++
		s.Landed[k.Landed]++
		s.KillLog = append(s.KillLog, k)
	}
	s.Sent += r.sent
	s.Blocked += r.blocked
	s.Deliveries += r.deliveries
	for _, f := range r.findings {
		s.Violations++
		s.Problems = append(s.Problems, trialProblem{Trial: cfg.index, Where: f.Where, What: f.What})
	}
}

// writeText prints the summary for a person; stopped says the last trial
// ended before its drain and checks, so its outcome was not read.
func (s trialSummary) writeText(w io.Writer, stopped bool) {
	fmt.Fprintf(w, "trials: %d (seed %d), %s, %s each, %.1fs\n", s.Trials, s.Seed, words.HowMany(s.Workers, "work process"), words.HowMany(s.Rows, "row"), s.ElapsedSeconds)
	fmt.Fprintf(w, "kills: %d (%d of the server, %d of workers)\n", s.Kills, s.KillsByTarget["server"], s.KillsByTarget["worker"])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(s.Landed) > 0 {
		fmt.Fprintln(tw, "where the kills landed:")
		for _, k := range sortedKeys(s.Landed) {
			fmt.Fprintf(tw, "  %s\t%d\n", k, s.Landed[k])
		}
	}
	if len(s.LastLines) > 0 {
		fmt.Fprintln(tw, "a killed worker's last log line:")
		for _, k := range sortedKeys(s.LastLines) {
			fmt.Fprintf(tw, "  %s\t%d\n", k, s.LastLines[k])
		}
	}
	tw.Flush()
	if stopped {
		fmt.Fprintln(w, "outcome: not read, the last trial stopped before its drain and checks (its files are kept; handoff inspect and handoff check read them)")
	} else {
		fmt.Fprintf(w, "outcome: %s sent, %d blocked; %s logged\n", words.HowMany(s.Sent, "row"), s.Blocked, words.HowMany(s.Deliveries, "delivery"))
	}
	fmt.Fprintf(w, "violations: %d\n", s.Violations)
	for _, p := range s.Problems {
		fmt.Fprintf(w, "  trial %d: %s: %s\n", p.Trial, p.Where, p.What)
	}
	if s.Dir != nil {
		fmt.Fprintf(w, "files kept in %s\n", *s.Dir)
	}
	for _, app := range s.Schemas {
		fmt.Fprintf(w, "app database kept in %s\n", app)
	}
}

// sortedKeys returns the keys of m, most counted first.
func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
