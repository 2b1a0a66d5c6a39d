package main

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What the commands do with files that are not what they should be:
// paths that are not files, other programs' databases, read-only,
// corrupt and old files, CRM files made by mistake.

// TestPathsThatAreNotFiles: an in-memory database, URIs and URLs are
// refused by every command as usage errors (exit status 2), and nothing
// is created.
func TestPathsThatAreNotFiles(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mustRun(t, "approve", "--app", "app.db", "--case", "c-1", "--title", "t")
	mustRun(t, "crm", "init", "--crm", "crm.db")
	before := folder(t, dir)
	for _, args := range [][]string{
		{"approve", "--app", ":memory:", "--case", "c-1", "--title", "t"},
		{"approve", "--app", "file:f.db", "--case", "c-1", "--title", "t"},
		{"approve", "--app", "f.db?mode=memory", "--case", "c-1", "--title", "t"},
		{"deliver", "--app", "app.db", "--crm", ":memory:", "--create-crm"},
		{"deliver", "--app", "app.db", "--crm", "file:crm.db"},
		{"inspect", "--app", "file:app.db"},
		{"check", "--app", "app.db", "--crm", ":memory:"},
		{"crm", "init", "--crm", "file:new.db"},
	} {
		refusedWith(t, 2, "plain file path", args...)
	}
	// A URL where a file must be, or a mistyped scheme, is named as a
	// URL, without its password.
	for _, args := range [][]string{
		{"deliver", "--app", "app.db", "--crm", "postgres://u:s3cret@127.0.0.1/test?schema=x"},
		{"check", "--app", "app.db", "--crm", "postgres://u:s3cret@127.0.0.1/test"},
		{"approve", "--app", "postgress://u:s3cret@127.0.0.1/test?schema=x", "--case", "c-1", "--title", "t"},
	} {
		refusedWith(t, 2, "is a URL, not a file path", args...)
		if _, stdout, stderr := runCLI(t, args...); strings.Contains(stdout+stderr, "s3cret") {
			t.Errorf("%v printed the password: %q", args, stdout+stderr)
		}
	}
	if diff := cmp.Diff(before, folder(t, dir)); diff != "" {
		t.Errorf("refused paths changed the folder (-before +after):\n%s", diff)
	}
}

// TestTheAppKnowsItsCRM: a mistyped CRM path is not created, another CRM
// file is refused, and inspect and check say when a sent row does not
// name its task.
func TestTheAppKnowsItsCRM(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mustRun(t, "approve", "--app", "app.db", "--case", "case-1", "--title", "one")
	mustRun(t, "approve", "--app", "app.db", "--case", "case-2", "--title", "two")
	if out := mustRun(t, "crm", "init", "--crm", "crm.db"); !strings.Contains(out, "created the CRM database crm.db") {
		t.Errorf("crm init: got %q", out)
	}
	refused(t, "already exists", "crm", "init", "--crm", "crm.db")
	copyTo(t, "crm.db", "crm-before.db") // the same CRM before it held a task
	mustRun(t, "deliver", "--app", "app.db", "--crm", "crm.db")
	mustRun(t, "crm", "init", "--crm", "other.db")
	before := folder(t, dir)
	refused(t, "does not exist", "deliver", "--app", "app.db", "--crm", "cmr.db")
	refused(t, "delivers to CRM", "deliver", "--app", "app.db", "--crm", "other.db")
	if diff := cmp.Diff(before, folder(t, dir)); diff != "" {
		t.Errorf("refused deliveries changed the folder (-before +after):\n%s", diff)
	}
	refused(t, "delivers to CRM", "inspect", "--app", "app.db", "--crm", "other.db")
	refused(t, "delivers to CRM", "check", "--app", "app.db", "--crm", "other.db")
	refused(t, "but the CRM has no task 1", "inspect", "--app", "app.db", "--crm", "crm-before.db")
	refused(t, "invariant 3", "check", "--app", "app.db", "--crm", "crm-before.db")
	if out := mustRun(t, "check", "--app", "app.db", "--crm", "crm.db"); !strings.Contains(out, "ok (integrity, schema, 2 rows, 1 task; invariants 1 to 5") {
		t.Errorf("check of sound files: got %q", out)
	}
	if diff := cmp.Diff(before, folder(t, dir)); diff != "" {
		t.Errorf("inspect and check changed the folder (-before +after):\n%s", diff)
	}
}

// TestForeignDatabasesAreLeftAlone: a SQLite database of somebody else's
// is refused by every command, unchanged, and gains no -wal or -shm.
func TestForeignDatabasesAreLeftAlone(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	db, err := sql.Open("sqlite", "o.db")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE foo (a TEXT); INSERT INTO foo VALUES ('mine')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	mustRun(t, "approve", "--app", "app.db", "--case", "c-1", "--title", "t")
	mustRun(t, "crm", "init", "--crm", "crm.db")
	before := folder(t, dir)
	for _, args := range [][]string{
		{"approve", "--app", "o.db", "--case", "c-1", "--title", "t"},
		{"deliver", "--app", "o.db", "--crm", "crm.db"},
		{"deliver", "--app", "app.db", "--crm", "o.db"},
		{"inspect", "--app", "o.db"},
		{"inspect", "--app", "app.db", "--crm", "o.db"},
		{"check", "--app", "o.db"},
		{"upgrade", "--app", "o.db"},
	} {
		refused(t, "o.db is a SQLite database of something else", args...)
	}
	if diff := cmp.Diff(before, folder(t, dir)); diff != "" {
		t.Errorf("commands changed the folder (-before +after):\n%s", diff)
	}
}

// TestReadOnlyDatabaseLeavesNoTrap runs approve as a user who may read
// app.db but not write it: it must be refused without leaving a -shm file
// that breaks the next run once the file is writable again.
func TestReadOnlyDatabaseLeavesNoTrap(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "handoff-readonly-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "handoff.test")
	copyTo(t, os.Args[0], exe)
	if err := os.Chmod(exe, 0o755); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, "app.db")
	mustRun(t, "approve", "--app", app, "--case", "c-1", "--title", "t")

	// asUser runs the command line in a process of a user who is not root
	// (root may write any file), who owns app.db.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		if err := os.Chown(app, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	asUser := func(args ...string) (int, string) {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), "HANDOFF_RUN_MAIN=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}

	if err := os.Chmod(app, 0o444); err != nil {
		t.Fatal(err)
	}
	before := folder(t, dir)
	if code, out := asUser("approve", "--app", app, "--case", "c-2", "--title", "t"); code != 1 || !strings.Contains(out, "read-only") {
		t.Fatalf("approve on a read-only file: got exit %d, %q; want 1 and read-only", code, out)
	}
	if code, out := asUser("inspect", "--app", app); code != 0 || !strings.Contains(out, "1 pending") {
		t.Errorf("inspect of a read-only file: got exit %d, %q; want 0", code, out)
	}
	if diff := cmp.Diff(before, folder(t, dir)); diff != "" {
		t.Errorf("commands on a read-only file changed the folder (-before +after):\n%s", diff)
	}
	if err := os.Chmod(app, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := asUser("approve", "--app", app, "--case", "c-2", "--title", "t"); code != 0 {
		t.Errorf("approve once the file is writable again: got exit %d, %q; want 0", code, out)
	}
}

// TestCorruptionIsNeverExitZero damages 4 KiB of a 300-row app database:
// inspect and check must report it, and approve and deliver either work
// where they do not meet the damage or say the database is corrupt.
func TestCorruptionIsNeverExitZero(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mustRun(t, "approve", "--app", "app.db", "--case", "case-0", "--title", "Call back")
	db, err := sql.Open("sqlite", "app.db")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 300; i++ {
		if _, err := db.Exec(`INSERT INTO approvals (key, case_id, title, payload) VALUES (?, ?, 'Call back', ?);
			INSERT INTO outbox (key, state, attempts) VALUES (?, 'pending', 0)`,
			fmt.Sprint("harbor:create-followup:v1:case-", i), fmt.Sprint("case-", i), fmt.Sprintf(`{"case_id":"case-%d","title":"Call back"}`, i),
			fmt.Sprint("harbor:create-followup:v1:case-", i)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	mustRun(t, "crm", "init", "--crm", "crm.db")
	if out := mustRun(t, "check", "--app", "app.db", "--crm", "crm.db"); !strings.Contains(out, "300 rows") {
		t.Fatalf("check before the damage: %q", out)
	}
	b, err := os.ReadFile("app.db")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4096 {
		b[len(b)/2/4096*4096+i] = byte(i * 31)
	}
	if err := os.WriteFile("app.db", b, 0o644); err != nil {
		t.Fatal(err)
	}
	refused(t, "integrity", "inspect", "--app", "app.db")
	refused(t, "integrity", "check", "--app", "app.db", "--crm", "crm.db")
	for _, args := range [][]string{
		{"approve", "--app", "app.db", "--case", "case-7", "--title", "Call back"},
		{"approve", "--app", "app.db", "--case", "case-new", "--title", "Call back"},
		{"deliver", "--app", "app.db", "--crm", "crm.db"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 0 && !strings.Contains(stderr, "corrupt") {
			t.Errorf("%v: got exit %d, %q; want 0 or a message that the database is corrupt", args, code, stderr)
		}
	}
}

// TestUpgradeThenRead: databases the first release wrote are read only
// after upgrade, which keeps every row and says what it did; a second
// upgrade says there was nothing to do.
func TestUpgradeThenRead(t *testing.T) {
	testdata, err := filepath.Abs("../../system/testdata")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	for _, name := range []string{"app", "crm"} {
		copyTo(t, filepath.Join(testdata, name+"-v0.db"), name+".db")
	}
	refused(t, "handoff upgrade", "inspect", "--app", "app.db")
	for _, want := range []string{
		"app database app.db: upgraded in place from schema version 1; up to date\nCRM database crm.db: upgraded in place from schema version 1; up to date\n",
		"app database app.db: up to date already; nothing changed\nCRM database crm.db: up to date already; nothing changed\n",
	} {
		if out := mustRun(t, "upgrade", "--app", "app.db", "--crm", "crm.db"); out != want {
			t.Errorf("upgrade: got %q, want %q", out, want)
		}
	}
	if out := mustRun(t, "inspect", "--app", "app.db"); !strings.Contains(out, "1 pending, 1 sent, 1 blocked") || !strings.Contains(out, "approved 20") {
		t.Errorf("inspect after the upgrade: got %q", out)
	}
}

// TestCRMFilesAreNotMadeByMistake: deliver creates no CRM from an empty
// file or a typo, and an upgraded app database takes only the CRM that
// holds the tasks it recorded as sent.
func TestCRMFilesAreNotMadeByMistake(t *testing.T) {
	dir := inOldFiles(t)
	mustRun(t, "approve", "--app", "app.db", "--case", "c-1", "--title", "t")
	mustRun(t, "crm", "init", "--crm", "crm.db")
	mustRun(t, "crm", "init", "--crm", "fresh.db")
	mustRun(t, "deliver", "--app", "app.db", "--crm", "crm.db")
	if err := os.WriteFile("empty.db", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := folder(t, dir)
	refused(t, "does not exist or is empty", "deliver", "--app", "app.db", "--crm", "empty.db")
	refused(t, "--create-crm would make another", "deliver", "--app", "app.db", "--crm", "crm-typo.db", "--create-crm")
	refused(t, "records harbor:create-followup:v1:case-1 as sent as task 1, which fresh.db does not hold", "deliver", "--app", "old-app.db", "--crm", "fresh.db")
	after := folder(t, dir)
	delete(after, "old-app.db") // upgraded in place by the refused delivery: its rows stay
	delete(before, "old-app.db")
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("refused deliveries changed the folder (-before +after):\n%s", diff)
	}
	if out := mustRun(t, "deliver", "--app", "old-app.db", "--crm", "old-crm.db"); !strings.Contains(out, "sent harbor:create-followup:v1:case-3: CRM task 2") {
		t.Errorf("deliver of the upgraded app to its own CRM: got %q", out)
	}
	mustRun(t, "check", "--app", "old-app.db", "--crm", "old-crm.db")
}
