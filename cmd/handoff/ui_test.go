package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUIUsageErrors: bad flags of ui are usage errors (exit 2) that say
// what is wanted, before any file is opened or created, and the token
// is read only from a file or the environment, long enough.
func TestUIUsageErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mustRun(t, "approve", "--app", "app.db", "--case", "case-1", "--title", "t")
	if err := os.WriteFile("short", []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("empty", []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := folder(t, dir)
	ui := []string{"ui", "--app", "app.db", "--addr", "127.0.0.1:0"}
	for _, tt := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"ui"}, "", "missing --app"},
		{append(ui, "--crm", "crm.db", "--crm-url", "http://127.0.0.1:1"), "", "give one of --crm PATH and --crm-url URL, not both"},
		{append(ui, "--crm-url", "http://127.0.0.1:1", "--retention", "1h"), "", "--retention goes with --crm or no CRM"},
		{append(ui, "--rows", "0"), "", "--rows is 0, want 1 or more"},
		{append(ui, "--rows", "5000"), "", "--rows is 5000, want 1 to 1000"},
		{append(ui, "--token-file", "short"), "", "the token of --token-file short has 3 characters, want at least 16"},
		{append(ui, "--token-file", "empty"), "", "--token-file empty holds no token"},
		{ui, "too-short", "the token of HANDOFF_UI_TOKEN has 9 characters, want at least 16"},
		{append(ui, "--crm-url", "ftp://x"), "", "--crm-url"},
		{append(ui, "--token", "x"), "", "flag provided but not defined: -token"},
	} {
		t.Setenv(tokenEnv, tt.env)
		code, _, stderr := runCLI(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v (%s=%q): exit %d, stderr %q; want 2 and %q", tt.args, tokenEnv, tt.env, code, stderr, tt.want)
		}
	}
	t.Setenv(tokenEnv, "")
	refused(t, "the app database missing.db does not exist", "ui", "--app", "missing.db", "--addr", "127.0.0.1:0")
	if diff := cmp.Diff(before, folder(t, dir)); diff != "" {
		t.Errorf("refused ui changed the folder (-before +after):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, "crm.db")); err == nil {
		t.Error("ui created a CRM file")
	}
}
