package notrun_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/notrun"
)

// childEnv marks the run of this test binary in which TestSkipChild
// calls Skip.
const childEnv = "HANDOFF_NOTRUN_CHILD"

// TestSkipChild calls Skip, in the child process TestSkip starts.
func TestSkipChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestSkip")
	}
	notrun.Skip(t, "a part did not run: no such thing here")
}

// TestSkip runs Skip in a child test binary: it skips the test, saying
// why, unless HANDOFF_EVERY_PART=1, where it fails it instead.
func TestSkip(t *testing.T) {
	for _, tt := range []struct {
		required string
		want     []string
	}{
		{"", []string{"--- SKIP: TestSkipChild", "a part did not run: no such thing here"}},
		{"0", []string{"--- SKIP: TestSkipChild"}},
		{"1", []string{"--- FAIL: TestSkipChild", "a part did not run: no such thing here, and HANDOFF_EVERY_PART=1 wants every part of the suite to run"}},
	} {
		t.Run("required="+tt.required, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestSkipChild$", "-test.v")
			cmd.Env = append(os.Environ(), childEnv+"=1", notrun.Required+"="+tt.required)
			out, _ := cmd.CombinedOutput()
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the child's output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
