package sim

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/violation"
)

func TestParseScenarioNamesTheLine(t *testing.T) {
	tests := []struct{ text, want string }{
		{"# c\napprove case=a title=b\ndeliver\n", "f.txt:3: "},
		{"approve case=a title=\"b\n----\n", "f.txt:1: "},
	}
	for _, tt := range tests {
		_, err := ParseScenario("f.txt", tt.text)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !errors.Is(err, ErrScenario) {
			t.Errorf("got %v, want an ErrScenario starting with %q", err, tt.want)
		}
	}
}

func TestReplayReportsMismatchesAndBadSteps(t *testing.T) {
	ctx := t.Context()
	sc, err := ParseScenario("s.txt", "approve case=a title=b\n----\nsomething else\n\nrestart\n----\nrestarted: every handle closed and reopened from its file\noutbox a\n")
	if err != nil {
		t.Fatal(err)
	}
	run, problems, err := Replay(ctx, sc, Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	outputs := run.Outputs()
	if len(outputs) != 2 || len(problems) != 2 || problems[0].Case.Line != 1 || problems[1].Case.Line != 5 {
		t.Fatalf("got %d outputs and problems %+v, want two mismatches at lines 1 and 5", len(outputs), problems)
	}
	if !strings.HasPrefix(problems[0].Error(), "s.txt:1: approve case=a title=b: output differs") {
		t.Errorf("got %q", problems[0].Error())
	}
	// Only the lines that differ are marked, and the lines both have stay
	// between them.
	if want := "s.txt:5: restart: output differs (-want +got):\n restarted: every handle closed and reopened from its file\n-outbox a\n+outbox harbor:create-followup:v1:a pending attempts=0\n+crm empty"; problems[1].Error() != want {
		t.Errorf("got\n%s\nwant\n%s", problems[1].Error(), want)
	}
	for _, text := range []string{"launch\n----\n", "deliver fault=meteor\n----\n", "deliver case=a\n----\n", "restart\n----\n\ndesign name=handoff\n----\n"} {
		sc, err := ParseScenario("bad.txt", text)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := Replay(ctx, sc, Config{Dir: t.TempDir()}); !errors.Is(err, ErrScenario) || !strings.HasPrefix(err.Error(), "bad.txt:") {
			t.Errorf("%q: got %v, want an ErrScenario with file:line", text, err)
		}
	}
}

func TestFormatKeepsCommentsAndRewritesOutputs(t *testing.T) {
	text := "# why\napprove case=a title=b\n----\nold\n\n# then\nrestart\n----\n\n# end\n"
	sc, err := ParseScenario("f.txt", text)
	if err != nil {
		t.Fatal(err)
	}
	want := "# why\napprove case=a title=b\n----\nnew 1\n\n# then\nrestart\n----\nnew 2\n\n# end\n"
	if got := sc.Format([]string{"new 1", "new 2"}); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestScenarioBackend: a scenario runs on the backend its backend line
// names when that line comes among the design, config and transport
// lines it starts with, in any order, and on both otherwise.
func TestScenarioBackend(t *testing.T) {
	for _, tt := range []struct {
		lines []string
		want  backend.Backend
	}{
		{nil, ""},
		{[]string{"approve case=a title=b"}, ""},
		{[]string{"backend name=postgres"}, backend.Postgres},
		{[]string{"design name=two-writes", "transport name=http", "backend name=postgres"}, backend.Postgres},
		{[]string{"config max-attempts=2", "backend name=sqlite"}, backend.SQLite},
		{[]string{"transport name=http", "config retention=60000", "backend name=postgres", "approve case=a title=b"}, backend.Postgres},
		{[]string{"approve case=a title=b", "backend name=postgres"}, ""},
	} {
		var text strings.Builder
		for _, l := range tt.lines {
			text.WriteString(l + "\n----\n\n")
		}
		sc, err := ParseScenario("f.txt", text.String())
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.Backend(); got != tt.want {
			t.Errorf("%q: backend %q, want %q", tt.lines, got, tt.want)
		}
	}
}

// TestSaveCounterexampleKeepsWhatIsThere: saving a failure whose file
// name is taken already writes the next free name, and leaves every file
// there as it was.
func TestSaveCounterexampleKeepsWhatIsThere(t *testing.T) {
	dir := t.TempDir()
	failure := func(output string) *Failure {
		return &Failure{Run: Run{Design: "two-writes", Steps: []Step{NewStep("approve", "case", "a", "title", "b")}, Outcomes: []Outcome{{Output: output}}},
			Violation: violation.Violation{Invariant: 2, Name: "one outbox row per approval"}}
	}
	want := map[string]string{}
	for i, name := range []string{"found-two-writes-invariant-2.txt", "found-two-writes-invariant-2-2.txt", "found-two-writes-invariant-2-3.txt"} {
		f := failure(strings.Repeat("output ", i+1))
		path, err := SaveCounterexample(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		if path != filepath.Join(dir, name) {
			t.Errorf("save %d: wrote %s, want %s", i+1, path, name)
		}
		want[path] = f.Scenario(f.Header()...)
	}
	for path, text := range want {
		if b, err := os.ReadFile(path); err != nil || string(b) != text {
			t.Errorf("%s holds %q, %v; want %q", filepath.Base(path), b, err, text)
		}
	}
}

// TestRunDesignLines: the design and transport lines a run starts with,
// in either order, are neither numbered nor counted as its steps.
func TestRunDesignLines(t *testing.T) {
	design, transport, approve := NewStep("design", "name", "two-writes"), NewStep("transport", "name", "http"), NewStep("approve", "case", "a", "title", "b")
	for _, tt := range []struct {
		steps         []Step
		lines, length int
	}{
		{[]Step{approve}, 0, 1},
		{[]Step{design, approve, NewStep("deliver")}, 1, 2},
		{[]Step{transport, approve}, 1, 1},
		{[]Step{design, transport, approve}, 2, 1},
		{[]Step{transport, design, approve, NewStep("deliver")}, 2, 2},
	} {
		r := Run{Steps: tt.steps}
		if r.DesignLines() != tt.lines || r.Length() != tt.length {
			t.Errorf("%v: %d design lines and %d steps, want %d and %d", tt.steps, r.DesignLines(), r.Length(), tt.lines, tt.length)
		}
	}
}
