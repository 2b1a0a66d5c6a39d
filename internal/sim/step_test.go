package sim

import (
	"errors"
	"testing"
)

func TestParseStepRejects(t *testing.T) {
	for _, text := range []string{
		`approve case`,
		`approve title="unclosed`,
		`approve case=a case=b`,
	} {
		if _, err := ParseStep(text); !errors.Is(err, ErrScenario) {
			t.Errorf("ParseStep(%q): got %v, want ErrScenario", text, err)
		}
	}
}

// TestAnswerString: an answer prints as invariant 6 quotes it: its kind
// and key, how many deliveries an idle converge took, the task a send
// heard, when a row becomes eligible; a converge that gave up prints
// without its count.
func TestAnswerString(t *testing.T) {
	for _, tt := range []struct {
		a    Answer
		want string
	}{
		{Answer{Kind: Sent, Key: "k"}, "sent k"},
		{Answer{Kind: Idle}, "idle"},
		{Answer{Kind: Idle, N: 3}, "idle after 3"},
		{Answer{Kind: Busy, N: 40}, "busy"},
		{Answer{Kind: Task, Key: "k", N: 7}, "task k 7"},
		{Answer{Kind: Idle, At: 1500}, "idle until 1500"},
		{Answer{Kind: Pending, Key: "k", N: 2}, "pending k"},
	} {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("%+v prints %q, want %q", tt.a, got, tt.want)
		}
	}
}
