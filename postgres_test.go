package handoff

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/pgtest"
)

// TestPostgresServer: the variable off skips, a server it names that
// does not answer fails, and one that answers is the test's.
func TestPostgresServer(t *testing.T) {
	for _, tc := range []struct {
		name, env, want string
	}{
		{"off", "off", "skip: the PostgreSQL tests did not run: HANDOFF_POSTGRES_URL=off"},
		{"a server that does not answer", "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=1", "fail: HANDOFF_POSTGRES_URL=postgres://postgres@127.0.0.1:1/test"},
		{"a server that answers", "", "url: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if env == "" {
				env = pgtest.Server(t)
			}
			t.Setenv(PostgresURLEnv, env)
			r := &saying{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				r.said = "url: " + PostgresServer(r)
			}()
			<-done
			if !strings.HasPrefix(r.said, tc.want) || tc.want == "url: " && r.said != "url: "+env {
				t.Errorf("got %q, want %q", r.said, tc.want)
			}
		})
	}
}

// saying is a testing.TB whose Skipf and Fatalf end the goroutine that
// calls them and keep what they said.
type saying struct {
	testing.TB
	said string
}

func (s *saying) Helper() {}
func (s *saying) Skipf(format string, args ...any) {
	s.said = "skip: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (s *saying) Fatalf(format string, args ...any) {
	s.said = "fail: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}
