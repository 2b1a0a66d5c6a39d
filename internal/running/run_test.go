package running_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/running"
)

func TestPoolRunsASchedule(t *testing.T) {
	s, err := running.ParseSchedule("inline", strings.NewReader(`design pool
backend sqlite
at 0s approve case-1 "Call about the approved repair plan"
at 100ms approve case-2 "Second"
at 2s crash
at 3s approve case-3 "Third"
at 4s outage 30s
request 1 lost-reply
request 2 hold 45s
`))
	if err != nil {
		t.Fatal(err)
	}
	res := running.Run(t, running.Config{Design: designs.Pool, Database: filepath.Join(t.TempDir(), "app.db"), Backend: "sqlite"}, s)
	t.Logf("log:\n%s", strings.Join(res.Log, "\n"))
	for _, r := range res.Requests {
		t.Logf("request %+v", r)
	}
	if res.Violation != nil {
		t.Fatal(res.Violation)
	}
}
