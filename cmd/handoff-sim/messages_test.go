package main

import (
	"os"
	"strings"
	"testing"
)

// TestMessagesNameTheEnvironment: an error caused by the environment's
// HANDOFF_POSTGRES_URL names that variable, not a --postgres-url the
// user never passed, and never shows its password; a --postgres-url
// given is named as the flag.
func TestMessagesNameTheEnvironment(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tt := range []struct {
		env     string
		args    []string
		code    int
		want    string
		wantNot string
	}{
		{"postgres//alice:pw-9f7a@h/db", []string{"replay", "--backend", "postgres"}, 2,
			`HANDOFF_POSTGRES_URL "postgres//…@h/db" is not a PostgreSQL URL (postgres://…); it looks like a mistyped URL`, "--postgres-url"},
		{"mysql://h/db", []string{"explore", "--backend", "postgres"}, 2,
			`HANDOFF_POSTGRES_URL "mysql://h/db" is not a PostgreSQL URL`, "--postgres-url"},
		{"postgres://nobody:pw-9f7a@127.0.0.1:1/none", []string{"replay", "--backend", "postgres", "--connect-wait", "100ms"}, 4,
			"the server of HANDOFF_POSTGRES_URL: ", "--postgres-url"},
		{"postgres://nobody@127.0.0.1:1/none", []string{"replay", "--backend", "postgres", "--postgres-url", "mysql://h/db"}, 2,
			`--postgres-url "mysql://h/db" is not a PostgreSQL URL`, "HANDOFF_POSTGRES_URL"},
	} {
		t.Setenv("HANDOFF_POSTGRES_URL", tt.env)
		code, stdout, stderr := runCLI(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) || strings.Contains(stdout+stderr, tt.wantNot) || strings.Contains(stdout+stderr, "pw-9f7a") {
			t.Errorf("%s=%s %v: exit %d, stderr %q; want %d and %q, not %q nor the password", "HANDOFF_POSTGRES_URL", tt.env, tt.args, code, stderr, tt.code, tt.want, tt.wantNot)
		}
	}
	if entries, err := os.ReadDir("."); err != nil || len(entries) != 0 {
		t.Errorf("the refused commands left %d entries in the folder (%v)", len(entries), err)
	}
}
