package sim

import (
	"errors"
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
