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
	// What the harness keeps beside the model and the observation tells
	// states apart too: the sends it counted for a key, and the fence a
	// person's action left (which decides whether a later send counts).
	env, done, err := NewEnvIn(context.Background(), EnvOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	for _, s := range []Step{approve, NewStep("claim", "worker", "A")} {
		if _, err := env.Apply(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	key := env.Model().Outbox[0].Key
	for _, tt := range []struct {
		what   string
		change func()
	}{
		{"a send counted", func() { env.sends[key]++ }},
		{"a person's fence", func() { env.actedFence[key] = 1 }},
	} {
		before := env.StateLines()
		if tt.change(); slices.Equal(before, env.StateLines()) {
			t.Errorf("%s leaves the lines as they were", tt.what)
		}
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
