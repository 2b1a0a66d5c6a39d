package system_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/system"
	_ "modernc.org/sqlite"
)

// folder returns every file in dir with its content.
func folder(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// foreignDatabase writes a SQLite database of somebody else's at path.
func foreignDatabase(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE foo (a TEXT); INSERT INTO foo VALUES ('mine')`); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesWhatIsNotAPlainHandoffFile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	foreign := filepath.Join(dir, "o.db")
	foreignDatabase(t, foreign)
	newer := filepath.Join(dir, "newer.db")
	app, err := system.Open(ctx, newer, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.DB().Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	app.Close()
	zeros := filepath.Join(dir, "zeros.db")
	if err := os.WriteFile(zeros, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file cut short inside its header: SQLite's magic, then nothing.
	truncated := filepath.Join(dir, "truncated.db")
	if err := os.WriteFile(truncated, []byte("SQLite format 3\x00\x10\x00\x01\x01"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := folder(t, dir)
	tests := []struct {
		path                         string
		wantApp, wantCRM, wantReader error
	}{
		{":memory:", system.ErrInvalidInput, system.ErrInvalidInput, system.ErrInvalidInput},
		{"file:" + filepath.Join(dir, "f.db"), system.ErrInvalidInput, system.ErrInvalidInput, system.ErrInvalidInput},
		{"FILE:f.db", system.ErrInvalidInput, system.ErrInvalidInput, system.ErrInvalidInput},
		{filepath.Join(dir, "a.db#x"), system.ErrInvalidInput, system.ErrInvalidInput, system.ErrInvalidInput},
		{dir, system.ErrInvalidInput, system.ErrInvalidInput, system.ErrInvalidInput},
		{filepath.Join(dir, "missing", "app.db"), system.ErrInvalidInput, system.ErrInvalidInput, system.ErrNotFound},
		{foreign, system.ErrWrongDatabase, system.ErrWrongDatabase, system.ErrWrongDatabase},
		{newer, system.ErrNewerSchema, system.ErrWrongDatabase, system.ErrNewerSchema},
		{zeros, system.ErrWrongDatabase, system.ErrWrongDatabase, system.ErrWrongDatabase},
		{truncated, system.ErrWrongDatabase, system.ErrWrongDatabase, system.ErrWrongDatabase},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if _, err := system.Open(ctx, tt.path, system.Options{}); !errors.Is(err, tt.wantApp) {
				t.Errorf("Open: got %v, want %v", err, tt.wantApp)
			}
			if _, err := system.OpenCRM(ctx, tt.path, system.Durable); !errors.Is(err, tt.wantCRM) {
				t.Errorf("OpenCRM: got %v, want %v", err, tt.wantCRM)
			}
			if _, err := system.OpenReadOnly(ctx, tt.path); !errors.Is(err, tt.wantReader) {
				t.Errorf("OpenReadOnly: got %v, want %v", err, tt.wantReader)
			}
		})
	}
	if diff := cmp.Diff(before, folder(t, dir)); diff != "" {
		t.Errorf("refused opens changed the folder (-before +after):\n%s", diff)
	}
}

// TestReadOnlyOpenLeavesNothing reads a database nobody has open, and one
// a writer has open, and checks that neither read writes or leaves a file.
func TestReadOnlyOpenLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	app, err := system.Open(ctx, path, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.RecordApproval(ctx, caseID, title); err != nil {
		t.Fatal(err)
	}
	app.Close()
	before := folder(t, dir)
	ro, err := system.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if s := snapshot(t, ro); len(s.Outbox) != 1 {
		t.Errorf("read-only snapshot: got %+v, want one row", s)
	}
	if _, err := ro.RecordApproval(ctx, "case-2", title); !errors.Is(err, system.ErrReadOnly) {
		t.Errorf("approving through a read-only handle: got %v, want ErrReadOnly", err)
	}
	ro.Close()
	if diff := cmp.Diff(before, folder(t, dir)); diff != "" {
		t.Errorf("a read-only open changed the folder (-before +after):\n%s", diff)
	}

	// A writer holds the database open, its latest commit in the WAL.
	writer, err := system.Open(ctx, path, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.RecordApproval(ctx, "case-2", title); err != nil {
		t.Fatal(err)
	}
	ro, err = system.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if s := snapshot(t, ro); len(s.Outbox) != 2 {
		t.Errorf("read-only snapshot beside a writer: got %d rows, want 2 (the WAL's too)", len(s.Outbox))
	}

	// A copy of the database and its WAL but not its -shm, as a backup
	// taken while the writer ran: the reader reads the WAL too.
	copied := filepath.Join(t.TempDir(), "app.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copied+suffix, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	backup, err := system.OpenReadOnly(ctx, copied)
	if err != nil {
		t.Fatalf("reading a copy with its WAL and no -shm: %v", err)
	}
	defer backup.Close()
	if s := snapshot(t, backup); len(s.Outbox) != 2 {
		t.Errorf("read-only snapshot of a copy with its WAL: got %d rows, want 2", len(s.Outbox))
	}
}

// TestUnmarkedEmptyDatabaseBecomesOne: a SQLite file with no tables and
// no mark is new, whatever its user_version says, and is set up whole.
func TestUnmarkedEmptyDatabaseBecomesOne(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 7"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	app, err := system.Open(ctx, path, system.Options{})
	if err != nil {
		t.Fatalf("got %v, want the empty file set up as an app database", err)
	}
	defer app.Close()
	if _, err := app.RecordApproval(ctx, caseID, title); err != nil {
		t.Error(err)
	}
}

func TestReadOnlyOpenRefuses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.db")
	copyFile(t, "testdata/app-v0.db", old)
	// A SQLite database without tables or a handoff mark, whatever its
	// user_version: not an app database of any version, none to upgrade.
	unmarked := filepath.Join(dir, "unmarked.db")
	db, err := sql.Open("sqlite", unmarked)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec("PRAGMA user_version = 3")
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	crm, err := system.OpenCRM(ctx, filepath.Join(dir, "crm.db"), system.Durable)
	if err != nil {
		t.Fatal(err)
	}
	crm.Close()
	before := folder(t, dir)
	for _, tt := range []struct {
		path string
		want error
	}{
		{filepath.Join(dir, "missing.db"), system.ErrNotFound},
		{empty, system.ErrWrongDatabase},
		{old, system.ErrOldSchema},
		{unmarked, system.ErrWrongDatabase},
		{filepath.Join(dir, "crm.db"), system.ErrWrongDatabase},
	} {
		if _, err := system.OpenReadOnly(ctx, tt.path); !errors.Is(err, tt.want) {
			t.Errorf("OpenReadOnly(%s): got %v, want %v", tt.path, err, tt.want)
		}
	}
	if diff := cmp.Diff(before, folder(t, dir)); diff != "" {
		t.Errorf("refused read-only opens changed the folder (-before +after):\n%s", diff)
	}
}

// TestAFileHeldIsOneKind: while this process holds a database file open
// as one kind (an app database, a receiver's), opening it as the other,
// for writing or for reading, is refused, and the handle held still
// works.
func TestAFileHeldIsOneKind(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	appPath, crmPath := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	app, err := system.Open(ctx, appPath, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	crm, err := system.OpenCRM(ctx, crmPath, system.Durable)
	if err != nil {
		t.Fatal(err)
	}
	defer crm.Close()
	for _, tt := range []struct {
		name string
		open func() (interface{ Close() error }, error)
	}{
		{"the app database as a receiver's", func() (interface{ Close() error }, error) { return system.OpenCRM(ctx, appPath, system.Durable) }},
		{"the receiver's database as an app database", func() (interface{ Close() error }, error) { return system.Open(ctx, crmPath, system.Options{}) }},
		{"the receiver's database read as an app database", func() (interface{ Close() error }, error) { return system.OpenReadOnly(ctx, crmPath) }},
	} {
		h, err := tt.open()
		if err == nil {
			h.Close()
		}
		if !errors.Is(err, system.ErrWrongDatabase) {
			t.Errorf("opening %s: got %v, want ErrWrongDatabase", tt.name, err)
		}
	}
	if _, err := app.RecordApproval(ctx, caseID, title); err != nil {
		t.Errorf("the app database held: %v", err)
	}
	if _, err := crm.Tasks(ctx); err != nil {
		t.Errorf("the receiver's database held: %v", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeFromTheFirstRelease opens files the first release wrote
// (testdata: case-1 sent as task 1, case-2 blocked after three offline
// attempts, case-3 pending) and checks that nothing is lost.
func TestUpgradeFromTheFirstRelease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	copyFile(t, "testdata/app-v0.db", filepath.Join(dir, "app.db"))
	copyFile(t, "testdata/crm-v0.db", filepath.Join(dir, "crm.db"))
	clock := func() time.Time { return approvedAt }
	app, err := system.Open(ctx, filepath.Join(dir, "app.db"), system.Options{Harness: system.Harness{Now: clock}})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	crm, err := system.OpenCRMWith(ctx, filepath.Join(dir, "crm.db"), system.CRMOptions{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer crm.Close()
	if app.UpgradedFrom() != 1 || crm.UpgradedFrom() != 1 {
		t.Errorf("the opens say they upgraded from versions %d and %d; want 1 and 1", app.UpgradedFrom(), crm.UpgradedFrom())
	}
	// The first release kept no times: every row is as old as the upgrade,
	// and one that was attempted was first claimed then.
	at := approvedAt
	want := []system.Row{
		{Key: system.KeyPrefix + "case-1", State: system.Sent, Attempts: 1, RemoteID: 1, CreatedAt: at, NextAttemptAt: at, FirstClaimedAt: at},
		{Key: system.KeyPrefix + "case-2", State: system.Blocked, Attempts: 3, LastError: system.LastErrorTransient, CreatedAt: at, NextAttemptAt: at, FirstClaimedAt: at},
		{Key: system.KeyPrefix + "case-3", State: system.Pending, CreatedAt: at, NextAttemptAt: at},
	}
	s := snapshot(t, app)
	if diff := cmp.Diff(want, s.Outbox); diff != "" {
		t.Errorf("rows after the upgrade (-want +got):\n%s", diff)
	}
	if len(s.Approvals) != 3 || s.Approvals[1].Title != "Rappeler — réparation" {
		t.Errorf("approvals after the upgrade: got %+v", s.Approvals)
	}
	id, err := crm.Identity(ctx)
	if err != nil || len(id) != 32 {
		t.Errorf("the upgraded CRM's identity: got %q, %v; want 32 hex digits", id, err)
	}
	// The upgraded files work: the pending row is delivered.
	if d, err := app.DeliverOne(ctx, crm); err != nil || d.Result != system.ResultSent || d.RemoteID != 2 {
		t.Errorf("delivery after the upgrade: got %+v, %v; want case-3 sent as task 2", d, err)
	}
}

func TestBindReceiver(t *testing.T) { eachBackend(t, testBindReceiver) }

func testBindReceiver(t *testing.T, b backend) {
	ctx := t.Context()
	app, crm, files := openPair(t, b, system.Options{})
	other, err := system.OpenCRM(ctx, filepath.Join(files.dir, "other.db"), system.Durable)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	id, err := crm.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	otherID, err := other.Identity(ctx)
	if err != nil || otherID == id {
		t.Fatalf("two CRM files: identities %q and %q (%v), want two different ones", id, otherID, err)
	}
	if got, err := app.Receiver(ctx); err != nil || got != "" {
		t.Errorf("before binding: got %q, %v; want none", got, err)
	}
	for _, tt := range []struct {
		id   string
		want error
	}{
		{id, nil},
		{id, nil},
		{otherID, system.ErrWrongReceiver},
		{"", system.ErrInvalidInput},
	} {
		if err := app.BindReceiver(ctx, tt.id); !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
			t.Errorf("BindReceiver(%q): got %v, want %v", tt.id, err, tt.want)
		}
	}
	if got, err := app.Receiver(ctx); err != nil || got != id {
		t.Errorf("after binding: got %q, %v; want %q", got, err, id)
	}
}

// TestFailureAfterTheAttemptSaysSo checks that a failure after the attempt
// is counted says so, and leaves the cause as the row's last error.
func TestFailureAfterTheAttemptSaysSo(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		err       error
		lastError string
	}{
		{"busy", fmt.Errorf("%w: the CRM's write lock", system.ErrBusy), "local: database is busy"},
		{"full", fmt.Errorf("%w: no space", system.ErrFull), "local: disk is full"},
		{"other", errors.New("certificate expired"), "local: unexpected error"},
		{"interrupted", fmt.Errorf("sending: %w", context.Canceled), "local: interrupted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			app, _, _ := openPair(t, sqliteBackend, system.Options{})
			if _, err := app.RecordApproval(ctx, caseID, title); err != nil {
				t.Fatal(err)
			}
			_, err := app.DeliverOne(ctx, receiverFunc(func(context.Context, string, string) (int64, error) { return 0, tt.err }))
			var ae *system.AttemptError
			if !errors.As(err, &ae) || !errors.Is(err, tt.err) || ae.Attempt != 1 || ae.MaxAttempts != 3 ||
				!strings.Contains(err.Error(), "attempt 1 of 3 counted; the CRM may have acted") {
				t.Fatalf("got %v, want an AttemptError for attempt 1 of 3 wrapping %v", err, tt.err)
			}
			row, err := app.Row(ctx, key)
			if err != nil || row.State != system.Pending || row.Attempts != 1 || row.LastError != tt.lastError {
				t.Errorf("got row %+v, %v; want pending, 1 attempt, last error %q", row, err, tt.lastError)
			}
		})
	}
}

// TestAnInterruptIsRecorded: a worker interrupted during its send (its
// context cancelled, as work's SIGTERM does) still records the cause as
// the row's last error, although its context is done: the attempt is
// counted, and the row says why it has no answer.
func TestAnInterruptIsRecorded(t *testing.T) {
	t.Parallel()
	app, _, _ := openPair(t, sqliteBackend, system.Options{})
	if _, err := app.RecordApproval(t.Context(), caseID, title); err != nil {
		t.Fatal(err)
	}
	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	_, err := app.DeliverOne(ctx, receiverFunc(func(ctx context.Context, _, _ string) (int64, error) {
		interrupt()
		<-ctx.Done()
		return 0, fmt.Errorf("sending: %w", ctx.Err())
	}))
	var ae *system.AttemptError
	if !errors.As(err, &ae) || !errors.Is(err, context.Canceled) || ae.Attempt != 1 {
		t.Fatalf("got %v, want an AttemptError for attempt 1 wrapping %v", err, context.Canceled)
	}
	row, err := app.Row(t.Context(), key)
	if err != nil || row.State != system.Pending || row.Attempts != 1 || row.LastError != "local: interrupted" {
		t.Errorf("got row %+v, %v; want pending, 1 attempt, last error %q", row, err, "local: interrupted")
	}
}

// holdWriteLock takes the write lock of the database at path from a
// connection of its own, as another process would, until release.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		conn.Close()
		db.Close()
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
				t.Error(err)
			}
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// busyTimeoutIs fails the test unless the connection of db waits want
// for another connection's lock, in whole milliseconds, as SQLite says:
// the option was honoured, and not the default of 5 s, which a bound on
// how long the write took could not tell apart on a loaded machine.
func busyTimeoutIs(t *testing.T, db *sql.DB, want time.Duration) {
	t.Helper()
	var ms int64
	if err := db.QueryRowContext(t.Context(), "PRAGMA busy_timeout").Scan(&ms); err != nil {
		t.Fatal(err)
	}
	if ms != want.Milliseconds() {
		t.Errorf("the connection's busy timeout is %d ms, want %d (the option given)", ms, want.Milliseconds())
	}
}

// TestBusyReceiverSpendsAnAttemptAndSaysSo holds the CRM's write lock from
// another connection past the busy timeout (50 ms here): the delivery
// fails with ErrBusy, and says that the attempt is counted.
func TestBusyReceiverSpendsAnAttemptAndSaysSo(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	app, _, files := openPair(t, sqliteBackend, system.Options{})
	dir := files.dir
	if _, err := app.RecordApproval(ctx, caseID, title); err != nil {
		t.Fatal(err)
	}
	crm, err := system.OpenCRMWith(ctx, filepath.Join(dir, "crm.db"), system.CRMOptions{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer crm.Close()
	release := holdWriteLock(t, filepath.Join(dir, "crm.db"))
	start := time.Now()
	_, err = app.DeliverOne(ctx, crm)
	waited := time.Since(start)
	if !errors.Is(err, system.ErrBusy) || !strings.Contains(err.Error(), "attempt 1 of 3 counted") {
		t.Fatalf("got %v after %v, want ErrBusy with the attempt counted", err, waited)
	}
	if waited < 50*time.Millisecond {
		t.Errorf("the create gave up after %v, before its busy timeout of 50ms", waited)
	}
	busyTimeoutIs(t, crm.DB(), 50*time.Millisecond)
	release()
	if row, err := app.Row(ctx, key); err != nil || row.LastError != "local: database is busy" || row.Attempts != 1 {
		t.Errorf("got row %+v, %v; want 1 attempt and last error local: database is busy", row, err)
	}
	if n, err := app.Recover(ctx); err != nil || n != 1 {
		t.Fatalf("a worker starting again released %d leases, %v; want the one it held", n, err)
	}
	if d, err := app.DeliverOne(ctx, crm); err != nil || d.Result != system.ResultSent || d.Attempts != 2 {
		t.Errorf("after the lock is gone: got %+v, %v; want sent on attempt 2", d, err)
	}
}

// TestBusyAppWritesNothing holds the app database's write lock from
// another connection past the busy timeout the Outbox was opened with:
// the approval fails with ErrBusy after that timeout, at once when it is
// under a millisecond, and nothing of it is written.
func TestBusyAppWritesNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		busy, least time.Duration
	}{
		{50 * time.Millisecond, 50 * time.Millisecond},
		{time.Microsecond, 0},
	} {
		t.Run(c.busy.String(), func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "app.db")
			app, err := system.Open(ctx, path, system.Options{BusyTimeout: c.busy})
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			release := holdWriteLock(t, path)
			start := time.Now()
			_, err = app.RecordApproval(ctx, caseID, title)
			if waited := time.Since(start); !errors.Is(err, system.ErrBusy) || waited < c.least {
				t.Fatalf("got %v after %v, want ErrBusy after the busy timeout of %v", err, waited, c.busy)
			}
			busyTimeoutIs(t, app.DB(), c.busy)
			release()
			snap, err := app.Snapshot(ctx)
			if err != nil || len(snap.Approvals) != 0 || len(snap.Outbox) != 0 {
				t.Errorf("after a busy approval: %+v, %v; want nothing written", snap, err)
			}
		})
	}
}

// TestCorruptionIsReported damages one page of a database at a time and
// checks that the integrity check reports it.
func TestCorruptionIsReported(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	app, err := system.Open(ctx, path, system.Options{Durability: system.ProcessSafe})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := app.RecordApproval(ctx, fmt.Sprint("case-", i), "Call about the approved repair plan"); err != nil {
			t.Fatal(err)
		}
	}
	app.Close()
	sound, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	for p := 1; p < len(sound)/page; p++ { // page 0 holds the header: damage there is a wrong file
		t.Run(fmt.Sprint("page ", p), func(t *testing.T) {
			damaged := slices.Clone(sound)
			for i := range page {
				damaged[p*page+i] = byte(i*7 + p*13) // garbage, the same on every run
			}
			if err := os.WriteFile(path, damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			ro, err := system.OpenReadOnly(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			problems, err := ro.Check(ctx)
			if err != nil || len(problems) == 0 {
				t.Errorf("integrity check of a damaged page: got %v, %v; want problems", problems, err)
			}
			// Reading meets the damage or not, depending on the page; when it
			// does, the error says so.
			if _, err := ro.Snapshot(ctx); err != nil && !errors.Is(err, system.ErrCorrupt) {
				t.Errorf("snapshot: got %v, want ErrCorrupt or no error", err)
			}
		})
	}
}

// TestCorruptIndexIsReported: an index that no longer matches its table
// (its definition changed behind SQLite's back) fails a write with an
// extended result code, SQLITE_CORRUPT_INDEX: that is ErrCorrupt too.
func TestCorruptIndexIsReported(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "app.db")
	app, err := system.Open(ctx, path, system.Options{NoBackoff: true})
	if err != nil {
		t.Fatal(err)
	}
	mustApprove(t, app, caseID)
	if d, err := app.DeliverOne(ctx, conflicting{}); err != nil || d.Result != system.ResultBlocked {
		t.Fatalf("got %+v, %v; want blocked", d, err)
	}
	app.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// The blocked row is not in the index of pending rows; now the index
	// says it should be.
	_, err = db.ExecContext(ctx, `PRAGMA writable_schema=ON;
		UPDATE sqlite_schema SET sql = replace(sql, 'state = ''pending''', 'state <> ''sent''') WHERE name = 'outbox_pending';
		PRAGMA writable_schema=OFF`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	app, err = system.Open(ctx, path, system.Options{NoBackoff: true})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if err := app.Requeue(ctx, key, 0, "ana", "CRM checked"); !errors.Is(err, system.ErrCorrupt) {
		t.Errorf("requeue through a corrupt index: got %v, want ErrCorrupt", err)
	}
}
