package system_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/system"
)

const (
	caseID = "case-104"
	title  = "Call about the approved repair plan"
	key    = system.KeyPrefix + caseID
)

var errCrash = errors.New("crash")

// approvedAt is the fixed clock of tests that look at times.
var approvedAt = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// A backend is where a test opens its app database: a new SQLite file, or
// a new PostgreSQL schema (skipped without a server; see pgtest).
type backend struct {
	name string
	app  func(t testing.TB) string
}

var (
	sqliteBackend   = backend{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "app.db") }}
	postgresBackend = backend{"postgres", pgtest.URL}
)

// eachBackend runs test on each backend, as a subtest named after it,
// in parallel with the other parallel tests: each opens databases of its
// own.
func eachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	t.Parallel()
	for _, b := range []backend{sqliteBackend, postgresBackend} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b)
		})
	}
}

// pair is where openPair opened the app database, and the folder of the
// CRM's file.
type pair struct{ app, dir string }

// openPair opens an app database on b and a CRM database in a fresh
// folder, and closes them when the test or benchmark ends.
func openPair(t testing.TB, b backend, opts system.Options) (*system.Outbox, *system.CRM, pair) {
	t.Helper()
	dir := t.TempDir()
	target := b.app(t)
	app, err := system.Open(t.Context(), target, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	crm, err := system.OpenCRM(t.Context(), filepath.Join(dir, "crm.db"), opts.Durability)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crm.Close() })
	return app, crm, pair{target, dir}
}

func snapshot(t *testing.T, app *system.Outbox) system.Snapshot {
	t.Helper()
	s, err := app.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRecordApproval(t *testing.T) { eachBackend(t, testRecordApproval) }

func testRecordApproval(t *testing.T, b backend) {
	ctx := t.Context()
	app, _, _ := openPair(t, b, system.Options{Harness: system.Harness{Now: func() time.Time { return approvedAt }}})
	got, err := app.RecordApproval(ctx, caseID, "  "+title+" ")
	if err != nil || got != key {
		t.Fatalf("got %q, %v; want %q, nil", got, err, key)
	}
	want := snapshot(t, app)
	if len(want.Approvals) != 1 || want.Approvals[0].Title != title {
		t.Fatalf("got approvals %+v, want one with the trimmed title", want.Approvals)
	}
	if r := want.Outbox[0]; r != (system.Row{Key: key, State: system.Pending, CreatedAt: approvedAt, NextAttemptAt: approvedAt}) {
		t.Fatalf("got row %+v, want pending with 0 attempts, approved at %v", r, approvedAt)
	}
	if r, err := app.Row(ctx, key); err != nil || r != want.Outbox[0] {
		t.Fatalf("Row(%s): got %+v, %v; want %+v", key, r, err, want.Outbox[0])
	}
	if _, err := app.Row(ctx, key+"x"); !errors.Is(err, system.ErrNotFound) {
		t.Fatalf("Row of an unknown key: got %v, want ErrNotFound", err)
	}

	if got, err := app.RecordApproval(ctx, caseID, title); err != nil || got != key {
		t.Errorf("repeat: got %q, %v; want %q, nil", got, err, key)
	}
	// A title is compared as the person approved it, trimmed: one that
	// differs in anything else is another action under the same key.
	for _, changed := range []string{"Another title", strings.ToUpper(title), strings.ToLower(title), title + "."} {
		if _, err := app.RecordApproval(ctx, caseID, changed); !errors.Is(err, system.ErrKeyConflict) {
			t.Errorf("changed title %q: got %v, want ErrKeyConflict", changed, err)
		}
	}
	if _, err := app.RecordApproval(ctx, "case/104", title); !errors.Is(err, system.ErrInvalidInput) {
		t.Errorf("bad case: got %v, want ErrInvalidInput", err)
	}
	if diff := cmp.Diff(want, snapshot(t, app)); diff != "" {
		t.Errorf("repeat, conflict and invalid input changed the database (-before +after):\n%s", diff)
	}
}

func TestRecordApprovalCrashLeavesNothing(t *testing.T) {
	eachBackend(t, testRecordApprovalCrashLeavesNothing)
}

func testRecordApprovalCrashLeavesNothing(t *testing.T, b backend) {
	ctx := t.Context()
	app, _, files := openPair(t, b, system.Options{Harness: system.Harness{Hook: func(p system.FaultPoint) error {
		if p == system.PointBetweenApprovalInserts {
			return errCrash
		}
		return nil
	}}})
	if _, err := app.RecordApproval(ctx, caseID, title); !errors.Is(err, errCrash) {
		t.Fatalf("got %v, want the hook's error", err)
	}
	app.Close()
	reopened, err := system.Open(ctx, files.app, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	if s := snapshot(t, reopened); len(s.Approvals)+len(s.Outbox) != 0 {
		t.Errorf("got %+v after a crash between the inserts, want nothing", s)
	}
}

func TestRecordApprovalTxJoinsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	app, _, _ := openPair(t, sqliteBackend, system.Options{})
	if _, err := app.DB().ExecContext(ctx, `CREATE TABLE repairs (case_id TEXT PRIMARY KEY, plan TEXT)`); err != nil {
		t.Fatal(err)
	}
	for _, commit := range []bool{false, true} {
		tx, err := app.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO repairs VALUES (?, 'replace the pump')`, caseID); err != nil {
			t.Fatal(err)
		}
		if _, err := app.RecordApprovalTx(ctx, tx, caseID, title); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		var repairs int
		if err := app.DB().QueryRowContext(ctx, `SELECT count(*) FROM repairs`).Scan(&repairs); err != nil {
			t.Fatal(err)
		}
		s := snapshot(t, app)
		want := 0
		if commit {
			want = 1
		}
		if repairs != want || len(s.Approvals) != want || len(s.Outbox) != want {
			t.Errorf("commit=%v: got %d repairs, %d approvals, %d rows; want %d of each", commit, repairs, len(s.Approvals), len(s.Outbox), want)
		}
	}
}

// receiverFunc adapts a function to system.Receiver.
type receiverFunc func(ctx context.Context, key, payload string) (int64, error)

func (f receiverFunc) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	return f(ctx, key, payload)
}

func TestDeliverOne(t *testing.T) { eachBackend(t, testDeliverOne) }

func testDeliverOne(t *testing.T, b backend) {
	errOther := errors.New("certificate expired")
	transient := receiverFunc(func(context.Context, string, string) (int64, error) {
		return 0, fmt.Errorf("%w: timeout", system.ErrTransient)
	})
	// unrecorded leaves attempts counted and nothing recorded, as a crash
	// after the reply does.
	unrecorded := receiverFunc(func(context.Context, string, string) (int64, error) {
		return 0, errOther
	})
	tests := []struct {
		name     string
		attempts int             // deliveries before the one under test
		before   system.Receiver // receiver of those deliveries
		receiver system.Receiver // nil: the durable CRM
		want     system.Delivery
		wantErr  error
		sends    int // sends of the delivery under test
	}{
		{"sent", 0, nil, nil, system.Delivery{Result: system.ResultSent, Key: key, Attempts: 1, RemoteID: 1}, nil, 1},
		{"transient keeps it pending", 0, nil, transient, system.Delivery{Result: system.ResultPending, Key: key, Attempts: 1, LastError: "transient"}, nil, 1},
		{"transient on the last attempt blocks", 2, transient, transient, system.Delivery{Result: system.ResultBlocked, Key: key, Attempts: 3, LastError: "transient"}, nil, 1},
		{"spent budget blocks without a send", 3, unrecorded, nil, system.Delivery{Result: system.ResultBlocked, Key: key, Attempts: 3, LastError: "budget-exhausted"}, nil, 0},
		{"conflict blocks", 0, nil, receiverFunc(func(context.Context, string, string) (int64, error) {
			return 0, fmt.Errorf("%w: other content", system.ErrKeyConflict)
		}), system.Delivery{Result: system.ResultBlocked, Key: key, Attempts: 1, LastError: "conflict"}, nil, 1},
		{"other errors come back, the attempt counted", 0, nil, unrecorded, system.Delivery{Result: system.ResultPending, Key: key, Attempts: 1}, errOther, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			app, crm, _ := openPair(t, b, system.Options{NoBackoff: true})
			if _, err := app.RecordApproval(ctx, caseID, title); err != nil {
				t.Fatal(err)
			}
			for range tt.attempts {
				_, _ = app.DeliverOne(ctx, tt.before)       // its effect shows in the delivery under test
				if _, err := app.Recover(ctx); err != nil { // as the worker does when it starts again
					t.Fatal(err)
				}
			}
			sends := 0
			inner := tt.receiver
			if inner == nil {
				inner = crm
			}
			counted := receiverFunc(func(ctx context.Context, k, p string) (int64, error) {
				sends++
				return inner.CreateTask(ctx, k, p)
			})
			got, err := app.DeliverOne(ctx, counted)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if sends != tt.sends {
				t.Errorf("got %d sends, want %d", sends, tt.sends)
			}
			row := snapshot(t, app).Outbox[0]
			if string(row.State) != string(got.Result) || row.Attempts != got.Attempts || row.RemoteID != got.RemoteID {
				t.Errorf("row %+v does not match the delivery %+v", row, got)
			}
		})
	}
}

func TestDeliverOneIdle(t *testing.T) { eachBackend(t, testDeliverOneIdle) }

func testDeliverOneIdle(t *testing.T, b backend) {
	app, crm, _ := openPair(t, b, system.Options{})
	got, err := app.DeliverOne(t.Context(), crm)
	if err != nil || got != (system.Delivery{Result: system.Idle}) {
		t.Errorf("got %+v, %v; want idle", got, err)
	}
}

func TestDeliverOneTakesTheOldestPendingRow(t *testing.T) {
	eachBackend(t, testDeliverOneTakesTheOldestPendingRow)
}

func testDeliverOneTakesTheOldestPendingRow(t *testing.T, b backend) {
	ctx := t.Context()
	app, crm, _ := openPair(t, b, system.Options{})
	for _, c := range []string{"case-3", "case-1", "case-2"} {
		if _, err := app.RecordApproval(ctx, c, title); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"case-3", "case-1", "case-2"} {
		d, err := app.DeliverOne(ctx, crm)
		if err != nil || d.Key != system.KeyPrefix+c {
			t.Errorf("got %+v, %v; want %s sent", d, err, c)
		}
	}
}

// TestDeliverOneSendsOutsideTransactions writes to the app database from a
// second handle while the receiver handles the request: if the worker held
// a transaction across the send, the write would wait for its lock.
func TestDeliverOneSendsOutsideTransactions(t *testing.T) {
	eachBackend(t, testDeliverOneSendsOutsideTransactions)
}

func testDeliverOneSendsOutsideTransactions(t *testing.T, b backend) {
	ctx := t.Context()
	app, crm, files := openPair(t, b, system.Options{})
	other, err := system.Open(ctx, files.app, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := app.RecordApproval(ctx, caseID, title); err != nil {
		t.Fatal(err)
	}
	receiver := receiverFunc(func(ctx context.Context, k, p string) (int64, error) {
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := other.RecordApproval(short, "case-105", title); err != nil {
			return 0, fmt.Errorf("writing during the send: %v", err)
		}
		return crm.CreateTask(ctx, k, p)
	})
	if d, err := app.DeliverOne(ctx, receiver); err != nil || d.Result != system.ResultSent {
		t.Fatalf("got %+v, %v; want sent", d, err)
	}
}

func TestDeliverOneCrashPoints(t *testing.T) { eachBackend(t, testDeliverOneCrashPoints) }

func testDeliverOneCrashPoints(t *testing.T, b backend) {
	for _, point := range []system.FaultPoint{system.PointBeforeSend, system.PointAfterReply} {
		t.Run(string(point), func(t *testing.T) {
			ctx := t.Context()
			app, crm, _ := openPair(t, b, system.Options{Harness: system.Harness{Hook: func(p system.FaultPoint) error {
				if p == point {
					return errCrash
				}
				return nil
			}}})
			if _, err := app.RecordApproval(ctx, caseID, title); err != nil {
				t.Fatal(err)
			}
			if _, err := app.DeliverOne(ctx, crm); !errors.Is(err, errCrash) {
				t.Fatalf("got %v, want the hook's error", err)
			}
			tasks, err := crm.Tasks(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantTasks := 0
			if point == system.PointAfterReply {
				wantTasks = 1
			}
			row := snapshot(t, app).Outbox[0]
			if row.State != system.Pending || row.Attempts != 1 || row.RemoteID != 0 || len(tasks) != wantTasks {
				t.Errorf("got row %+v and %d tasks, want pending with 1 attempt and %d tasks", row, len(tasks), wantTasks)
			}
		})
	}
}

// TestCRM runs creates in order against a CRM that remembers keys for an
// hour, and checks each one's id, whether it was a replay and its error,
// then what the reads by key and by id find, after a reopen too.
func TestCRM(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "crm.db")
	clk := newClock()
	crm, err := system.OpenCRMWith(ctx, path, system.CRMOptions{Retention: time.Hour, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name         string
		after        time.Duration // the clock moves on by this first
		key, payload string
		wantID       int64
		wantReplayed bool
		wantErr      error
	}{
		{"a new key", 0, "k1", "p1", 1, false, nil},
		{"another new key", 0, "k2", "p2", 2, false, nil},
		{"the first again", 0, "k1", "p1", 1, true, nil},
		{"the first with another payload", 0, "k1", "other", 0, false, system.ErrKeyConflict},
		{"the first with its payload in capitals", 0, "k1", "P1", 0, false, system.ErrKeyConflict},
		{"the first with a byte more", 0, "k1", "p1 ", 0, false, system.ErrKeyConflict},
		{"a third key", 0, "k3", "p3", 3, false, nil},
		{"an empty key", 0, "", "p", 0, false, system.ErrInvalidInput},
		{"an empty payload", 0, "k4", "", 0, false, system.ErrInvalidInput},
		{"the first, its hour not yet over", time.Hour - time.Millisecond, "k1", "p1", 1, true, nil},
		{"the first, forgotten", time.Millisecond, "k1", "p1", 4, false, nil},
		{"the first, remembered anew", 0, "k1", "p1", 4, true, nil},
		{"the second, forgotten, with another payload", 0, "k2", "p2 again", 5, false, nil},
	}
	for _, s := range steps {
		clk.tick(s.after)
		id, replayed, err := crm.Create(ctx, s.key, s.payload)
		if id != s.wantID || replayed != s.wantReplayed || !errors.Is(err, s.wantErr) {
			t.Errorf("%s: Create(%q, %q) = %d, replayed %t, %v; want %d, replayed %t, %v", s.name, s.key, s.payload, id, replayed, err, s.wantID, s.wantReplayed, s.wantErr)
		}
	}
	if id, err := crm.CreateTask(ctx, "k1", "p1"); id != 4 || err != nil {
		t.Errorf("CreateTask(k1, p1) = %d, %v; want 4, nil", id, err)
	}
	crm.Close()
	reopened, err := system.OpenCRMWith(ctx, path, system.CRMOptions{Retention: time.Hour, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	if id, replayed, err := reopened.Create(ctx, "k2", "p2 again"); id != 5 || !replayed || err != nil {
		t.Errorf("a replay after reopening: got %d, replayed %t, %v; want 5, replayed, nil", id, replayed, err)
	}
	tasks, err := reopened.Tasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []system.Task{{1, "k1", "p1"}, {2, "k2", "p2"}, {3, "k3", "p3"}, {4, "k1", "p1"}, {5, "k2", "p2 again"}}
	if diff := cmp.Diff(want, tasks); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		key  string
		want []system.Task
	}{
		{"k1", []system.Task{want[0], want[3]}},
		{"k2", []system.Task{want[1], want[4]}},
		{"k3", []system.Task{want[2]}},
		{"k", nil},
		{"k1 ", nil},
	} {
		got, err := reopened.TasksOfKey(ctx, tt.key)
		if err != nil || !cmp.Equal(got, tt.want) {
			t.Errorf("TasksOfKey(%q) = %v, %v; want %v", tt.key, got, err, tt.want)
		}
	}
	for _, task := range want {
		if got, err := reopened.Task(ctx, task.ID); got != task || err != nil {
			t.Errorf("Task(%d) = %+v, %v; want %+v", task.ID, got, err, task)
		}
	}
	for _, id := range []int64{0, 6, -1} {
		if got, err := reopened.Task(ctx, id); !errors.Is(err, system.ErrNotFound) {
			t.Errorf("Task(%d) = %+v, %v; want ErrNotFound", id, got, err)
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	crm, err := system.OpenCRM(ctx, filepath.Join(dir, "crm.db"), system.Durable)
	if err != nil {
		t.Fatal(err)
	}
	crm.Close()
	garbage := filepath.Join(dir, "notes.txt")
	content := []byte("these are not the tables you are looking for\n")
	if err := os.WriteFile(garbage, content, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		open func() error
		want error
	}{
		{"the CRM's file as the app's", func() error {
			_, err := system.Open(ctx, filepath.Join(dir, "crm.db"), system.Options{})
			return err
		}, system.ErrWrongDatabase},
		{"a file that is not a database", func() error {
			_, err := system.Open(ctx, garbage, system.Options{})
			return err
		}, system.ErrWrongDatabase},
		{"negative max attempts", func() error {
			_, err := system.Open(ctx, filepath.Join(dir, "app.db"), system.Options{MaxAttempts: -1})
			return err
		}, system.ErrInvalidInput},
		{"a path with a query", func() error {
			_, err := system.Open(ctx, filepath.Join(dir, "app.db?mode=ro"), system.Options{})
			return err
		}, system.ErrInvalidInput},
		{"an unknown durability", func() error {
			_, err := system.OpenCRM(ctx, filepath.Join(dir, "x.db"), system.Durability(7))
			return err
		}, system.ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.open(); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	if got, _ := os.ReadFile(garbage); string(got) != string(content) {
		t.Errorf("the refused file changed: got %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "app.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused options created app.db: %v", err)
	}
}

// TestOptionsDefaults: the zero Options take the spec's default for
// every field that has one, and a field that is set stays as it is.
func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	got, err := system.Options{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := system.Options{MaxAttempts: system.DefaultMaxAttempts, BusyTimeout: system.DefaultBusyTimeout, Worker: system.DefaultWorker,
		Lease: system.DefaultLease, SendTimeout: system.DefaultSendTimeout, BackoffBase: system.DefaultBackoffBase, BackoffCap: system.DefaultBackoffCap,
		MaxConns: system.DefaultMaxConns, ConnectWait: system.DefaultConnectWait}
	got.Harness = system.Harness{} // the clock, the jitter and the background are functions
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the defaults (-want +got):\n%s", diff)
	}
	set := system.Options{MaxAttempts: 7, BusyTimeout: time.Millisecond, Worker: "w", Lease: time.Minute, SendTimeout: time.Second,
		BackoffBase: 2 * time.Second, BackoffCap: time.Hour, MaxConns: 2, ConnectWait: time.Second, MaxAge: time.Hour, Retention: time.Hour}
	if got, err := set.WithDefaults(); err != nil || !cmp.Equal(set, got, cmpopts.IgnoreFields(system.Options{}, "Harness")) {
		t.Errorf("options all set: got %+v, %v; want them as they were", got, err)
	}
}

// TestRetryWait: the wait after a transient failure is the jitter drawn
// within the attempt's ceiling (capped there whatever the source draws),
// none with NoBackoff, and the receiver's hint when it is longer.
func TestRetryWait(t *testing.T) {
	t.Parallel()
	drawn := func(d time.Duration) func(time.Duration) time.Duration {
		return func(time.Duration) time.Duration { return d }
	}
	hint := &system.RetryHint{After: 20 * time.Second, Err: system.ErrTransient}
	tests := []struct {
		name    string
		opts    system.Options
		attempt int
		err     error
		want    time.Duration
	}{
		{"jitter within the ceiling", system.Options{BackoffBase: time.Second, BackoffCap: time.Minute, Harness: system.Harness{Jitter: drawn(1500 * time.Millisecond)}}, 2, system.ErrTransient, 1500 * time.Millisecond},
		{"jitter past the ceiling", system.Options{BackoffBase: time.Second, BackoffCap: time.Minute, Harness: system.Harness{Jitter: drawn(time.Hour)}}, 3, system.ErrTransient, 4 * time.Second},
		{"no backoff", system.Options{NoBackoff: true, Harness: system.Harness{Jitter: drawn(time.Hour)}}, 3, system.ErrTransient, 0},
		{"a longer hint", system.Options{BackoffBase: time.Second, BackoffCap: time.Minute, Harness: system.Harness{Jitter: drawn(time.Second)}}, 1, hint, 20 * time.Second},
		{"a shorter hint", system.Options{BackoffBase: time.Minute, BackoffCap: time.Hour, Harness: system.Harness{Jitter: drawn(time.Minute)}}, 1, hint, time.Minute},
	}
	for _, tt := range tests {
		opts, err := tt.opts.WithDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if got := opts.RetryWait(tt.attempt, tt.err); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestAReplayIsNamed: a send whose answer is the task an earlier
// attempt created (its reply lost) is recorded in the row's history as a
// replay; a first create is not.
func TestAReplayIsNamed(t *testing.T) { eachBackend(t, testAReplayIsNamed) }

func testAReplayIsNamed(t *testing.T, b backend) {
	ctx := t.Context()
	app, crm, _ := openPair(t, b, system.Options{NoBackoff: true})
	if _, err := app.RecordApproval(ctx, "case-1", "Call back"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.RecordApproval(ctx, "case-2", "Call back"); err != nil {
		t.Fatal(err)
	}
	lost := receiverFunc(func(ctx context.Context, key, payload string) (int64, error) {
		if _, err := crm.CreateTask(ctx, key, payload); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: the reply was lost", system.ErrTransient)
	})
	for _, r := range []system.Receiver{lost, crm, crm} {
		if _, err := app.DeliverOne(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for key, want := range map[string]string{system.KeyPrefix + "case-1": "a replay", system.KeyPrefix + "case-2": ""} {
		events, err := app.History(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		sent := ""
		for _, e := range events {
			if e.Action == system.EventSent {
				sent = e.Reason
			}
		}
		if replay := strings.Contains(sent, "a replay"); sent == "" || replay != (want != "") {
			t.Errorf("%s's send: %q, want a sent entry that says %q", key, sent, want)
		}
	}
}
