package main

import (
	"net/http"
	"net/http/httptest"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	receiver "github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// TestOneBudget: every command shows a row the same attempt budget and
// says where it comes from: the contract's default before a worker with
// a larger --max-attempts claimed, then the one it recorded; and deliver
// applies that budget, not its own default, so that a row workers gave
// 5 attempts is not blocked by hand at its third.
func TestOneBudget(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	const byDefault = "budget 3, the contract's default until a worker with a larger --max-attempts claims a row (work's default is 20)"
	const recorded = "budget 5, recorded in the app database by a worker's --max-attempts"
	mustRun(t, "crm", "init", "--crm", "crm.db")
	c, err := system.OpenCRM(t.Context(), filepath.Join(dir, "crm.db"), system.Durable)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv, err := receiver.NewServer(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	defer down.Close()
	key := keyOf("case-1")
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"approve", "--app", "app.db", "--case", "case-1", "--title", "Call back"},
			[]string{"approved " + key + ": outbox row pending, 0 of 3 attempts (" + byDefault + ")"}},
		{[]string{"inspect", "--app", "app.db"},
			[]string{"attempts of every row: " + byDefault, key + " pending, 0 of 3 attempts"}},
		{[]string{"work", "--app", "app.db", "--crm-url", down.URL, "--until-idle", "--max-attempts", "5", "--backoff-base", "0"},
			[]string{"0 pending, 0 sent, 1 blocked"}},
		{[]string{"inspect", "--app", "app.db"},
			[]string{"attempts of every row: " + recorded, key + " blocked, 5 of 5 attempts, last error transient"}},
		{[]string{"approve", "--app", "app.db", "--case", "case-2", "--title", "Call back"},
			[]string{"outbox row pending, 0 of 5 attempts (" + recorded + ")"}},
		{[]string{"requeue", "case-1", "--app", "app.db", "--reason", "the CRM is back"},
			[]string{"pending, 0 of 5 attempts, eligible now (by " + osUser(t) + "; " + recorded + ")"}},
		{[]string{"deliver", "--app", "app.db", "--crm", "crm.db", "--fault", "lost-reply"}, []string{"(attempt 1 of 5)"}},
		{[]string{"deliver", "--app", "app.db", "--crm", "crm.db", "--fault", "lost-reply"}, []string{"(attempt 2 of 5)"}},
		{[]string{"deliver", "--app", "app.db", "--crm", "crm.db", "--fault", "lost-reply"}, []string{"(attempt 3 of 5)"}},
		{[]string{"deliver", "--app", "app.db", "--crm", "crm.db", "--fault", "lost-reply"}, []string{"pending " + key + ": transient failure (attempt 4 of 5)"}},
		{[]string{"deliver", "--app", "app.db", "--crm", "crm.db"}, []string{"sent " + key + ": CRM task 1 (attempt 5 of 5)"}},
		{[]string{"inspect", "--app", "app.db"},
			[]string{"attempts of every row: " + recorded, key + " sent, 5 of 5 attempts, CRM task 1"}},
	} {
		out := mustRun(t, tt.args...)
		for _, want := range tt.want {
			if !strings.Contains(out, want) {
				t.Errorf("%v: %q, want %q", tt.args, out, want)
			}
		}
	}
}

// osUser is the name of the OS user running the tests: who the
// operator actions record without a token file.
func osUser(t *testing.T) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}
