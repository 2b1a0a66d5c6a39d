package notrun

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// childEnv makes TestSayChild say its line: it runs only as the child of
// TestSayIsSeenWithoutVerbose.
const childEnv = "HANDOFF_NOTRUN_CHILD"

// TestSayIsSeenWithoutVerbose runs go test on this package, without -v,
// through a pipe as CI does: the line a passing test says is in what go
// test printed, once however often it was said, beside the package's ok.
func TestSayIsSeenWithoutVerbose(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("the child's own run")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the go command's standard error is found through Linux's /proc")
	}
	cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", "-run", "^TestSayChild$", ".")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput() // a pipe
	if err != nil {
		t.Fatalf("go test: %v\n%s", err, out)
	}
	want := "handoff: github.com/outboxlab/handoff/internal/notrun: the example part did not run: a reason\n"
	if strings.Count(string(out), want) != 1 || !strings.Contains(string(out), "ok  \tgithub.com/outboxlab/handoff/internal/notrun") {
		t.Errorf("go test printed:\n%s\nwant the package's ok and, once, %q", out, want)
	}
}

// TestSayChild says a line twice, and passes.
func TestSayChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("runs as TestSayIsSeenWithoutVerbose's child")
	}
	Say("the example part did not run: a reason")
	Say("the example part did not run: a reason")
}
