package running_test

import (
	"context"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/handoff/internal/pgtest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/running"
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
	s := parse(t, `design pool
backend sqlite
at 0s approve case-1 "Call about the approved repair plan"
at 100ms approve case-2 "Second"
at 2s crash
at 3s approve case-3 "Third"
at 4s outage 30s
request 1 lost-reply
request 2 hold 45s
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

// TestScheduleFile: a schedule reads back as it was written, and a bad
// line is refused with its line number and what it wants.
func TestScheduleFile(t *testing.T) {
	text := `design pool
backend postgres
at 0s approve case-1 "Rappeler: plan de réparation"
at 1.5s crash
at 2s reset
at 2s commit-reply-lost
at 1m0s outage 40s
request 1 lost-reply
request 3 hold 45s
request 4 503 2s
request 7 400
`
	if got := parse(t, text).String(); got != text {
		t.Errorf("written back:\n%s\nwant:\n%s", got, text)
	}
	for _, tt := range []struct{ text, want string }{
		{"backend sqlite\nat 0s crash\n", "no design line"},
		{"design pool\nat 0s crash\n", "no backend line"},
		{"design pool\nbackend mysql\n", "inline:2: backend \"mysql\": want sqlite or postgres"},
		{"design pool\nbackend sqlite\nat 2s crash\nat 1s crash\n", "inline:4: at 1s comes before"},
		{"design pool\nbackend sqlite\nat soon crash\n", "inline:3: at \"soon\""},
		{"design pool\nbackend sqlite\nat 1s explode\n", "inline:3: event \"explode\""},
		{"design pool\nbackend sqlite\nat 1s approve case-1 untitled\n", "want approve CASE \"TITLE\""},
		{"design pool\nbackend sqlite\nat 1s outage\n", "want outage DURATION"},
		{"design pool\nbackend sqlite\nat 1s crash now\n", "crash takes nothing after it"},
		{"design pool\nbackend sqlite\nat 1s commit-lost\n", "a COMMIT carried out whose reply is lost is commit-reply-lost"},
		{"design pool\nbackend sqlite\nrequest 0 lost-reply\n", "N is the request's number, from 1"},
		{"design pool\nbackend sqlite\nrequest 1 418\n", "answer \"418\": want one of"},
		{"design pool\nbackend sqlite\nrequest 1 hold\n", "request 1 hold needs how long"},
		{"design pool\nbackend sqlite\nrequest 1 400 2s\n", "request 1 400 takes no time after it"},
		{"design pool\nbackend sqlite\nrequest 1 400\nrequest 1 500\n", "request 1 has a rule already"},
		{"design pool\nbackend sqlite\nwhen 1s crash\n", "\"when\": want design, backend, replicas, at, request or key"},
		{"design pool\nbackend sqlite\nreplicas 4\n", "replicas \"4\": want how many processes run side by side, 1 to 3"},
		{"design pool\nbackend sqlite\nreplicas 2\nat 1s crash replica=3\n", "at 1s crash strikes replica 3, and the schedule runs 2"},
		{"design pool\nbackend sqlite\nat 1s crash replica=0\n", "crash replica=0: want the process's number"},
		{"design pool\nbackend sqlite\nkey case-1 404\n", "key fault \"404\": want one of 400, 422, slow, down"},
		{"design pool\nbackend sqlite\nkey case-1 slow\nkey case-1 down\n", "key case-1 has a rule already"},
		{"design pool\nbackend sqlite\nkey case-1\n", "want key CASE FAULT"},
	} {
		_, err := running.ParseSchedule("inline", strings.NewReader(tt.text))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error with %q", tt.text, err, tt.want)
		}
	}
}

// TestScheduleFileWithReplicasAndKeys: replicas, replica= and key lines
// read back as they were written, a title that holds " replica=" among
// them.
func TestScheduleFileWithReplicasAndKeys(t *testing.T) {
	for _, text := range []string{`design pool
backend sqlite
replicas 3
at 0s approve case-1 "call replica=2 today" replica=2
at 1s crash replica=3
at 2s reset replica=1
at 3s outage 10s
key case-1 slow
key case-2 422
request 1 hold 40s
`, `design pool
backend postgres
at 0s approve case-1 "call replica=2 today"
key case-1 down
`} {
		if got := parse(t, text).String(); got != text {
			t.Errorf("written back:\n%s\nwant:\n%s", got, text)
		}
	}
}

// TestSmallerSchedules: each smaller schedule lacks exactly one line or
// one replica, and Unused drops the answers of requests never made.
func TestSmallerSchedules(t *testing.T) {
	s := parse(t, `design pool
backend sqlite
replicas 2
at 0s approve case-1 "t" replica=2
at 1s crash replica=2
key case-1 slow
request 1 lost-reply
request 5 500
`)
	smaller := s.Smaller()
	if len(smaller) != 1+2+2+1+1+1 {
		t.Fatalf("%d smaller schedules, want 8 (a replica, two events, two answers, a key, request 1's answer gone and 5's for 4, 5's for 4)", len(smaller))
	}
	if c := smaller[6]; len(c.Answers) != 1 || c.Answers[0] != (running.AnswerRule{N: 4, Answer: running.Failed}) {
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
}

// listening is a running design whose boot listens for PostgreSQL's
// notifications, as a queue library does by default: a goroutine that
// waits on a real socket, which stops virtual time.
var listening = designs.Running{Name: "listening", Settle: time.Minute, Boot: func(ctx context.Context, p designs.Process) (designs.Booted, error) {
	cfg, err := pgx.ParseConfig(p.Database())
	if err != nil {
		return nil, err
	}
	delete(cfg.RuntimeParams, "schema")
	cfg.DialFunc = p.Dial
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN jobs"); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn.WaitForNotification(ctx) // returns once the connection is cut
	}()
	return listener{done}, nil
}}

type listener struct{ done chan struct{} }

func (l listener) Approve(context.Context, string, string) (string, string, error) {
	return "", "", nil
}
func (l listener) Read(context.Context) (map[string]designs.RunningRow, error) { return nil, nil }
func (l listener) Stop() error {
	<-l.done
	return nil
}

// TestListenIsRefused: a design that waits on a real socket (a LISTEN)
// stops virtual time; the run fails after the stall with the option to
// change, instead of hanging.
func TestListenIsRefused(t *testing.T) {
	s := parse(t, "design listening\nbackend postgres\nat 1s crash\n")
	res := running.Run(t, running.Config{Design: listening, Database: pgtest.URL(t), Backend: "postgres", Stall: time.Second}, s)
	if res.Violation == nil || res.Violation.Check != "run" || !strings.Contains(res.Violation.Detail, "poll-only") {
		t.Fatalf("got %v, want the run stopped with the option to change", res.Violation)
	}
}
