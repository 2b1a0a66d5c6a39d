package words_test

import (
	"testing"

	"github.com/outboxlab/handoff/internal/words"
)

// TestHowMany: counts in the output are singular for 1 and plural
// otherwise, the verb agreeing.
func TestHowMany(t *testing.T) {
	for _, tt := range []struct {
		n          int
		noun, want string
	}{
		{0, "step", "0 steps"},
		{1, "step", "1 step"},
		{2, "step", "2 steps"},
		{1, "entry", "1 entry"},
		{3, "entry", "3 entries"},
		{2, "delivery", "2 deliveries"},
		{2, "key", "2 keys"},
		{2, "work process", "2 work processes"},
		{1, "crash point", "1 crash point"},
		{5, "crash point", "5 crash points"},
	} {
		if got := words.HowMany(tt.n, tt.noun); got != tt.want {
			t.Errorf("HowMany(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
		}
	}
	if got, want := words.Agree(1, "row", "needs", "need"), "1 row needs"; got != want {
		t.Errorf("words.Agree(1, …) = %q, want %q", got, want)
	}
	if got, want := words.Agree(2, "row", "needs", "need"), "2 rows need"; got != want {
		t.Errorf("words.Agree(2, …) = %q, want %q", got, want)
	}
}
