package system_test

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/system"
)

// TestMain lets a test probe a database from a process of its own: with
// HANDOFF_LOCK_PROBE set, the test binary tries to take the write lock of
// the database it names, at once, prints what happened and exits. With
// workerProcessEnv set, it is a worker process of a benchmark.
func TestMain(m *testing.M) {
	if spec := os.Getenv(workerProcessEnv); spec != "" {
		if err := runWorkerProcess(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if path := os.Getenv("HANDOFF_LOCK_PROBE"); path != "" {
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)")
		if err == nil {
			_, err = db.Exec("BEGIN IMMEDIATE")
			db.Close()
		}
		if err != nil {
			fmt.Println("probe: locked")
		} else {
			fmt.Println("probe: took the lock")
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestAnotherHandleKeepsTheLocks in a process of its own, it tries to take
// the write lock of the database HANDOFF_LOCK_PROBE names, at once, and
// prints what happened.
func TestLockProbe(t *testing.T) {
	t.Parallel()
	path := os.Getenv("HANDOFF_LOCK_PROBE")
	if path == "" {
		t.Skip("run by TestAnotherHandleKeepsTheLocks")
	}
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("BEGIN IMMEDIATE"); err != nil {
		os.Stdout.WriteString("probe: locked\n")
		return
	}
	os.Stdout.WriteString("probe: took the lock\n")
}

// TestAnotherHandleKeepsTheLocks holds the write lock through one handle,
// opens and closes more handles on the same file in the same process (as
// a pool of workers does), and checks from another process that the lock
// still holds: POSIX locks are the process's, and a stray close of any
// descriptor of the file would drop them all.
func TestAnotherHandleKeepsTheLocks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "app.db")
	app, err := system.Open(ctx, path, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	conn, err := app.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, "ROLLBACK")
	probe := func() string {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "HANDOFF_LOCK_PROBE="+path)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := probe(); !strings.Contains(out, "probe: locked") {
		t.Fatalf("the probe took the lock of a handle that holds it:\n%s", out)
	}
	for range 3 {
		other, err := system.Open(ctx, path, system.Options{Worker: "other"})
		if err != nil {
			t.Fatal(err)
		}
		other.Close()
		ro, err := system.OpenReadOnly(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		ro.Close()
	}
	if out := probe(); !strings.Contains(out, "probe: locked") {
		t.Errorf("after more handles opened and closed in this process, another process took the write lock:\n%s", out)
	}
}
