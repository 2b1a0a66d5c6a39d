package sim

import (
	"context"
	"slices"
	"testing"
)

// TestStateLines: a state's lines are the same however the state was
// reached again, in any run; they differ between states the model, the
// system or a named worker tell apart; and they are sorted.
func TestStateLines(t *testing.T) {
	approve := NewStep("approve", "case", "case-1", "title", "Call back")
	linesAfter := func(steps ...Step) []string {
		env, done, err := NewEnvIn(context.Background(), EnvOptions{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		for _, s := range steps {
			if _, err := env.Apply(context.Background(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		return env.StateLines()
	}
	once := linesAfter(approve, NewStep("claim", "worker", "A"))
	if again := linesAfter(approve, NewStep("claim", "worker", "A")); !slices.Equal(once, again) {
		t.Errorf("the same steps, other lines:\n%q\n%q", once, again)
	}
	if !slices.IsSorted(once) {
		t.Errorf("lines not sorted: %q", once)
	}
	for _, other := range [][]Step{
		{approve},
		{approve, NewStep("claim", "worker", "B")},
		{approve, NewStep("claim", "worker", "A"), NewStep("send", "worker", "A")},
		{approve, NewStep("tick", "ms", "1"), NewStep("claim", "worker", "A")},
	} {
		if slices.Equal(once, linesAfter(other...)) {
			t.Errorf("%v reaches the lines of approve, claim A", other)
		}
	}
}
