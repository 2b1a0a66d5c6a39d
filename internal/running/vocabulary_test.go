package running

import (
	"slices"
	"testing"

	"github.com/outboxlab/handoff/faults"
)

// sameAsStepMode lists the schedule words that name a fault of the step
// mode (package faults), each meaning what the step mode means by it.
// Every other word of a schedule is the running mode's own.
var sameAsStepMode = map[string]faults.Kind{
	string(CommitReplyLost): faults.CommitReplyLost,
	string(LostReply):       faults.LostReply,
}

// TestOneFaultVocabulary: a word of a schedule that is also the name of a
// fault in package faults must be that fault, declared in
// sameAsStepMode; a word that means something else must have a name of
// its own. (The running mode once called a lost COMMIT reply
// commit-lost, the step mode's name for a COMMIT that never arrives.)
func TestOneFaultVocabulary(t *testing.T) {
	var words []string
	for _, k := range []EventKind{Approve, Crash, Reset, CommitReplyLost, Outage} {
		words = append(words, string(k))
	}
	for _, a := range answers {
		words = append(words, string(a))
	}
	for _, f := range keyFaults {
		words = append(words, string(f))
	}
	for _, w := range words {
		step, shared := sameAsStepMode[w]
		switch named := slices.Contains(faults.All, faults.Kind(w)); {
		case named && !shared:
			t.Errorf("schedule word %q is the step mode's fault %q, with another meaning: name it otherwise, or declare it in sameAsStepMode", w, w)
		case shared && step != faults.Kind(w):
			t.Errorf("schedule word %q is declared the step mode's %q", w, step)
		case shared && !named:
			t.Errorf("schedule word %q is declared the step mode's, but package faults has no such fault", w)
		}
	}
	for w := range sameAsStepMode {
		if !slices.Contains(words, w) {
			t.Errorf("sameAsStepMode names %q, which no schedule takes", w)
		}
	}
}
