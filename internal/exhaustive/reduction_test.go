package exhaustive

import (
	"strings"
	"testing"
)

// TestRenamings: each reduction renames what it says and nothing else,
// and a state and its renamed twin get one fingerprint under it but not
// under the others.
func TestRenamings(t *testing.T) {
	a := DefaultAlphabet()
	// A worker's name is renamed where the lines quote it, never inside
	// another word: the options' line spells both workers' letters.
	const config = `config model.Config{MaxAttempts:3, BackoffBase:1000, BackoffCap:8000}`
	state := []string{
		config,
		`model claim "A" model.Claim{Key:"harbor:create-followup:v1:case-1"}`,
		`model outbox []model.Row{{Key:"harbor:create-followup:v1:case-1", LeaseOwner:"A"}, {Key:"harbor:create-followup:v1:case-2"}}`,
		`model pipe "P" fast false`,
	}
	keysSwapped := []string{
		config,
		`model claim "A" model.Claim{Key:"harbor:create-followup:v1:case-2"}`,
		`model outbox []model.Row{{Key:"harbor:create-followup:v1:case-2", LeaseOwner:"A"}, {Key:"harbor:create-followup:v1:case-1"}}`,
		`model pipe "P" fast false`,
	}
	workersSwapped := []string{
		config,
		`model claim "B" model.Claim{Key:"harbor:create-followup:v1:case-1"}`,
		`model outbox []model.Row{{Key:"harbor:create-followup:v1:case-1", LeaseOwner:"B"}, {Key:"harbor:create-followup:v1:case-2"}}`,
		`model pipe "P" fast false`,
	}
	bothSwapped := []string{
		config,
		`model claim "B" model.Claim{Key:"harbor:create-followup:v1:case-2"}`,
		`model outbox []model.Row{{Key:"harbor:create-followup:v1:case-2", LeaseOwner:"B"}, {Key:"harbor:create-followup:v1:case-1"}}`,
		`model pipe "P" fast false`,
	}
	for _, tt := range []struct {
		reduction Reduction
		twin      []string
		same      bool
	}{
		{NoReduction, keysSwapped, false},
		{NoReduction, workersSwapped, false},
		{KeySymmetry, keysSwapped, true},
		{KeySymmetry, workersSwapped, false},
		{KeySymmetry, bothSwapped, false},
		{WorkerSymmetry, workersSwapped, true},
		{WorkerSymmetry, keysSwapped, false},
		{WorkerSymmetry, bothSwapped, false},
		{BothSymmetries, keysSwapped, true},
		{BothSymmetries, workersSwapped, true},
		{BothSymmetries, bothSwapped, true},
	} {
		if got := fingerprint(state, tt.reduction.renamings(a)) == fingerprint(tt.twin, tt.reduction.renamings(a)); got != tt.same {
			t.Errorf("%s: one fingerprint for the state and %q: %t, want %t", tt.reduction, strings.Join(tt.twin, "; "), got, tt.same)
		}
	}
}
