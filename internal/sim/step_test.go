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
