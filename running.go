package handoff

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/explore"
	"github.com/outboxlab/handoff/internal/report"
	"github.com/outboxlab/handoff/internal/running"
	"github.com/outboxlab/handoff/internal/words"
)

// ScheduleExt ends the name of a saved running schedule.
const ScheduleExt = ".schedule"

// KeyFault is a fault that lasts for one key: every request for it
// refused for good (refused, 400, or key-conflict, 422), answered after
// the client gave up (late-reply), or failing with the receiver offline
// for it (docs/spec.md, "Faults that last, per key").
type KeyFault = running.KeyFault

// The faults that last for a key.
const (
	RefuseKey400 = running.RefuseKey400
	RefuseKey422 = running.RefuseKey422
	SlowKey      = running.SlowKey
	DownKey      = running.DownKey
)

// DefaultReplays is how many times VerifyRunning replays a schedule to
// say how often its failure reproduces.
const DefaultReplays = 10

// RunningOptions say where VerifyRunning runs a design and what it
// replays.
type RunningOptions struct {
	// Backend is where the app database lives: the zero value is a
	// SQLite file, new for every schedule; Postgres a schema of its own
	// on the server PostgresURL names, emptied between schedules.
	Backend     Backend
	PostgresURL string
	// Corpus is a folder of saved schedules (*.schedule), replayed
	// before the search; with HANDOFF_SAVE=1, a failure's minimal
	// schedule is saved there. "" means none.
	Corpus string
	// Replays is how many times a failing schedule runs again to say how
	// often it reproduces; 0 means DefaultReplays.
	Replays int
	// Replicas is how many processes of the design every schedule runs
	// side by side on the one database, 1 to 3; 0 draws 1 to 3 for each
	// schedule (at most the design's Replicas).
	Replicas int
	// LeaveOut lists faults that last for a key that the search does not
	// draw: for a design whose finding there is kept as a test of its
	// own, or whose give-up of such a key takes longer than a search can
	// afford, so that the search still judges the rest. VerifyRunning
	// says what went unchecked.
	LeaveOut []KeyFault
	// LeaveOutPauses has the search pause no worker (no hold: past its
	// lease, or for a job held by a lock, any pause): for a design whose
	// finding there is kept as a test of its own, so that the search
	// still judges the rest. VerifyRunning says so.
	LeaveOutPauses bool
	// Schedules is how many schedules the search draws; 0 means rapid's
	// -rapid.checks (100 unless set). Under -short, a fifth of them, as
	// rapid does with its own count, but at least one.
	Schedules int
}

// VerifyRunning checks design d as it runs (docs/spec.md, "Verifying an
// outbox as it runs"): one to three replicas of it side by side, each
// with its own workers, inside a testing/synctest bubble whose clock is
// virtual, under schedules of approvals, crashes, lost connections and
// COMMIT replies, an outage, faults that last for some keys (refused for
// good, every reply late, the receiver offline for them), and each request's
// answer, drawn by rapid (opts.Schedules of them, or -rapid.checks),
// judged by the history checks H1–H8. It replays the saved schedules of
// opts.Corpus first; once one fails, the rest and the search are
// skipped (one root cause fails the test once). A failure shrinks to a
// minimal schedule and fails t once, with the schedule, the timeline of
// the run, and how often it reproduced in opts.Replays runs.
func VerifyRunning(t *testing.T, d designs.Running, opts RunningOptions) {
	t.Helper()
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	if err := opts.check(d); err != nil {
		t.Fatal(err)
	}
	opts.Backend = cmp.Or(opts.Backend, SQLite)
	opts.Replays = cmp.Or(opts.Replays, DefaultReplays)
	if err := backend.Check(backend.Backend(opts.Backend), opts.PostgresURL); err != nil {
		t.Fatal(err)
	}
	for _, line := range d.Unchecked {
		t.Logf("not checked: %s", line)
	}
	for _, f := range opts.LeaveOut {
		t.Logf("not checked: a key whose every request meets %s (RunningOptions.LeaveOut): H8 and H7 for such a key", f.Says())
	}
	if opts.LeaveOutPauses {
		t.Logf("not checked: a worker paused while it sends (RunningOptions.LeaveOutPauses): what the outbox does with a job another worker took meanwhile, or with a paused holder's")
	}
	db := newRunningDatabase(t, opts)
	paths, err := filepath.Glob(filepath.Join(cmp.Or(opts.Corpus, "-"), "*"+ScheduleExt))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Corpus != "" && paths == nil {
		t.Logf("no schedule of yours to replay: %s holds no *%s file (%s=1 saves a failure's there)", opts.Corpus, ScheduleExt, SaveEnv)
	}
	var broke firstFailure
	for _, path := range paths {
		broke.run(t, "replay/"+filepath.Base(path), func(t *testing.T) {
			s, err := readScheduleFor(path, d, opts.Backend)
			if err != nil {
				t.Fatal(err)
			}
			if f, n, runs := replaySchedule(t, d, db, s, opts.Replays); f != nil {
				t.Fatalf("%s: %s", path, runningFailure(*f, n, runs))
			}
			t.Logf("%s: every check held in %d runs", path, opts.Replays)
		})
	}
	if broke.name != "" {
		t.Skipf("the search did not run: %s failed first; fix that, and the search runs again", broke.name)
	}
	last, st, failed, account := searchRunning(t, d, db, opts)
	t.Logf("design %s on %s: %s", d.Name, opts.Backend, st)
	if !failed {
		return
	}
	if last == nil {
		t.Fatalf("the harness itself failed:\n%s", account)
	}
	f, n, runs := last, 0, 0
	if !last.Stalled {
		if f, n, runs = replaySchedule(t, d, db, last.Schedule, opts.Replays); f == nil {
			f = last
		}
	}
	reproduce := fmt.Sprintf("%s=1 go test -run '^%s$' saves it into the corpus folder (RunningOptions.Corpus), which every run replays", SaveEnv, t.Name())
	saved, savedPath := "\n"+reproduce, ""
	if os.Getenv(SaveEnv) != "" && opts.Corpus != "" {
		path, err := saveSchedule(opts.Corpus, *f)
		if err != nil {
			saved = fmt.Sprintf("\n(not saved: %v)", err)
		} else {
			saved, savedPath = "\nsaved the minimal schedule as "+path, path
		}
	}
	picture, err := reportPath(t, savedPath)
	if err == nil {
		err = report.WriteTimeline(picture, report.Timeline{Result: *f, Reproduced: n, Runs: runs, Reproduce: reproduce})
	}
	if err != nil {
		picture = fmt.Sprintf("\n(no report: %v)", err)
	} else {
		picture = "\nthe failure as a page: " + picture
	}
	t.Fatalf("%s%s%s", runningFailure(*f, n, runs), picture, saved)
}

// leaveOut is s without what opts leaves out of a search: the faults
// that last for a key in LeaveOut, and with LeaveOutPauses every paused
// worker (Paused). It reuses s's slices.
func (opts RunningOptions) leaveOut(s running.Schedule) running.Schedule {
	s.Keys = slices.DeleteFunc(s.Keys, func(k running.KeyRule) bool { return slices.Contains(opts.LeaveOut, k.Fault) })
	if opts.LeaveOutPauses {
		s.Answers = slices.DeleteFunc(s.Answers, func(a running.AnswerRule) bool { return a.Answer == running.Paused })
	}
	return s
}

// check refuses counts below zero, which mean nothing, and a backend
// that design d does not run on.
func (opts RunningOptions) check(d designs.Running) error {
	switch {
	case d.SQLiteOnly && cmp.Or(opts.Backend, SQLite) != SQLite:
		return fmt.Errorf("handoff: design %s runs only on SQLite, not %s", d.Name, opts.Backend)
	case opts.Schedules < 0:
		return fmt.Errorf("handoff: RunningOptions.Schedules is %d: give how many schedules to draw, or 0 for -rapid.checks", opts.Schedules)
	case opts.Replicas < 0 || opts.Replicas > running.MaxReplicas:
		return fmt.Errorf("handoff: RunningOptions.Replicas is %d: give how many processes run side by side, 1 to %d, or 0 to draw it", opts.Replicas, running.MaxReplicas)
	case slices.ContainsFunc(opts.LeaveOut, func(f KeyFault) bool { return f.Says() == "" }):
		return fmt.Errorf("handoff: RunningOptions.LeaveOut holds a fault that is not one that lasts for a key: want RefuseKey400, RefuseKey422, SlowKey or DownKey")
	case opts.Replays < 0:
		return fmt.Errorf("handoff: RunningOptions.Replays is %d: give how many times a failing schedule runs again, or 0 for %d", opts.Replays, DefaultReplays)
	}
	return nil
}

// RunningReplay is what ReplayRunning saw: in how many of its runs a
// check broke, and the first that broke and how.
type RunningReplay struct {
	Runs, Broke   int
	Check, Detail string
}

// ReplayRunning runs the schedule file at path on d opts.Replays times
// (DefaultReplays when 0), on opts' backend, and says how often a check
// broke: for a test that keeps a finding (a schedule that must break
// the design), or one that shows a schedule no longer does. It fails t
// only for a file it cannot read or a design that cannot run.
func ReplayRunning(t *testing.T, d designs.Running, path string, opts RunningOptions) RunningReplay {
	t.Helper()
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	if err := opts.check(d); err != nil {
		t.Fatal(err)
	}
	opts.Backend = cmp.Or(opts.Backend, SQLite)
	opts.Replays = cmp.Or(opts.Replays, DefaultReplays)
	s, err := readScheduleFor(path, d, opts.Backend)
	if err != nil {
		t.Fatal(err)
	}
	f, n, runs := replaySchedule(t, d, newRunningDatabase(t, opts), s, opts.Replays)
	r := RunningReplay{Runs: runs, Broke: n}
	if f != nil {
		r.Check, r.Detail = f.Violation.Check, f.Violation.Detail
		t.Logf("%s: %s broke in %d of %d runs: %s", path, r.Check, n, r.Runs, r.Detail)
	} else {
		t.Logf("%s: every check held in %d runs", path, r.Runs)
	}
	return r
}

// progressEvery is how often, in real time, a search of the running
// mode says how far it got (go test -v shows it as it comes).
const progressEvery = 10 * time.Second

// searchRunning runs the rapid property on d: schedules drawn, each run
// in a bubble of its own, until a check breaks and the schedule shrinks.
// It returns the last failing run (the minimal one), what the search ran,
// whether the check failed, and rapid's account of a failure. It draws
// opts.Schedules schedules (0: -rapid.checks) of opts.Replicas processes
// (0: drawn) on opts.Backend.
func searchRunning(t *testing.T, d designs.Running, db *runningDatabase, opts RunningOptions) (*running.Result, runningStats, bool, string) {
	return searchRunningFrom(t, d, db, opts, 0)
}

// searchRunningFrom is searchRunning from rapid's seed seed (0: as
// -rapid.seed says).
func searchRunningFrom(t *testing.T, d designs.Running, db *runningDatabase, opts RunningOptions, seed uint64) (*running.Result, runningStats, bool, string) {
	b, schedules := cmp.Or(opts.Backend, SQLite), opts.Schedules
	var last *running.Result
	var st runningStats
	said := time.Now()
	prop := func(rt *rapid.T) {
		if last != nil && last.Stalled {
			return // a stall is the design's, not the schedule's: nothing to shrink, and each run would stall again
		}
		s := opts.leaveOut(running.Draw(rt, d, string(b), opts.Replicas))
		res := running.Run(t, db.config(t, d, string(b)), s)
		st.add(res)
		if time.Since(said) >= progressEvery {
			said = time.Now()
			t.Logf("searching %s on %s: %s so far", d.Name, b, st)
		}
		if res.Violation != nil {
			last = &res
			rt.Fatalf("%v", res.Violation)
		}
	}
	failed, account := explore.CheckQuietlySeeded(t, schedules, seed, prop)
	if last != nil && !last.Stalled {
		min := minimize(t, d, db, *last, minimizeTries)
		last = &min
	}
	return last, st, failed, account
}

// minimizeTries is how many runs minimize gives a smaller schedule to
// break the check again: goroutine scheduling may hide it in one.
const minimizeTries = 2

// minimize removes from a failing run's schedule every line its failure
// does not need: first the answers of requests the run never made,
// then, one at a time while the check still breaks, each event, answer
// rule, key rule and replica (Schedule.Smaller). rapid's shrinking
// leaves such lines where a draw cannot shrink away without changing
// the draws after it. A candidate runs up to tries times and is kept
// once it breaks the same check, so the result may reproduce less often
// than the run it came from: VerifyRunning says how often it does.
func minimize(t *testing.T, d designs.Running, db *runningDatabase, res running.Result, tries int) running.Result {
	fails := func(s running.Schedule) (running.Result, bool) {
		var r running.Result
		for range tries {
			r = running.Run(t, db.config(t, d, s.Backend), s)
			if r.Violation != nil && r.Violation.Check == res.Violation.Check {
				return r, true
			}
		}
		return r, false
	}
	if s := res.Schedule.Unused(len(res.Requests)); s.Size() < res.Schedule.Size() {
		if r, ok := fails(s); ok {
			res = r
		}
	}
	for smaller := true; smaller; {
		smaller = false
		for _, s := range res.Schedule.Smaller() {
			if r, ok := fails(s); ok {
				res, smaller = r, true
				break
			}
		}
	}
	return res
}

// replaySchedule runs s up to times times and returns the first failing
// run, in how many runs a check broke, and how many ran. A run that
// stalled ends the replays: every run would stall again (see
// running.Result.Stalled).
func replaySchedule(t *testing.T, d designs.Running, db *runningDatabase, s running.Schedule, times int) (first *running.Result, broke, runs int) {
	for runs < times {
		res := running.Run(t, db.config(t, d, s.Backend), s)
		runs++
		if res.Violation != nil {
			broke++
			if first == nil {
				first = &res
			}
		}
		if res.Stalled {
			break
		}
	}
	return first, broke, runs
}

// runningFailure is the failure of a running design, for a person: the
// check that broke, how often it reproduced, the schedule and the run's
// timeline.
func runningFailure(res running.Result, reproduced, runs int) string {
	var b strings.Builder
	v := res.Violation
	fmt.Fprintf(&b, "design %s on %s broke %s (%s) at %s of virtual time:\n  %s\n", res.Schedule.Design, res.Schedule.Backend, v.Check, v.Name, v.At, v.Detail)
	switch {
	case runs == 0: // not run again
	case reproduced == 0:
		fmt.Fprintf(&b, "it did not reproduce in %d more runs of the same schedule: goroutine scheduling decides it; the run that broke is below\n", runs)
	default:
		fmt.Fprintf(&b, "it reproduced in %d of %d runs of the same schedule\n", reproduced, runs)
	}
	fmt.Fprintf(&b, "\nthe schedule (a %s file):\n\n%s\nwhat happened (virtual time):\n\n%s", ScheduleExt, res.Schedule, res.Story())
	return b.String()
}

// runningStats is what a search ran.
type runningStats struct {
	schedules, requests, boots int
	virtual                    time.Duration
	// drawn are the answer rules of the requests made (a paused request
	// is one, whatever it was answered after its pause); answers what
	// the receiver did with each request in the end.
	drawn, answers map[running.Answer]int
	events         map[running.EventKind]int
	replicas       map[int]int
	keys           map[running.KeyFault]int
}

func (s *runningStats) add(res running.Result) {
	if s.answers == nil {
		s.drawn, s.answers, s.events = map[running.Answer]int{}, map[running.Answer]int{}, map[running.EventKind]int{}
		s.replicas, s.keys = map[int]int{}, map[running.KeyFault]int{}
	}
	s.replicas[max(res.Schedule.Replicas, 1)]++
	for _, k := range res.Schedule.Keys {
		s.keys[k.Fault]++
	}
	s.schedules++
	s.requests += len(res.Requests)
	s.boots += res.Boots
	s.virtual += res.Virtual
	for _, q := range res.Requests {
		s.answers[q.Answer]++
	}
	for _, a := range res.Schedule.Answers {
		if a.N <= len(res.Requests) {
			s.drawn[a.Answer]++
		}
	}
	for _, e := range res.Schedule.Events {
		s.events[e.Kind]++
	}
}

func (s runningStats) String() string {
	var drawn, answers, events, replicas, keys []string
	for n, c := range s.replicas {
		replicas = append(replicas, fmt.Sprintf("%d: %d", n, c))
	}
	for k, c := range s.keys {
		keys = append(keys, fmt.Sprintf("%s %d", k, c))
	}
	slices.Sort(replicas)
	slices.Sort(keys)
	for a, n := range s.answers {
		answers = append(answers, fmt.Sprintf("%s %d", a, n))
	}
	for a, n := range s.drawn {
		drawn = append(drawn, fmt.Sprintf("%s %d", a, n))
	}
	for e, n := range s.events {
		events = append(events, fmt.Sprintf("%s %d", e, n))
	}
	slices.Sort(drawn)
	slices.Sort(answers)
	slices.Sort(events)
	return fmt.Sprintf("%s, %s, %s, %s of virtual time; schedules by replicas: %s; events: %s; keys stuck: %s; answers drawn for requests made: %s; answers given: %s",
		words.HowMany(s.schedules, "schedule"), words.HowMany(s.requests, "request"), words.HowMany(s.boots, "boot"),
		s.virtual.Round(time.Second), strings.Join(replicas, ", "), strings.Join(events, ", "), cmp.Or(strings.Join(keys, ", "), "none"),
		cmp.Or(strings.Join(drawn, ", "), "none"), strings.Join(answers, ", "))
}

// readSchedule reads the schedule file at path.
func readSchedule(path string) (running.Schedule, error) {
	f, err := os.Open(path)
	if err != nil {
		return running.Schedule{}, err
	}
	defer f.Close()
	return running.ParseSchedule(path, f)
}

// readScheduleFor reads the schedule file at path for design d, on
// backend b: a schedule of more replicas than d runs is refused.
func readScheduleFor(path string, d designs.Running, b Backend) (running.Schedule, error) {
	s, err := readSchedule(path)
	if err != nil {
		return s, err
	}
	if n := max(s.Replicas, 1); d.Replicas > 0 && n > d.Replicas {
		return s, fmt.Errorf("handoff: %s runs %d replicas, and design %s runs at most %d (its Replicas)", path, n, d.Name, d.Replicas)
	}
	s.Design, s.Backend = d.Name, string(b)
	return s, nil
}

// saveSchedule writes a failing run's schedule into dir, named after its
// design, the check it broke and its content, and returns its path.
func saveSchedule(dir string, res running.Result) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	text := fmt.Sprintf("# broke %s (%s): %s\n%s", res.Violation.Check, res.Violation.Name, res.Violation.Detail, res.Schedule)
	h := fnv.New32a()
	h.Write([]byte(res.Schedule.String()))
	path := filepath.Join(dir, fmt.Sprintf("%s-%s-%08x%s", res.Schedule.Design, strings.ToLower(res.Violation.Check), h.Sum32(), ScheduleExt))
	return path, os.WriteFile(path, []byte(text), 0o644)
}

// runningDatabase gives each run an app database of its own: a new
// SQLite file, or the schema of the test on PostgreSQL emptied.
type runningDatabase struct {
	backend Backend
	dir     string
	schema  *backend.Schema
	runs    int
	// stall is how long a run may stand still before the watchdog stops
	// it (0: running.DefaultStall); a test of a stall shortens it.
	stall time.Duration
}

// config is the Config of the next run of d on backend b: a database of
// its own.
func (db *runningDatabase) config(t *testing.T, d designs.Running, b string) running.Config {
	return running.Config{Design: d, Database: db.next(t), Backend: b, Stall: db.stall}
}

func newRunningDatabase(t *testing.T, opts RunningOptions) *runningDatabase {
	db := &runningDatabase{backend: opts.Backend, dir: t.TempDir()}
	if opts.Backend == Postgres {
		s, err := backend.NewSchema(t.Context(), opts.PostgresURL, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		db.schema = s
	}
	return db
}

// next is the app database of the next run.
func (db *runningDatabase) next(t *testing.T) string {
	db.runs++
	if db.schema == nil {
		return filepath.Join(db.dir, fmt.Sprintf("app-%d.db", db.runs))
	}
	if err := db.schema.Drop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := db.schema.Make(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db.schema.Target()
}
