package handoff

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/internal/running"
	"github.com/outboxlab/handoff/system"
	"pgregory.net/rapid"
)

// TestVerifyRunningPool verifies the handoff's own worker pool, as
// handoff work runs it, as it runs, on SQLite, replaying the saved
// schedules of corpus/running first. As the child of
// TestVerifyRunningReportsWhatBroke it verifies the running design that
// one names, with the corpus folder it names.
func TestVerifyRunningPool(t *testing.T) {
	if testing.Short() && os.Getenv(verifyDesignEnv) == "" {
		t.Skip("-short: TestRunningCatalogSchedules runs the pool on every saved schedule; run without -short to search it")
	}
	t.Parallel() // a bubble of its own: it overlaps the other searches on a second core
	d, corpus := designs.Pool, "corpus/running"
	if name := os.Getenv(verifyDesignEnv); name != "" {
		var err error
		if d, err = designs.LookupRunning(name); err != nil {
			t.Fatal(err)
		}
		corpus = os.Getenv(verifyCorpusEnv)
	}
	VerifyRunning(t, d, RunningOptions{Corpus: corpus, Replicas: *replicas})
}

// replicas fixes the processes every schedule of the pool's searches
// runs, for a measurement of what a replica costs.
var replicas = flag.Int("replicas", 0, "TestVerifyRunningPool, TestVerifyRunningPoolOverHTTP, TestVerifyRunningPoolOnPostgres: run every schedule with this many processes side by side (1 to 3); 0 draws 1 to 3")

// TestVerifyRunningPoolOverHTTP verifies the pool sending through the
// handoff's own HTTP sender (crm.Sender), its requests reaching the
// harness's receiver over HTTP in memory, on SQLite.
func TestVerifyRunningPoolOverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: TestVerifyRunningPool searches the pool in memory; run without -short to search it over HTTP")
	}
	t.Parallel()
	VerifyRunning(t, designs.PoolHTTP, RunningOptions{Replicas: *replicas})
}

// TestVerifyRunningPoolOnPostgres verifies the pool on PostgreSQL, where
// connections are also reset and lose a COMMIT's reply: 30 schedules and
// each saved one replayed 3 times, or with -deep 300 schedules and 10
// replays, as the deep searches (.ci/deep) run. A schedule costs the
// server's real round trips, which hold the bubble's virtual clock (a
// boot's connections, the idle workers' read every virtual second): some
// 0.6 s each against 0.1 s on SQLite, whose TestVerifyRunningPool draws the
// same schedules' shapes 100 at a time. It runs beside the package's
// other parallel tests, since it mostly waits for the server.
func TestVerifyRunningPoolOnPostgres(t *testing.T) {
	t.Parallel()
	schedules, replays := 30, 3
	if *deep {
		schedules, replays = 300, DefaultReplays
	}
	VerifyRunning(t, designs.Pool, RunningOptions{Backend: Postgres, PostgresURL: pgtest.Server(t), Corpus: "corpus/running", Schedules: schedules, Replays: replays, Replicas: *replicas})
}

// TestRunningSchedules checks that a search draws as many schedules as
// RunningOptions.Schedules says (a fifth under -short, as rapid does, at
// least one), and that a count of its own leaves -rapid.checks as it was
// for the tests after it. (A count of 0, -rapid.checks', is
// TestCheckAsGivenKeepsTheCommandLinesChecks's in internal/explore.)
func TestRunningSchedules(t *testing.T) {
	given := flag.Lookup("rapid.checks").Value.String()
	short := func(n int) int {
		if testing.Short() {
			return max(n/5, 1)
		}
		return n
	}
	for _, tc := range []struct {
		schedules, want int
	}{
		{schedules: 10, want: short(10)},
		{schedules: 3, want: short(3)},
	} {
		t.Run(strconv.Itoa(tc.schedules), func(t *testing.T) {
			db := newRunningDatabase(t, RunningOptions{Backend: SQLite})
			_, st, failed, account := searchRunning(t, designs.Pool, db, RunningOptions{Schedules: tc.schedules})
			if failed {
				t.Fatalf("the pool failed:\n%s", account)
			}
			if st.schedules != tc.want {
				t.Errorf("drew %d schedules, want %d", st.schedules, tc.want)
			}
			if now := flag.Lookup("rapid.checks").Value.String(); now != given {
				t.Errorf("-rapid.checks is %s after the search, was %s", now, given)
			}
		})
	}
}

// TestRunningOptionsRefused: a count below zero is refused in one line
// that names the field, and so is a backend the design does not run on
// (for VerifyRunning and ReplayRunning alike); zero and above are taken.
func TestRunningOptionsRefused(t *testing.T) {
	sqliteOnly := designs.Running{Name: "sqlite-only", SQLiteOnly: true}
	for _, tc := range []struct {
		opts RunningOptions
		want string
		d    designs.Running
	}{
		{RunningOptions{}, "", designs.Running{}},
		{RunningOptions{Schedules: 30, Replays: 3}, "", designs.Running{}},
		{RunningOptions{Schedules: -1}, "RunningOptions.Schedules is -1", designs.Running{}},
		{RunningOptions{Replays: -2}, "RunningOptions.Replays is -2", designs.Running{}},
		{RunningOptions{Replicas: 4}, "RunningOptions.Replicas is 4", designs.Running{}},
		{RunningOptions{Replicas: -1}, "RunningOptions.Replicas is -1", designs.Running{}},
		{RunningOptions{Replicas: 2}, "", designs.Running{}},
		{RunningOptions{LeaveOut: []KeyFault{SlowKey, DownKey}}, "", designs.Running{}},
		{RunningOptions{LeaveOut: []KeyFault{"503"}}, "RunningOptions.LeaveOut holds a fault that is not one that lasts", designs.Running{}},
		{RunningOptions{}, "", sqliteOnly},
		{RunningOptions{Backend: SQLite}, "", sqliteOnly},
		{RunningOptions{Backend: Postgres}, "design sqlite-only runs only on SQLite, not postgres", sqliteOnly},
		{RunningOptions{Backend: Postgres}, "", designs.Running{}},
	} {
		err := tc.opts.check(tc.d)
		if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// TestRunningOptionsLeaveOut: what a search leaves out is gone from
// every schedule it draws, and nothing else is.
func TestRunningOptionsLeaveOut(t *testing.T) {
	opts := RunningOptions{LeaveOut: []KeyFault{SlowKey, DownKey}, LeaveOutPauses: true}
	var holds, kept int
	rapid.Check(t, func(rt *rapid.T) {
		drawn := running.Draw(rt, designs.Pool, "sqlite", 0)
		for _, a := range drawn.Answers {
			if a.Answer == running.Paused {
				holds++
			}
		}
		events := len(drawn.Events)
		s := opts.leaveOut(drawn)
		for _, k := range s.Keys {
			if slices.Contains(opts.LeaveOut, k.Fault) {
				rt.Fatalf("key rule %+v left in", k)
			}
		}
		for _, a := range s.Answers {
			if a.Answer == running.Paused {
				rt.Fatalf("answer rule %+v left in", a)
			}
		}
		kept += len(s.Answers) + len(s.Keys)
		if len(s.Events) != events {
			rt.Fatalf("events %d, drawn %d: leaving out took events", len(s.Events), events)
		}
	})
	if holds == 0 || kept == 0 {
		t.Errorf("%d pauses drawn, %d rules kept: the draws never tested leaving out", holds, kept)
	}
}

// TestVerifyRunningReportsWhatBroke runs TestVerifyRunningPool in a
// child process on a fragile running design whose failure reproduces on
// every run of its schedule, and checks what the user sees: the test
// fails once, names the check, says how often the schedule reproduced,
// shows the schedule and the timeline, writes a page, and with
// HANDOFF_SAVE=1 saves the schedule, which the next run replays and
// fails on.
func TestVerifyRunningReportsWhatBroke(t *testing.T) {
	corpus, work := t.TempDir(), t.TempDir()
	child := func(save string) string {
		return failingVerify(t, "running-new-key", corpus, work, "^TestVerifyRunningPool$", testing.Short(), SaveEnv+"="+save)
	}
	out := child("1")
	for _, want := range []string{"--- FAIL: TestVerifyRunningPool", "broke H2 (invariant 5: no CRM task without an approval of the same key and payload",
		"the schedule (a .schedule file):", "what happened (virtual time):",
		"saved the minimal schedule as " + corpus, "the failure as a page: " + corpus} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`it reproduced in ([1-9]|10) of 10 runs`).MatchString(out) {
		t.Errorf("the output does not say how often the schedule reproduced:\n%s", out)
	}
	if n := strings.Count(out, "the schedule (a .schedule file)"); n != 1 {
		t.Errorf("the failure is printed %d times, want once:\n%s", n, out)
	}
	if strings.Contains(out, "[rapid]") {
		t.Errorf("the output shows rapid's own lines:\n%s", out)
	}
	saved, err := filepath.Glob(filepath.Join(corpus, "*.schedule"))
	if err != nil || len(saved) != 1 {
		t.Fatalf("saved %v (%v), want one schedule", saved, err)
	}
	page, err := os.ReadFile(strings.TrimSuffix(saved[0], ".schedule") + ".html")
	if err != nil || !strings.Contains(string(page), "H2 broke at") || !strings.Contains(string(page), "<th>receiver</th>") {
		t.Errorf("no page beside the saved schedule, or one without the verdict and the receiver's lane (%v)", err)
	}
	if !strings.Contains(string(page), "table.timeline") || !strings.Contains(string(page), "svg .arrow.claim") {
		t.Errorf("the page beside the saved schedule is not in the style sheet of a step run's report")
	}
	out = child("")
	if want := "--- FAIL: TestVerifyRunningPool/replay/" + filepath.Base(saved[0]); !strings.Contains(out, want) || !regexp.MustCompile(`reproduced in \d+ of 10 runs`).MatchString(out) {
		t.Errorf("the next run does not fail on the saved schedule (want %q, and how often it reproduced):\n%s", want, out)
	}
}

// catalogSeed is the rapid seed TestRunningCatalog searches from: the
// catalog's minimal sizes are measured from it, as the step catalog's
// lengths are from --seed 1.
const catalogSeed = 1

// TestRunningCatalog: the search of the running mode catches every
// fragile running design, on SQLite, with the check its catalog entry
// names, and passes the plain worker they are built on.
// It searches from catalogSeed, and bounds each minimal schedule's size
// there; with -rapid.seed it searches from that seed, and bounds only
// what catches the design. -short leaves the searches out, as it leaves
// out the step catalog's: each saved minimal schedule still shows its
// catch (TestRunningCatalogSchedules).
func TestRunningCatalog(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: corpus/running-fragile shows each catch; run without -short to search anew")
	}
	for _, d := range append([]designs.Running{designs.Plain}, designs.RunningFragile...) {
		t.Run(d.Name, func(t *testing.T) {
			start := time.Now()
			db := newRunningDatabase(t, RunningOptions{Backend: SQLite})
			seed := uint64(catalogSeed)
			if given := flag.Lookup("rapid.seed").Value.String(); given != "0" {
				// CI searches from other seeds too: each must catch the
				// design; the sizes are documented for catalogSeed.
				var err error
				if seed, err = strconv.ParseUint(given, 10, 64); err != nil {
					t.Fatal(err)
				}
			}
			last, st, failed, account := searchRunningFrom(t, d, db, RunningOptions{}, seed)
			t.Logf("%s in %v", st, time.Since(start).Round(time.Millisecond))
			switch {
			case d.CaughtBy == "" && failed:
				t.Fatalf("the plain worker failed:\n%s", account)
			case d.CaughtBy == "":
				return
			case !failed:
				t.Fatalf("design %s was not caught", d.Name)
			case last == nil:
				t.Fatalf("the harness failed:\n%s", account)
			case last.Violation.Check != d.CaughtBy && !slices.Contains(d.AlsoCaughtBy, last.Violation.Check):
				t.Fatalf("design %s broke %s, its catalog entry says %s:\n%s", d.Name, last.Violation.Check, strings.Join(append([]string{d.CaughtBy}, d.AlsoCaughtBy...), " or "), runningFailure(*last, 0, 0))
			}
			t.Logf("caught by %s: %s\nminimal schedule, %d lines:\n%s", last.Violation.Check, last.Violation.Detail, last.Schedule.Size(), last.Schedule)
			most := max(d.MinimalSize, d.MostSize)
			if seed != catalogSeed {
				return
			}
			// Goroutine scheduling decides some failures, and a busy
			// machine hides them more often: a line the search kept may
			// go when each smaller schedule gets more runs.
			for tries := 3 * minimizeTries; last.Schedule.Size() > most && tries <= 27*minimizeTries; tries *= 3 {
				again := minimize(t, d, db, *last, tries)
				t.Logf("minimized again, each candidate run up to %d times: %d lines", tries, again.Schedule.Size())
				last = &again
			}
			if last.Schedule.Size() > most {
				t.Errorf("the minimal schedule of %s holds %d lines, its catalog entry says at most %d:\n%s", d.Name, last.Schedule.Size(), most, last.Schedule)
			}
		})
	}
}

// TestRunningCatalogSchedules replays each fragile running design's
// saved minimal schedule (corpus/running-fragile/NAME.schedule): it must
// break exactly the check the design's entry names, and no other, in
// every run that breaks one, and hold no more lines than the entry says;
// the plain worker and the pool run every one of them with every check
// holding, so that each schedule shows its design's mistake and nothing
// else. Every history check is the catch of some design, so a check
// that stops firing fails here.
func TestRunningCatalogSchedules(t *testing.T) {
	t.Parallel()
	caught := map[string]bool{}
	for _, d := range designs.RunningFragile {
		path := filepath.Join("corpus", "running-fragile", d.Name+ScheduleExt)
		s, err := readSchedule(path)
		if err != nil {
			t.Fatal(err)
		}
		if s.Design != d.Name || s.Size() > d.MinimalSize {
			t.Errorf("%s names design %s and holds %d lines; want %s and at most %d", path, s.Design, s.Size(), d.Name, d.MinimalSize)
		}
		t.Run(d.Name, func(t *testing.T) {
			db := newRunningDatabase(t, RunningOptions{Backend: SQLite})
			broke := 0
			var last running.Result
			// -short stops at the first run that breaks a check.
			for range 3 {
				res := running.Run(t, db.config(t, d, s.Backend), s)
				last = res
				if v := res.Violation; v != nil {
					broke++
					if v.Check != d.CaughtBy {
						t.Fatalf("%s broke %s, want %s:\n%s", path, v.Check, d.CaughtBy, runningFailure(res, 0, 0))
					}
					if testing.Short() {
						break
					}
				}
			}
			if broke == 0 {
				t.Fatalf("%s broke no check in 3 runs, want %s; what happened in the last (virtual time):\n\n%s", path, d.CaughtBy, last.Story())
			}
			caught[d.CaughtBy] = true
			for _, good := range []designs.Running{designs.Plain, designs.Pool} {
				if res := running.Run(t, db.config(t, good, s.Backend), s); res.Violation != nil {
					t.Errorf("the schedule breaks %s too:\n%s", good.Name, runningFailure(res, 0, 0))
				}
			}
		})
	}
	for n := 1; n <= 8; n++ {
		if check := fmt.Sprintf("H%d", n); !caught[check] {
			t.Errorf("no fragile running design's saved schedule is caught by %s: a check that never fires goes unnoticed", check)
		}
	}
}

// TestReplayCountsWhatBroke: a replay says in how many runs a check
// broke, not how many runs it made: none for the plain worker on the
// schedule that catches running-new-key, every one for that design.
func TestReplayCountsWhatBroke(t *testing.T) {
	s, err := readSchedule(filepath.Join("corpus", "running-fragile", "running-new-key"+ScheduleExt))
	if err != nil {
		t.Fatal(err)
	}
	newKey, err := designs.LookupRunning("running-new-key")
	if err != nil {
		t.Fatal(err)
	}
	db := newRunningDatabase(t, RunningOptions{Backend: SQLite})
	if f, n, _ := replaySchedule(t, designs.Plain, db, s, 3); f != nil || n != 0 {
		t.Errorf("the plain worker broke a check in %d of 3 runs (%v), want 0", n, f)
	}
	if f, n, _ := replaySchedule(t, newKey, db, s, 3); f == nil || n != 3 || f.Violation.Check != "H2" {
		t.Errorf("running-new-key broke a check in %d of 3 runs (%v), want H2 in 3", n, f)
	}
}

// TestDeclaredCountJudged: what a design declares it counts decides H4.
// running-count-after counts a send only when it fails; declared as
// counting attempts (its catalog entry) its first answered request
// breaks H4, and declared as an error counter the same schedule holds:
// a green run of an error counter says nothing of sends it never
// counted.
func TestDeclaredCountJudged(t *testing.T) {
	d, err := designs.LookupRunning("running-count-after")
	if err != nil {
		t.Fatal(err)
	}
	s, err := readSchedule(filepath.Join("corpus", "running-fragile", "running-count-after"+ScheduleExt))
	if err != nil {
		t.Fatal(err)
	}
	db := newRunningDatabase(t, RunningOptions{Backend: SQLite})
	if f, n, _ := replaySchedule(t, d, db, s, 1); n != 1 || f.Violation.Check != "H4" {
		t.Errorf("declared as counting attempts: %d of 1 runs broke (%v), want H4", n, f)
	}
	d.Counts = designs.CountsErrors
	if f, n, _ := replaySchedule(t, d, db, s, 1); n != 0 {
		t.Errorf("declared as an error counter: %v, want every check to hold", f.Violation)
	}
}

// TestMinimizeMovesAnswers: a schedule that no deletion of one line
// makes smaller, since each deletion shifts which request an answer
// meets, minimizes to the design's catalog size once answers may move
// to earlier requests.
func TestMinimizeMovesAnswers(t *testing.T) {
	d, err := designs.LookupRunning("running-http-drop-key")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "minimize", d.Name+ScheduleExt)
	s, err := readSchedule(path)
	if err != nil {
		t.Fatal(err)
	}
	db := newRunningDatabase(t, RunningOptions{Backend: SQLite})
	f, n, _ := replaySchedule(t, d, db, s, 1)
	if n != 1 || f.Violation.Check != d.CaughtBy {
		t.Fatalf("%s broke %v in %d of 1 runs, want %s", path, f, n, d.CaughtBy)
	}
	if m := minimize(t, d, db, *f, minimizeTries); m.Schedule.Size() > d.MinimalSize || m.Violation.Check != d.CaughtBy {
		t.Errorf("minimized to %d lines breaking %s, want at most %d breaking %s:\n%s", m.Schedule.Size(), m.Violation.Check, d.MinimalSize, d.CaughtBy, m.Schedule)
	}
}

// TestScheduleOfMoreReplicasThanTheDesignRuns: a saved schedule is
// replayed on a design that runs at least as many processes as the
// schedule holds, and refused, naming both counts, on one that runs
// fewer.
func TestScheduleOfMoreReplicasThanTheDesignRuns(t *testing.T) {
	dir := t.TempDir()
	d := designs.Plain
	d.Replicas = 2
	for _, tt := range []struct {
		replicas int
		refused  bool
	}{{1, false}, {2, false}, {3, true}} {
		path := filepath.Join(dir, fmt.Sprintf("r%d%s", tt.replicas, ScheduleExt))
		text := fmt.Sprintf("design name=pool\nbackend name=postgres\nreplicas n=%d\napprove at=0s case=case-1 title=t\n", tt.replicas)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := readScheduleFor(path, d, SQLite)
		switch {
		case tt.refused && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("runs %d replicas, and design %s runs at most 2", tt.replicas, d.Name))):
			t.Errorf("%d replicas: %v, want it refused", tt.replicas, err)
		case !tt.refused && (err != nil || s.Design != d.Name || s.Backend != string(SQLite)):
			t.Errorf("%d replicas: %+v, %v; want it read for %s on sqlite", tt.replicas, s, err, d.Name)
		}
	}
}

// neverDeliversSecondStopFails is a running design that never delivers
// (an approval waits for ever: H7), and whose second boot's Stop fails
// while its process lives (the run's own check): a schedule of an
// approval and a crash breaks H7, and the same without the approval
// breaks the run's check. It tells runs apart by their database, a file
// of its own for each run on SQLite, the only backend it runs on.
func neverDeliversSecondStopFails() designs.Running {
	var mu sync.Mutex
	boots, approved := map[string]int{}, map[string]map[string]designs.RunningRow{}
	return designs.Running{Name: "two-faces", Settle: 10 * time.Second, Boot: func(_ context.Context, p designs.Process) (designs.Booted, error) {
		mu.Lock()
		defer mu.Unlock()
		db := p.Database()
		boots[db]++
		if approved[db] == nil {
			approved[db] = map[string]designs.RunningRow{}
		}
		return undelivered{mu: &mu, rows: approved[db], failStop: boots[db] == 2}, nil
	}}
}

// undelivered is a boot of neverDeliversSecondStopFails.
type undelivered struct {
	mu       *sync.Mutex
	rows     map[string]designs.RunningRow
	failStop bool
}

func (f undelivered) Approve(_ context.Context, caseID, title string) (string, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := system.KeyPrefix + caseID
	f.rows[key] = designs.RunningRow{State: designs.RowPending}
	return key, fmt.Sprintf(`{"case_id":%q,"title":%q}`, caseID, title), nil
}

func (f undelivered) Read(context.Context) (map[string]designs.RunningRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.rows), nil
}

func (f undelivered) Stop() error {
	if f.failStop {
		return errors.New("stopped with an error")
	}
	return nil
}

// TestMinimizeKeepsTheCheck: minimizing keeps a smaller schedule only
// when it breaks the check the failure broke, not another.
func TestMinimizeKeepsTheCheck(t *testing.T) {
	d := neverDeliversSecondStopFails()
	db := newRunningDatabase(t, RunningOptions{Backend: SQLite})
	s, err := running.ParseSchedule("inline", strings.NewReader("design name=two-faces\nbackend name=sqlite\napprove at=0s case=case-1 title=t\nprocess-crash at=1s\n"))
	if err != nil {
		t.Fatal(err)
	}
	f, n, _ := replaySchedule(t, d, db, s, 1)
	if n != 1 || f.Violation.Check != "H7" {
		t.Fatalf("the schedule broke %v in %d of 1 runs, want H7", f, n)
	}
	without := s
	without.Events = s.Events[1:]
	if g, _, _ := replaySchedule(t, d, db, without, 1); g == nil || g.Violation.Check != "run" {
		t.Fatalf("without the approval: %v, want the run's check", g)
	}
	if m := minimize(t, d, db, *f, minimizeTries); m.Violation.Check != "H7" || m.Schedule.Size() != 1 {
		t.Errorf("minimized to %d lines breaking %s, want the approval alone breaking H7:\n%s", m.Schedule.Size(), m.Violation.Check, m.Schedule)
	}
}

// TestRunningStatsSayWhatWasDrawn: a search's summary counts the answer
// rules of the requests made, a pause included though the request was
// answered after it, beside what the receiver did with each request in
// the end; a rule for a request never made is not counted.
func TestRunningStatsSayWhatWasDrawn(t *testing.T) {
	var st runningStats
	st.add(running.Result{
		Schedule: running.Schedule{Answers: []running.AnswerRule{
			{N: 1, Answer: running.Paused, Wait: time.Minute},
			{N: 3, Answer: running.Throttled429, Wait: time.Second},
		}},
		Requests: []running.Request{{N: 1, Answer: running.Answered}, {N: 2, Answer: running.Answered}},
	})
	got := st.String()
	for _, want := range []string{"answers drawn for requests made: paused 1;", "answers given: answered 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q, want it to say %q", got, want)
		}
	}
}

// TestStallIsNeitherShrunkNorReplayed: a design that waits on a real
// socket (a LISTEN) stalls every run whatever its schedule, so a search
// stops at its first stalled run, with no shrinking and no replays, each
// of which would stall again for as long.
func TestStallIsNeitherShrunkNorReplayed(t *testing.T) {
	t.Parallel()
	listens := designs.Running{Name: "listens", Settle: time.Minute, Boot: func(ctx context.Context, p designs.Process) (designs.Booted, error) {
		done, err := pgtest.Listen(ctx, p.Database(), p.Dial)
		if err != nil {
			return nil, err
		}
		return listening{done}, nil
	}}

	db := newRunningDatabase(t, RunningOptions{Backend: Postgres, PostgresURL: pgtest.Server(t)})
	db.stall = time.Second
	last, st, failed, _ := searchRunning(t, listens, db, RunningOptions{Backend: Postgres, Schedules: 5})
	if !failed || last == nil || !last.Stalled {
		t.Fatalf("the search of a design that listens: failed %t, last %+v; want a stalled run", failed, last)
	}
	if st.schedules != 1 {
		t.Errorf("the search ran %d schedules, want the one that stalled", st.schedules)
	}
	if f, n, runs := replaySchedule(t, listens, db, last.Schedule, 3); f == nil || n != 1 || runs != 1 {
		t.Errorf("replaying the stalled schedule 3 times: %d runs, %d broke (%v); want one run, broken", runs, n, f)
	}
}

// listening is a boot whose one goroutine waits on a LISTEN until its
// connection is cut.
type listening struct{ done <-chan struct{} }

func (l listening) Approve(context.Context, string, string) (string, string, error) {
	return "", "", errors.New("approves nothing")
}
func (l listening) Read(context.Context) (map[string]designs.RunningRow, error) { return nil, nil }
func (l listening) Stop() error {
	<-l.done
	return nil
}
