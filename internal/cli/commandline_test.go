package cli

import (
	"os/exec"
	"testing"
)

// TestShellWord gives words of rerun commands to a real shell, which must
// read each back as the one word it was: URLs with parameters, a
// redacted password, quotes and spaces.
func TestShellWord(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no shell to read the words back: %v", err)
	}
	for _, tt := range []struct {
		word   string
		quoted bool
	}{
		{"postgres://postgres@127.0.0.1:5432/test", false},
		{"postgres://postgres@127.0.0.1:5432/test?sslmode=disable&schema=ci_1", true},
		{"postgres://…@db.internal/app", true},
		{"http://127.0.0.1:8080/tasks", false},
		{"it's a $HOME `pwd` *", true},
		{"", true},
	} {
		got := ShellWord(tt.word)
		if quoted := got != tt.word; quoted != tt.quoted {
			t.Errorf("ShellWord(%q) = %s: quoted %v, want %v", tt.word, got, quoted, tt.quoted)
		}
		out, err := exec.CommandContext(t.Context(), sh, "-c", "printf '%s|' "+got).Output()
		if err != nil || string(out) != tt.word+"|" {
			t.Errorf("the shell read %s as %q (%v), want %q", got, out, err, tt.word+"|")
		}
	}
}

// TestInvokedAs: the command lines explore and trial print to run them
// again start as the program was started, or with go run and the
// program's folder (./cmd/handoff here) when go run or go test built it in a folder that is gone once it ends.
func TestInvokedAs(t *testing.T) {
	saved := program
	t.Cleanup(func() { program = saved })
	Register("handoff", "./cmd/handoff", "", nil)
	for _, tt := range []struct{ arg0, want string }{
		{"handoff", "handoff"},
		{"/usr/local/bin/handoff", "/usr/local/bin/handoff"},
		{"./handoff", "./handoff"},
		{"/home/ann/my tools/handoff", "'/home/ann/my tools/handoff'"},
		{"/tmp/go-build1554567133/b001/exe/handoff", "go run ./cmd/handoff"},
		{"/root/.cache/go-build/3f/3f0c-d/handoff", "go run ./cmd/handoff"},
		{"/tmp/go-build2718/b001/handoff.test", "go run ./cmd/handoff"},
	} {
		if got := InvokedAs(tt.arg0); got != tt.want {
			t.Errorf("InvokedAs(%q) = %q, want %q", tt.arg0, got, tt.want)
		}
	}
}
