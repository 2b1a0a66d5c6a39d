package main

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	receiver "github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// flakyReceiver serves the CRM at crmPath over HTTP as a receiver under
// load does: every create waits up to slowest before it is answered, and
// one in refuseOneIn is refused with a 503 before the CRM sees it.
func flakyReceiver(t *testing.T, crmPath string, slowest time.Duration, refuseOneIn int) *httptest.Server {
	t.Helper()
	server := crmServer(t, crmPath)
	var mu sync.Mutex
	random := rand.New(rand.NewPCG(7, 8))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			wait, refuse := time.Duration(random.Int64N(int64(slowest))), random.IntN(refuseOneIn) == 0
			mu.Unlock()
			time.Sleep(wait)
			if refuse {
				http.Error(w, "overloaded", http.StatusServiceUnavailable)
				return
			}
		}
		server.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestOverlappingDelivers runs four deliver processes at once, each
// again as soon as it ends, as a scheduler that overlaps them would,
// over 150 rows and a slow, flaky receiver, until nothing is pending. A
// run must not release the lease of a run still sending: no settle goes
// stale, and no row ends blocked while the CRM holds its task.
func TestOverlappingDelivers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: runs hundreds of deliver processes")
	}
	const rows, runners = 150, 4
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	approveRows(t, app, rows)
	mustRun(t, "crm", "init", "--crm", crm)
	srv := flakyReceiver(t, crm, 150*time.Millisecond, 7)
	var mu sync.Mutex
	results := map[string]int{}
	var stales []string
	var wg sync.WaitGroup
	for range runners {
		wg.Go(func() {
			for run := 0; run < 2*rows; run++ {
				var out, errOut bytes.Buffer
				cmd := exec.Command(os.Args[0], "deliver", "--app", app, "--crm-url", srv.URL)
				cmd.Env = append(os.Environ(), "HANDOFF_RUN_MAIN=1")
				cmd.Stdout, cmd.Stderr = &out, &errOut
				if err := cmd.Run(); err != nil {
					t.Errorf("deliver: %v: %s%s", err, out.String(), errOut.String())
					return
				}
				line := out.String()
				result, _, _ := strings.Cut(line, " ")
				mu.Lock()
				results[strings.TrimSuffix(result, ":")]++
				if result == "stale" {
					stales = append(stales, strings.TrimSpace(line))
				}
				mu.Unlock()
				switch {
				case strings.HasPrefix(line, "idle: nothing pending"):
					return
				case strings.HasPrefix(line, "idle:"):
					time.Sleep(20 * time.Millisecond) // rows leased by the other runs
				}
			}
			t.Errorf("a runner still found rows pending after %d runs", 2*rows)
		})
	}
	wg.Wait()
	t.Logf("deliver results: %v", results)
	if len(stales) > 0 {
		t.Errorf("%d settles went stale, a run's lease taken by another run: %v", len(stales), stales)
	}
	snap, tasks := filesState(t, app, crm)
	held := map[string]bool{}
	for _, task := range tasks {
		held[task.Key] = true
	}
	for _, r := range snap.Outbox {
		if r.State == system.Blocked && held[r.Key] {
			t.Errorf("%s is blocked (%s after %d attempts) although the CRM holds its task", r.Key, r.LastError, r.Attempts)
		}
		if r.State == system.Pending {
			t.Errorf("%s is still pending", r.Key)
		}
	}
	if code, stdout, stderr := runCLI(t, "check", "--app", app, "--crm", crm); code != 0 {
		t.Errorf("check: exit %d: %s%s", code, stdout, stderr)
	}
}

// crmServer is the receiver's HTTP handler on the CRM at crmPath, closed
// when t ends, for a test to serve behind answers of its own.
func crmServer(t *testing.T, crmPath string) *receiver.Server {
	t.Helper()
	crm, err := system.OpenCRM(t.Context(), crmPath, system.Durable)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crm.Close() })
	server, err := receiver.NewServer(crm, 0)
	if err != nil {
		t.Fatal(err)
	}
	return server
}
