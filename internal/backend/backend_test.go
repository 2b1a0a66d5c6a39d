package backend

import "testing"

// TestServer: the server a run takes when none is given is the
// variable's, unless it is unset or "off", which turns off the test
// suite's PostgreSQL part and is no URL: then the local server.
func TestServer(t *testing.T) {
	for _, tt := range []struct{ env, want string }{
		{"", LocalPostgres},
		{"off", LocalPostgres},
		{"postgres://app@db.example:5432/handoff", "postgres://app@db.example:5432/handoff"},
	} {
		t.Setenv(PostgresURLEnv, tt.env)
		if got := Server(); got != tt.want {
			t.Errorf("%s=%q: Server() is %q, want %q", PostgresURLEnv, tt.env, got, tt.want)
		}
	}
}
