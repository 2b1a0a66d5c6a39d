package running_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/outboxlab/handoff/internal/pgtest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/running"
	"github.com/outboxlab/handoff/system"
	"pgregory.net/rapid"
)

// parse reads a schedule given inline.
func parse(t *testing.T, text string) running.Schedule {
	t.Helper()
	s, err := running.ParseSchedule("inline", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPoolRunsASchedule: the pool delivers through a lost reply, a
// crash that strikes a paused worker's held request, and an outage, one
// task per key, and the run's history says so.
func TestPoolRunsASchedule(t *testing.T) {
	s := parse(t, `design name=pool
backend name=sqlite
approve at=0s case=case-1 title="Call about the approved repair plan"
approve at=100ms case=case-2 title=Second
process-crash at=2s
approve at=3s case=case-3 title=Third
offline at=4s for=30s
request n=1 fault=lost-reply
request n=2 fault=paused for=45s
`)
	res := running.Run(t, running.Config{Design: designs.Pool, Database: filepath.Join(t.TempDir(), "app.db"), Backend: "sqlite"}, s)
	if res.Violation != nil {
		t.Fatalf("%v\n%s", res.Violation, res.Story())
	}
	if len(res.Tasks) != 3 || res.Boots != 2 {
		t.Fatalf("got %d tasks in %d boots, want 3 in 2:\n%s", len(res.Tasks), res.Boots, res.Story())
	}
	// Which worker's request comes first is the goroutines' business:
	// the story is checked for what happened, not to which key.
	for _, want := range []string{
		`request 1 for harbor:create-followup:v1:case-\d: created task \d; the reply was lost`,
		`request 2 for harbor:create-followup:v1:case-\d: held 45s, and the process crashed meanwhile: never left`,
		`request \d for harbor:create-followup:v1:case-\d: replayed task \d`,
		`boot 1 +crash: every goroutine stopped, every connection cut`,
	} {
		if !regexp.MustCompile(want).MatchString(res.Story()) {
			t.Errorf("the story lacks %q:\n%s", want, res.Story())
		}
	}
	if res.Virtual > 5*60e9 {
		t.Errorf("the run went on for %v of virtual time after every key was sent", res.Virtual)
	}
}

// TestScheduleFile: a schedule reads back as it was written, in the
// scenario language's syntax, a title that holds " replica=" among them.
func TestScheduleFile(t *testing.T) {
	for _, text := range []string{`design name=pool
backend name=postgres
approve at=0s case=case-1 title="Rappeler: plan de réparation"
process-crash at=1.5s
connection-reset at=2s
commit-reply-lost at=2s
offline at=1m0s for=40s
request n=1 fault=lost-reply
request n=3 fault=paused for=45s
request n=4 fault=throttled status=503 retry-after=2s
request n=5 fault=throttled status=429 retry-after=1m0s
request n=6 fault=in-flight
request n=7 fault=refused
request n=8 fault=key-conflict
request n=9 fault=failed-after-acting
request n=10 fault=late-reply
`, `design name=pool
backend name=postgres
replicas n=3
approve at=0s case=case-1 title="call replica=2 today" replica=2
process-crash at=1s replica=3
connection-reset at=2s replica=1
offline at=3s for=10s
key case=case-1 fault=late-reply
key case=case-2 fault=key-conflict
key case=case-3 fault=refused
key case=case-4 fault=offline
request n=1 fault=paused for=40s
`} {
		if got := parse(t, text).String(); got != text {
			t.Errorf("written back:\n%s\nwant:\n%s", got, text)
		}
	}
}

// TestDrawnSchedulesReadBack: every schedule the search draws, on either
// backend, with any number of processes, and every schedule minimizing
// makes of it, is a file that reads back as itself: a minimal schedule
// saved into the corpus replays.
func TestDrawnSchedulesReadBack(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := rapid.SampledFrom(append([]designs.Running{designs.Plain, designs.Pool}, designs.RunningFragile...)).Draw(rt, "design")
		backend := rapid.SampledFrom([]string{"sqlite", "postgres"}).Draw(rt, "backend")
		s := running.Draw(rt, d, backend, rapid.IntRange(0, running.MaxReplicas).Draw(rt, "replicas"))
		for i, c := range append([]running.Schedule{s, s.Unused(rapid.IntRange(0, 12).Draw(rt, "requests made"))}, s.Smaller()...) {
			text := c.String()
			back, err := running.ParseSchedule("drawn", strings.NewReader(text))
			if err != nil {
				rt.Fatalf("schedule %d (0 drawn, 1 its unused answers dropped, then the smaller ones) does not read back: %v\n%s", i, err, text)
			}
			if got := back.String(); got != text {
				rt.Fatalf("schedule %d reads back as another:\n%s\nwant:\n%s", i, got, text)
			}
		}
	})
}

// TestScheduleFileRefuses: a bad line is refused with the file's name,
// its line number and what it wants.
func TestScheduleFileRefuses(t *testing.T) {
	const head = "design name=pool\nbackend name=sqlite\n"
	for _, tt := range []struct{ text, want string }{
		{"backend name=sqlite\nprocess-crash at=0s\n", "inline: no design line (design name=NAME)"},
		{"design name=pool\nprocess-crash at=0s\n", "inline: no backend line"},
		{"design pool\n", `inline:1: want key=value, got "pool"`},
		{"design name=pool\nbackend name=mysql\n", "inline:2: backend name=mysql: want sqlite or postgres"},
		{"design name=pool\nbackend\n", "inline:2: backend needs name="},
		{head + "process-crash at=2s\nprocess-crash at=1s\n", "inline:4: process-crash at=1s comes before the event above (at=2s)"},
		{head + "process-crash at=soon\n", "inline:3: process-crash at=soon: want a duration of at least 0s"},
		{head + "process-crash\n", "inline:3: process-crash needs at="},
		{head + "explode at=1s\n", "inline:3: explode: want design, backend, replicas, key, request, or an event: approve, commit-reply-lost, connection-reset, offline, process-crash"},
		{head + "commit-lost at=1s\n", "inline:3: commit-lost: a fault the step mode alone injects"},
		{head + "approve at=1s case=case-1\n", "approve needs title="},
		{head + `approve at=1s case= title="t"` + "\n", "approve case=: want the case approved"},
		{head + "offline at=1s\n", "offline needs for="},
		{head + "offline at=1s for=0s\n", "offline for=0s: want a duration of at least 1ns"},
		{head + "offline at=1s for=1s replica=1\n", `offline takes no argument "replica"`},
		{head + "process-crash at=1s now=yes\n", `process-crash takes no argument "now" (it takes at, replica)`},
		{head + "request n=0 fault=lost-reply\n", "request n=0: n is the request's number, from 1"},
		{head + "request n=1 fault=teapot\n", "request fault=teapot: want one of lost-reply, late-reply, paused, throttled, in-flight, failed-after-acting, refused, key-conflict"},
		{head + "request n=1 fault=mangled\n", "request fault=mangled: a fault the step mode alone injects; want one of"},
		{head + "request n=1 fault=paused\n", "request n=1 fault=paused needs for=, how long"},
		{head + "request n=1 fault=throttled status=503\n", "request n=1 fault=throttled needs retry-after=, how long"},
		{head + "request n=1 fault=throttled retry-after=1s\n", "request n=1 fault=throttled needs status=, one of 503, 429"},
		{head + "request n=1 fault=throttled status=418 retry-after=1s\n", "needs status=, one of 503, 429"},
		{head + "request n=1 fault=refused status=400\n", "request n=1 fault=refused takes no status="},
		{head + "request n=1 fault=refused for=2s\n", "request n=1 fault=refused takes no for="},
		{head + "request n=1 fault=refused\nrequest n=1 fault=failed-after-acting\n", "inline:4: request n=1 has a rule already"},
		{head + "replicas n=4\n", "replicas n=4: want how many processes run side by side, 1 to 3"},
		{head + "replicas n=2\nprocess-crash at=1s replica=3\n", "process-crash at=1s strikes replica 3, and the schedule runs 2"},
		{head + "process-crash at=1s replica=0\n", "process-crash replica=0: want the process's number, from 1"},
		{head + "key case=case-1 fault=throttled\n", "key fault=throttled: want one of refused, key-conflict, late-reply, offline"},
		{head + "key case= fault=offline\n", "key case=: want the case"},
		{head + "connection-reset at=1s\n", "connection-reset at=1s on backend sqlite: a SQLite file has no connection to lose but in a process-crash"},
		{head + "commit-reply-lost at=1s\n", "commit-reply-lost at=1s on backend sqlite"},
		{head + "key case=case-1 fault=late-reply\nkey case=case-1 fault=offline\n", "key case=case-1 has a rule already"},
		{head + "key case=case-1\n", "key needs fault="},
	} {
		_, err := running.ParseSchedule("inline", strings.NewReader(tt.text))
		if !errors.Is(err, running.ErrSchedule) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error with %q", tt.text, err, tt.want)
		}
	}
}

// TestSmallerSchedules: each smaller schedule lacks exactly one line or
// one replica, and Unused drops the answers of requests never made.
func TestSmallerSchedules(t *testing.T) {
	s := parse(t, `design name=pool
backend name=sqlite
replicas n=2
approve at=0s case=case-1 title=t replica=2
process-crash at=1s replica=2
key case=case-1 fault=late-reply
request n=1 fault=lost-reply
request n=5 fault=failed-after-acting
`)
	smaller := s.Smaller()
	if len(smaller) != 1+2+2+1+1+1 {
		t.Fatalf("%d smaller schedules, want 8 (a replica, two events, two answers, a key, request 1's answer gone and 5's for 4, 5's for 4)", len(smaller))
	}
	if c := smaller[6]; len(c.Answers) != 1 || c.Answers[0] != (running.AnswerRule{N: 4, Answer: running.FailedAfterActing}) {
		t.Errorf("request 1's answer gone, the next one sooner: %+v", c.Answers)
	}
	if last := smaller[len(smaller)-1]; last.Size() != s.Size() || last.Answers[1].N != 4 || s.Answers[1].N != 5 {
		t.Errorf("request 5's answer moved: %+v (from %+v)", last.Answers, s.Answers)
	}
	if first := smaller[0]; first.Replicas != 1 || first.Events[0].Replica != 0 || first.Size() != s.Size() {
		t.Errorf("one replica fewer: %+v", first)
	}
	for i, c := range smaller[1 : len(smaller)-2] {
		if c.Size() != s.Size()-1 {
			t.Errorf("smaller %d holds %d lines, want %d", i+1, c.Size(), s.Size()-1)
		}
	}
	if s.Size() != 5 || len(s.Events) != 2 {
		t.Errorf("Smaller changed the schedule it came from: %+v", s)
	}
	if u := s.Unused(3); len(u.Answers) != 1 || u.Answers[0].N != 1 || len(s.Answers) != 2 {
		t.Errorf("Unused(3): %+v, want request 1's rule alone", u.Answers)
	}
	if u := s.Unused(5); len(u.Answers) != 2 {
		t.Errorf("Unused(5): %+v, want both rules: request 5 was made", u.Answers)
	}
	if last := parse(t, "design name=pool\nbackend name=sqlite\noffline at=10s for=2m0s\nprocess-crash at=1m0s\n").Last(); last != 2*time.Minute+10*time.Second {
		t.Errorf("Last: %v, want the outage's end, 2m10s", last)
	}
}

// listening is a running design whose boot listens for PostgreSQL's
// notifications, as a queue library does by default: a goroutine that
// waits on a real socket, which stops virtual time.
var listening = designs.Running{Name: "listening", Settle: time.Minute, Boot: func(ctx context.Context, p designs.Process) (designs.Booted, error) {
	done, err := pgtest.Listen(ctx, p.Database(), p.Dial)
	if err != nil {
		return nil, err
	}
	return listener{done}, nil
}}

type listener struct{ done <-chan struct{} }

func (l listener) Approve(context.Context, string, string) (string, string, error) {
	return "", "", nil
}
func (l listener) Read(context.Context) (map[string]designs.RunningRow, error) { return nil, nil }
func (l listener) Stop() error {
	<-l.done
	return nil
}

// stopFails is a running design whose Stop reports an error when the
// boot it stops is one of those in failing (counted from 1): what a
// library's Stop says after its connections were cut under it.
func stopFails(failing ...int) designs.Running {
	var mu sync.Mutex
	boots := 0
	return designs.Running{Name: "stop-fails", Settle: time.Second, Boot: func(context.Context, designs.Process) (designs.Booted, error) {
		mu.Lock()
		defer mu.Unlock()
		boots++
		return stopResult{fail: slices.Contains(failing, boots)}, nil
	}}
}

// stopResult is a boot of stopFails: it approves nothing, shows no row,
// and its Stop fails when fail says.
type stopResult struct{ fail bool }

func (s stopResult) Approve(context.Context, string, string) (string, string, error) {
	return "", "", nil
}
func (s stopResult) Read(context.Context) (map[string]designs.RunningRow, error) { return nil, nil }
func (s stopResult) Stop() error {
	if s.fail {
		return errors.New("the connections were cut")
	}
	return nil
}

// TestStopAfterACrash: a Stop that fails after its process crashed is
// what a crash does; one that fails while its process lives is a
// process ending with an error, and fails the run.
func TestStopAfterACrash(t *testing.T) {
	for _, tc := range []struct {
		failing []int
		broken  bool
	}{{[]int{1}, false}, {[]int{2}, true}, {nil, false}} {
		s := parse(t, "design name=stop-fails\nbackend name=sqlite\nprocess-crash at=1s\n")
		res := running.Run(t, running.Config{Design: stopFails(tc.failing...), Database: filepath.Join(t.TempDir(), "app.db"), Backend: "sqlite"}, s)
		if broken := res.Violation != nil && res.Violation.Check == "run"; broken != tc.broken || res.Violation != nil && !broken {
			t.Errorf("Stop failing at boots %v: %v, want the run broken %v", tc.failing, res.Violation, tc.broken)
		}
	}
}

// TestListenIsRefused: a design that waits on a real socket (a LISTEN)
// stops virtual time; the run fails after the stall with the option to
// change, instead of hanging, and says it stalled; a library that
// connects again to listen again after the cut gets no connection.
func TestListenIsRefused(t *testing.T) {
	for _, d := range []designs.Running{listening, relistening} {
		t.Run(d.Name, func(t *testing.T) {
			s := parse(t, "design name="+d.Name+"\nbackend name=postgres\nprocess-crash at=1s\n")
			res := running.Run(t, running.Config{Design: d, Database: pgtest.URL(t), Backend: "postgres", Stall: time.Second}, s)
			if res.Violation == nil || res.Violation.Check != "run" || !strings.Contains(res.Violation.Detail, "poll-only") || !res.Stalled {
				t.Fatalf("got %v, stalled %t; want the run stopped with the option to change", res.Violation, res.Stalled)
			}
		})
	}
}

// relistening listens as a library that connects again whenever its
// listening connection fails, after a second's wait when it cannot.
var relistening = designs.Running{Name: "relistening", Settle: time.Minute, Boot: func(ctx context.Context, p designs.Process) (designs.Booted, error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if listened, err := pgtest.Listen(ctx, p.Database(), p.Dial); err != nil {
				time.Sleep(time.Second)
			} else {
				<-listened
			}
		}
	}()
	return listener{done}, nil
}}

// lockWaiting is a design whose processes share one row: each locks it
// in a transaction and holds the lock across a minute of virtual time,
// so the second process to boot waits for the lock on the server, which
// stops virtual time while the first waits on it.
var lockWaiting = designs.Running{Name: "lock-waiting", Settle: time.Minute, Boot: func(ctx context.Context, p designs.Process) (designs.Booted, error) {
	conn, schema, err := pgtest.Connect(ctx, p.Database(), p.Dial)
	if err != nil {
		return nil, err
	}
	setup := []string{`SELECT pg_advisory_xact_lock(1)`, `CREATE SCHEMA IF NOT EXISTS ` + pgx.Identifier{schema}.Sanitize(),
		`CREATE TABLE IF NOT EXISTS one_row (id INT PRIMARY KEY)`, `INSERT INTO one_row VALUES (1) ON CONFLICT DO NOTHING`}
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, q := range setup {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer conn.Close(context.WithoutCancel(ctx))
		pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT id FROM one_row FOR UPDATE`); err != nil {
				return err
			}
			select {
			case <-time.After(time.Minute):
			case <-ctx.Done():
			}
			return nil
		})
	}()
	return listener{done}, nil
}}

// TestLockWaitIsCut: a process that waits on the server for a row lock
// that another process holds across a wait on virtual time stops the
// run, which says what to change: no wait on another's lock.
func TestLockWaitIsCut(t *testing.T) {
	s := parse(t, "design name=lock-waiting\nbackend name=postgres\nreplicas n=2\n")
	res := running.Run(t, running.Config{Design: lockWaiting, Database: pgtest.URL(t), Backend: "postgres", Stall: time.Second}, s)
	if res.Violation == nil || res.Violation.Check != "run" || !strings.Contains(res.Violation.Detail, "SKIP LOCKED") || !res.Stalled {
		t.Fatalf("got %v, stalled %t; want the run stopped with the ways out of a lock wait", res.Violation, res.Stalled)
	}
}

// TestLeftBehind: a design that leaves a goroutine waiting for good, after
// its Stop or after a Boot that failed, fails the run with what it left,
// and keeps what the run found before: a boot's error is not lost to the
// bubble's panic.
func TestLeftBehind(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave bool // a goroutine started and left waiting
		boot  error
		want  []string
	}{
		{"boot fails", false, errors.New("cannot migrate"), []string{"cannot migrate"}},
		{"boot fails, a goroutine left", true, errors.New("cannot migrate"), []string{"cannot migrate", "waits for good after the run"}},
		{"stop leaves a goroutine", true, nil, []string{"waits for good after the run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := designs.Running{Name: "left-behind", Settle: time.Second, Boot: func(context.Context, designs.Process) (designs.Booted, error) {
				if tc.leave {
					forever := make(chan struct{}) // made in the bubble and never closed: a wait on it is for good
					go func() { <-forever }()
				}
				if tc.boot != nil {
					return nil, tc.boot
				}
				return stopResult{}, nil
			}}
			s := parse(t, "design name=left-behind\nbackend name=sqlite\nprocess-crash at=1s\n")
			res := running.Run(t, running.Config{Design: d, Database: filepath.Join(t.TempDir(), "app.db"), Backend: "sqlite"}, s)
			if res.Violation == nil || res.Violation.Check != "run" {
				t.Fatalf("got %v, want the run broken", res.Violation)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Violation.Detail, w) {
					t.Errorf("the run's violation %q does not say %q", res.Violation.Detail, w)
				}
			}
			if res.Boots == 0 {
				t.Errorf("the result counts no boot")
			}
		})
	}
}

// healsAfterACrash is a running design whose first boot shows every
// approved row sent to task 42, a task the receiver never made, and
// whose later boots show the rows pending: a history broken while the
// schedule plays and whole again by its end.
func healsAfterACrash() designs.Running {
	var mu sync.Mutex
	boots := 0
	keys := map[string]bool{}
	return designs.Running{Name: "heals", Settle: 10 * time.Second, Boot: func(context.Context, designs.Process) (designs.Booted, error) {
		mu.Lock()
		defer mu.Unlock()
		boots++
		return healing{mu: &mu, keys: keys, first: boots == 1}, nil
	}}
}

// healing is a boot of healsAfterACrash.
type healing struct {
	mu    *sync.Mutex
	keys  map[string]bool
	first bool
}

func (h healing) Approve(_ context.Context, caseID, title string) (string, string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := system.KeyPrefix + caseID
	h.keys[key] = true
	return key, fmt.Sprintf(`{"case_id":%q,"title":%q}`, caseID, title), nil
}

func (h healing) Read(context.Context) (map[string]designs.RunningRow, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rows := map[string]designs.RunningRow{}
	for key := range h.keys {
		rows[key] = designs.RunningRow{State: designs.RowPending}
		if h.first {
			rows[key] = designs.RunningRow{State: designs.RowSent, TaskID: 42, Attempts: 1}
		}
	}
	return rows, nil
}

func (h healing) Stop() error { return nil }

// TestChecksAfterEveryEvent: the history is checked after every event
// of the schedule, not only once it is over: a design that shows a row
// sent to a task that does not exist breaks a check at that event, though
// it shows the row pending after the crash that comes later.
func TestChecksAfterEveryEvent(t *testing.T) {
	s := parse(t, "design name=heals\nbackend name=sqlite\napprove at=1s case=case-1 title=t\nprocess-crash at=1m\n")
	res := running.Run(t, running.Config{Design: healsAfterACrash(), Database: filepath.Join(t.TempDir(), "app.db"), Backend: "sqlite"}, s)
	if v := res.Violation; v == nil || v.At != time.Second || v.Check != "H5" {
		t.Errorf("got %v, want H5 broken at 1s, the approval's event", v)
	}
}

// resendsAfterFinal is a running design that sends each approved key
// once, shows it blocked (refused) or sent by the answer, and sends it
// once more 20 s later: a job left in its queue behind a row shown final.
func resendsAfterFinal() designs.Running {
	return designs.Running{Name: "resends", Settle: 10 * time.Minute, Counts: designs.CountsNothing, Boot: func(ctx context.Context, p designs.Process) (designs.Booted, error) {
		run, cancel := context.WithCancel(ctx)
		return &resending{ctx: run, cancel: cancel, r: p.Receiver(), rows: map[string]designs.RunningRow{}}, nil
	}}
}

// resending is a boot of resendsAfterFinal.
type resending struct {
	ctx    context.Context
	cancel context.CancelFunc
	r      system.Receiver
	wg     sync.WaitGroup
	mu     sync.Mutex
	rows   map[string]designs.RunningRow
}

func (b *resending) Approve(_ context.Context, caseID, title string) (string, string, error) {
	a, err := system.NewApproval(caseID, title)
	if err != nil {
		return "", "", err
	}
	b.mu.Lock()
	b.rows[a.Key] = designs.RunningRow{State: designs.RowPending, Attempts: -1}
	b.mu.Unlock()
	b.wg.Go(func() {
		id, err := b.r.CreateTask(b.ctx, a.Key, a.Payload)
		row := designs.RunningRow{State: designs.RowSent, TaskID: id, Attempts: -1}
		if err != nil {
			row = designs.RunningRow{State: designs.RowBlocked, Attempts: -1, Reason: err.Error()}
		}
		b.mu.Lock()
		b.rows[a.Key] = row
		b.mu.Unlock()
		select {
		case <-time.After(20 * time.Second):
			b.r.CreateTask(b.ctx, a.Key, a.Payload)
		case <-b.ctx.Done():
		}
	})
	return a.Key, a.Payload, nil
}

func (b *resending) Read(context.Context) (map[string]designs.RunningRow, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.rows), nil
}

func (b *resending) Stop() error {
	b.cancel()
	b.wg.Wait()
	return nil
}

// TestWatchesAfterEveryKeyIsFinal: the run goes on for a while once
// every key is final, so that an outbox that sends a key again after
// showing it blocked for a refusal is seen doing it (H8), though every
// key was final, and no request under way, at the first read after the
// schedule.
func TestWatchesAfterEveryKeyIsFinal(t *testing.T) {
	s := parse(t, "design name=resends\nbackend name=sqlite\napprove at=1s case=case-1 title=t\nkey case=case-1 fault=refused\n")
	res := running.Run(t, running.Config{Design: resendsAfterFinal(), Database: filepath.Join(t.TempDir(), "app.db"), Backend: "sqlite"}, s)
	if v := res.Violation; v == nil || v.Check != "H8" {
		t.Fatalf("got %v, want H8: the refused key sent again 20 s after it was shown blocked\n%s", v, res.Story())
	}
	if !strings.Contains(res.Story(), "every key is final; watching for") {
		t.Errorf("the story does not say the run watched on once every key was final:\n%s", res.Story())
	}
}
