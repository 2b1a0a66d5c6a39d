package contract_test

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/crm/contract"
	"github.com/outboxlab/handoff/system"
)

// openCRM opens a CRM file in a fresh folder; the second result is its path.
func openCRM(t *testing.T, opts system.CRMOptions) (*system.CRM, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crm.db")
	c, err := system.OpenCRMWith(t.Context(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, path
}

// serve starts a crm.Server of c on a real socket: the receiver that
// keeps the contract.
func serve(t *testing.T, c *system.CRM, retention time.Duration) *httptest.Server {
	t.Helper()
	s, err := crm.NewServer(c, retention)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

// tasks is every task in c.
func tasks(t *testing.T, c *system.CRM) []system.Task {
	t.Helper()
	ts, err := c.Tasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// checkOK fails the test unless every clause of r passed.
func checkOK(t *testing.T, r contract.Report) {
	t.Helper()
	if !r.OK() {
		for _, res := range r.Results {
			t.Errorf("%s: %s: %s", res.Clause, res.Verdict, res.Evidence)
		}
	}
}

// TestCheckReceiverAgainstServer runs the check against Server on a real
// socket and a real CRM file, twice: every clause passes both times (the
// second run's keys are new), every task the runs left is under a key of
// the checker's, and an expected retention other than the stated one
// fails the retention clause alone.
func TestCheckReceiverAgainstServer(t *testing.T) {
	c, _ := openCRM(t, system.CRMOptions{Retention: time.Hour})
	ts := serve(t, c, time.Hour)
	hour, twoHours := time.Hour, 2*time.Hour
	first, err := contract.Check(t.Context(), ts.URL, contract.Options{Retention: &hour})
	if err != nil {
		t.Fatal(err)
	}
	checkOK(t, first)
	var got []contract.Clause
	for _, res := range first.Results {
		got = append(got, res.Clause)
	}
	if !slices.Equal(got, contract.Clauses()) {
		t.Errorf("clauses reported %v, want %v", got, contract.Clauses())
	}
	if first.Retention == nil || *first.Retention != time.Hour {
		t.Errorf("the report's retention: got %v, want 1h", first.Retention)
	}
	second, err := contract.Check(t.Context(), ts.URL, contract.Options{Retention: &twoHours})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := second.Failed(), []contract.Clause{contract.ClauseRetention}; !slices.Equal(got, want) {
		t.Errorf("expecting 2h of a receiver that states 1h: failed %v, want %v", got, want)
	}
	if first.RunID == second.RunID || first.KeyPrefix == second.KeyPrefix {
		t.Errorf("two runs share run id %q / key prefix %q", first.RunID, first.KeyPrefix)
	}
	for _, task := range tasks(t, c) {
		if !strings.HasPrefix(task.Key, first.KeyPrefix) && !strings.HasPrefix(task.Key, second.KeyPrefix) {
			t.Errorf("task %d has key %q, not one of the runs' (%s…, %s…)", task.ID, task.Key, first.KeyPrefix, second.KeyPrefix)
		}
	}
	if !strings.HasPrefix(first.KeyPrefix, "handoff-check:") || !strings.Contains(first.KeyPrefix, first.RunID) {
		t.Errorf("key prefix %q does not say whose keys they are", first.KeyPrefix)
	}
}

func TestCheckReceiverRefusesURLs(t *testing.T) {
	for _, u := range []string{"ftp://crm.example", "crm.example:8080", "http://", "http://user@crm.example", "http://crm.example?x=1", "::"} {
		if _, err := contract.Check(t.Context(), u, contract.Options{}); !errors.Is(err, crm.ErrBadURL) {
			t.Errorf("Check(%q): got %v, want ErrBadURL", u, err)
		}
	}
}

// TestCheckReceiverNeedsAnAnswer: where nothing listens, no clause is
// judged: the check says nothing answers.
func TestCheckReceiverNeedsAnAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	if r, err := contract.Check(t.Context(), url, contract.Options{Timeout: time.Second}); !errors.Is(err, contract.ErrUnreachable) || len(r.Results) != 0 {
		t.Errorf("Check(%s), nothing listening: got %d clauses, %v; want ErrUnreachable and none", url, len(r.Results), err)
	}
}

func TestClauseNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range contract.Clauses() {
		name := c.String()
		if seen[name] || strings.HasPrefix(name, "clause(") {
			t.Errorf("clause %d: name %q repeated or missing", int(c), name)
		}
		seen[name] = true
	}
	if len(seen) != 10 {
		t.Errorf("%d clauses, want 10", len(seen))
	}
}

// TestCheckReceiverCatchesFlaws runs the check against receivers that
// each break the contract in one way: each fails exactly the clauses its
// flaw breaks and passes every other.
func TestCheckReceiverCatchesFlaws(t *testing.T) {
	tests := []struct {
		name  string
		flaw  flaw
		fails []contract.Clause
	}{
		{"keeps the contract", keepsContract, nil},
		{"a task per request", taskPerRequest, []contract.Clause{contract.ClauseReplay, contract.ClauseReplayNewConnection, contract.ClauseOtherPayload, contract.ClauseConcurrent, contract.ClauseReplayAfterCut}},
		{"ignores the payload on replay", ignoresPayload, []contract.Clause{contract.ClauseOtherPayload}},
		{"compares payloads without regard to case", foldsPayload, []contract.Clause{contract.ClauseOtherPayload}},
		{"answers 201 before it commits", answersBeforeCommit, []contract.Clause{contract.ClauseReplayAfterCut}},
		{"omits the retention header", omitsRetention, []contract.Clause{contract.ClauseRetention}},
		{"GET /contract disagrees with the header", contractDisagrees, []contract.Clause{contract.ClauseRetention}},
		{"checks, then creates", checkThenCreate, []contract.Clause{contract.ClauseConcurrent}},
		{"takes an unquoted key", acceptsRawKey, []contract.Clause{contract.ClauseMalformedKey}},
		{"creates without a key", createsWithoutKey, []contract.Clause{contract.ClauseMissingKey}},
		{"replays unmarked", unmarkedReplay, []contract.Clause{contract.ClauseReplay, contract.ClauseReplayNewConnection}},
		{"replays other bytes of the same JSON", reformatsReplay, []contract.Clause{contract.ClauseReplay, contract.ClauseReplayNewConnection, contract.ClauseOtherPayload, contract.ClauseConcurrent}},
		{"keeps a refused request", keepsRefused, []contract.Clause{contract.ClauseMalformedKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(newFakeReceiver(tt.flaw))
			defer ts.Close()
			report, err := contract.Check(t.Context(), ts.URL, contract.Options{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			verdicts := map[contract.Clause]contract.Verdict{}
			for _, res := range report.Results {
				verdicts[res.Clause] = res.Verdict
			}
			want := map[contract.Clause]contract.Verdict{}
			for _, c := range contract.Clauses() {
				want[c] = contract.Pass
				if slices.Contains(tt.fails, c) {
					want[c] = contract.Fail
				}
			}
			if diff := cmp.Diff(want, verdicts); diff != "" {
				for _, res := range report.Results {
					t.Logf("%s: %s: %s", res.Clause, res.Verdict, res.Evidence)
				}
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if report.OK() != (len(tt.fails) == 0) {
				t.Errorf("OK() is %v with failures %v", report.OK(), report.Failed())
			}
		})
	}
}

// TestCheckReceiverInterrupted: a cancelled context ends the check with
// the context's error.
func TestCheckReceiverInterrupted(t *testing.T) {
	ts := httptest.NewServer(newFakeReceiver(keepsContract))
	defer ts.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := contract.Check(ctx, ts.URL, contract.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}
