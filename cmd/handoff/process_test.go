package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestWorkerGone: a worker is gone only when its name says it ran in a
// process of this host that no longer runs.
func TestWorkerGone(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("processes are told apart on unix only")
	}
	ended := exec.Command(os.Args[0], "-test.run=^$")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	dead := ended.Process.Pid
	for _, tt := range []struct {
		worker string
		gone   bool
	}{
		{processPrefix() + ":deliver", false},                   // this process
		{host + ":" + itoa(os.Getppid()) + ":1", false},         // a process that runs
		{host + ":" + itoa(dead) + ":deliver", true},            // one that ended
		{host + ":" + itoa(dead) + ":3", true},                  // a work process's worker
		{"elsewhere.example:" + itoa(dead) + ":deliver", false}, // another host's
		{host + ":" + itoa(dead), false},                        // not HOST:PID:…
		{"billing-1:2", false},                                  // a stable name (work --worker)
		{host + ":0" + itoa(dead) + ":deliver", false},          // not a process id as written
		{"deliver", false},                                      // a name without its process
	} {
		if got := workerGone(tt.worker); got != tt.gone {
			t.Errorf("workerGone(%q) = %v, want %v", tt.worker, got, tt.gone)
		}
	}
}

// itoa writes n in decimal.
func itoa(n int) string { return strconv.Itoa(n) }

// TestDeliverAfterACrashedDeliver: a deliver process that died holding a
// lease leaves it to the next deliver, which releases it at once and
// sends the row.
func TestDeliverAfterACrashedDeliver(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	approveRows(t, app, 1)
	mustRun(t, "crm", "init", "--crm", crm)
	deliver := func(args ...string) (string, error) {
		cmd := exec.Command(os.Args[0], append([]string{"deliver", "--app", app, "--crm", crm}, args...)...)
		cmd.Env = append(os.Environ(), "HANDOFF_RUN_MAIN=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := deliver("--fault", "crash-before-send"); err == nil || !strings.Contains(out, "simulated crash") {
		t.Fatalf("deliver --fault crash-before-send: %v, %s", err, out)
	}
	out, err := deliver()
	if err != nil || !strings.HasPrefix(out, "sent "+keyOf("case-0")+": CRM task 1 (attempt 2 of 3)") {
		t.Errorf("the deliver after the crash: %v, %q; want the row sent at once, attempt 2", err, out)
	}
}
