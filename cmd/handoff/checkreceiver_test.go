package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// servedCRM serves a new CRM file, stating retention, on a real loopback
// socket, and returns its URL.
func servedCRM(t *testing.T, retention time.Duration) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crm.db")
	mustRun(t, "crm", "init", "--crm", path)
	return serveCRMFile(t, path, retention)
}

// notFound serves a 404 to every request: an endpoint that is no receiver.
func notFound(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestCheckReceiverCommand(t *testing.T) {
	t.Parallel()
	crm, nothing, closed := servedCRM(t, time.Hour), notFound(t), closedPort(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // each in stdout
		stderr string   // in stderr's one line; "" for none
	}{
		{"crm serve keeps the contract", []string{crm}, 0, []string{"first-create  ", "  pass  ", "10 clauses: 10 passed, 0 failed, 0 skipped; the receiver keeps the contract"}, ""},
		{"flags after the URL", []string{crm, "--retention", "1h", "--timeout", "5s"}, 0, []string{"retention  ", "3600 s (1h0m0s)"}, ""},
		{"another retention expected", []string{"--retention", "2h", crm}, 1, []string{"retention  ", "  fail  ", "want 7200 s (2h0m0s)", "9 passed, 1 failed"}, "1 of 10 clauses failed"},
		{"an endpoint that is no receiver", []string{nothing}, 1, []string{"first-create  ", "  fail  ", "POST → 404, want 201"}, "the receiver does not keep the contract"},
		{"nothing listening", []string{closed}, 1, nil, "nothing answers at the receiver's URL"},
		{"no URL", []string{"--json"}, 2, nil, "missing URL"},
		{"two URLs", []string{crm, crm}, 2, nil, "unexpected argument"},
		{"not http", []string{"ftp://crm.example"}, 2, nil, `the receiver URL "ftp://crm.example" is not http or https`},
		{"no scheme", []string{"crm.example:8080"}, 2, nil, "not http or https"},
		{"a query", []string{"http://crm.example/?x=1"}, 2, nil, "no user, query or fragment"},
		{"no timeout", []string{crm, "--timeout", "0"}, 2, nil, "--timeout is 0s, want more than 0"},
		{"a negative timeout", []string{crm, "--timeout", "-1s"}, 2, nil, "--timeout is -1s, want more than 0"},
		{"a negative retention", []string{crm, "--retention", "-1s"}, 2, nil, "--retention is -1s, want 0 or more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"check-receiver"}, tt.args...)...)
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			wantLines := map[int]int{0: 0, 1: 1, 2: 2}[tt.code]
			if stderr == "" {
				lines = nil
			}
			if code != tt.code || len(lines) != wantLines || wantLines > 0 && !strings.Contains(lines[0], tt.stderr) {
				t.Fatalf("got exit %d, stderr %q; want %d, %d line(s), the first with %q\n%s", code, stderr, tt.code, wantLines, tt.stderr, stdout)
			}
			for _, want := range tt.stdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout has no %q:\n%s", want, stdout)
				}
			}
			if tt.code == 2 && stdout != "" {
				t.Errorf("a usage error printed %q on stdout", stdout)
			}
		})
	}
}

// TestCheckReceiverJSON checks the JSON report against receivers that
// state an hour and forever: retention_seconds is 3600 and 0, never null.
func TestCheckReceiverJSON(t *testing.T) {
	t.Parallel()
	for _, retention := range []time.Duration{time.Hour, 0} {
		code, stdout, stderr := runCLI(t, "check-receiver", servedCRM(t, retention), "--json", "--retention", retention.String())
		if code != 0 || stderr != "" {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		var out struct {
			OK               bool   `json:"ok"`
			RunID            string `json:"run_id"`
			KeyPrefix        string `json:"key_prefix"`
			RetentionSeconds *int64 `json:"retention_seconds"`
			Passed           int    `json:"passed"`
			Clauses          []struct {
				Clause, Verdict string
			} `json:"clauses"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, stdout)
		}
		if !out.OK || out.Passed != 10 || len(out.Clauses) != 10 || out.RetentionSeconds == nil || *out.RetentionSeconds != int64(retention/time.Second) ||
			!strings.Contains(out.KeyPrefix, out.RunID) || out.Clauses[0].Clause != "first-create" || out.Clauses[0].Verdict != "pass" {
			t.Errorf("retention %v: got %+v", retention, out)
		}
	}
}
