package handoff

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStepRoundTrip(t *testing.T) {
	for _, s := range []Step{
		NewStep("restart"),
		NewStep("deliver", "fault", "lost-reply"),
		NewStep("approve", "case", "case-104", "title", "Call about the plan"),
		NewStep("approve", "case", "", "title", "  tab\there \"quoted\" \\ ü\u2028 "),
		NewStep("approve", "title", "bad \xff byte", "case", "a=b#c"),
	} {
		got, err := ParseStep(s.String())
		if err != nil {
			t.Fatalf("ParseStep(%q): %v", s, err)
		}
		if diff := cmp.Diff(s, got); diff != "" {
			t.Errorf("round trip of %q (-want +got):\n%s", s, diff)
		}
	}
}

func TestParseStepRejects(t *testing.T) {
	for _, line := range []string{
		`approve case`,
		`approve =x`,
		`approve title="unclosed`,
		`approve title="a"b`,
		`approve case=a case=b`,
	} {
		if _, err := ParseStep(line); !errors.Is(err, ErrScenario) {
			t.Errorf("ParseStep(%q): got %v, want ErrScenario", line, err)
		}
	}
}

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
	ctx := context.Background()
	sc, err := ParseScenario("s.txt", "approve case=a title=b\n----\nsomething else\n\nrestart\n----\nrestarted: every handle closed and reopened from its file\noutbox a\n")
	if err != nil {
		t.Fatal(err)
	}
	outputs, problems, err := Replay(ctx, sc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(outputs) != 2 || len(problems) != 2 || problems[0].Case.Line != 1 || problems[1].Case.Line != 5 {
		t.Fatalf("got %d outputs and problems %+v, want two mismatches at lines 1 and 5", len(outputs), problems)
	}
	if !strings.HasPrefix(problems[0].Error(), "s.txt:1: approve case=a title=b: output differs") {
		t.Errorf("got %q", problems[0].Error())
	}
	for _, text := range []string{"launch\n----\n", "deliver fault=meteor\n----\n", "deliver case=a\n----\n", "restart\n----\n\ndesign name=handoff\n----\n"} {
		sc, err := ParseScenario("bad.txt", text)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := Replay(ctx, sc, t.TempDir()); !errors.Is(err, ErrScenario) || !strings.HasPrefix(err.Error(), "bad.txt:") {
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

func TestDemoMatchesSpec(t *testing.T) {
	d, err := RunDemo(context.Background(), t.TempDir()+"/demo")
	if err != nil {
		t.Fatal(err)
	}
	one := int64(1)
	want := Demo{OperationKey: "harbor:create-followup:v1:case-104", Steps: []DemoStep{
		{"reply_lost", "pending", 1, 1, nil},
		{"retry_same_action", "sent", 1, 2, &one},
		{"run_again", "idle", 1, 2, &one},
	}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("demo (-SPEC +got):\n%s", diff)
	}
	dir := t.TempDir()
	if _, err := RunDemo(context.Background(), dir); !errors.Is(err, ErrDirExists) {
		t.Errorf("existing folder: got %v, want ErrDirExists", err)
	}
}
