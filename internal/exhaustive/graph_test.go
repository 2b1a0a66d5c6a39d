package exhaustive

import (
	"context"
	"crypto/sha256"
	"testing"

	"github.com/outboxlab/handoff/internal/sim"
)

// graphLane is a Lane over a small graph of named states instead of a
// design: each state's steps and where they lead. It shows how Search
// counts what its lanes report, apart from any database.
type graphLane map[string][]graphEdge

type graphEdge struct {
	step string
	to   string
}

// at is the state path reaches from the root.
func (g graphLane) at(path []sim.Step) string {
	state := "root"
	for _, s := range path {
		for _, e := range g[state] {
			if e.step == s.Directive {
				state = e.to
				break
			}
		}
	}
	return state
}

func (g graphLane) Expand(path []sim.Step, _ Fingerprint) (Expansion, error) {
	e := Expansion{Key: sha256.Sum256([]byte(g.at(path)))}
	for _, edge := range g[g.at(path)] {
		e.Children = append(e.Children, Child{Step: sim.NewStep(edge.step), Key: sha256.Sum256([]byte(edge.to))})
		e.Transitions++
	}
	return e, nil
}

func (g graphLane) Close() error { return nil }

// TestSearchCountsEachStateOnce: a step back to the root, or to a state
// of an earlier depth, reaches no new state; and a search whose states
// all expand before its bound has completed the bound, every deeper
// sequence repeating one of them.
func TestSearchCountsEachStateOnce(t *testing.T) {
	g := graphLane{
		"root": {{"stay", "root"}, {"on", "one"}},
		"one":  {{"back", "root"}, {"on", "two"}, {"stay", "one"}},
		"two":  {{"back", "one"}, {"home", "root"}},
	}
	r, err := Search(context.Background(), Config{Depth: 6, Lanes: []Lane{g}})
	if err != nil {
		t.Fatal(err)
	}
	var perDepth []int64
	for _, l := range r.Levels {
		perDepth = append(perDepth, l.States)
	}
	if r.States != 3 || len(perDepth) != 3 || perDepth[0] != 1 || perDepth[1] != 1 || perDepth[2] != 0 {
		t.Errorf("%d states, %v new at each depth; want 3: the root, then one, two and none", r.States, perDepth)
	}
	if r.Completed != 6 || r.Transitions != 2+3+2 {
		t.Errorf("completed %d with %d transitions, want the bound 6 with 7: every state expanded once", r.Completed, r.Transitions)
	}
}
