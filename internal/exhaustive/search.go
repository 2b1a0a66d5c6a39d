// Package exhaustive is the harness's small-scope proof: every sequence
// of steps up to a depth, over a bounded alphabet of the scenario
// language, run against the real design on SQLite and compared with the
// model after every step, as the random search does. The search goes
// breadth first and expands each state once (two sequences that reach the
// same model state, the same observation of the system and the same
// harness state are one state; see sim.Env.StateLines), so that a
// violation is found by the shortest sequence that makes it, and a search
// that finds none proves that no sequence within the bound breaks an
// invariant. A state is restored by replaying its sequence on emptied
// databases, before each step taken from it that follows one that
// changed it: a step that leaves every line of the state as it was
// leaves the state in place for the next.
package exhaustive

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/sim"
)

// ErrNondeterministic is a sequence that, replayed, did not reach the
// state it reached before: the search cannot restore states by replaying
// them, and proves nothing.
var ErrNondeterministic = errors.New("handoff: a replayed sequence reached another state than before")

// ErrBadBound is a search asked for with a depth below one.
var ErrBadBound = errors.New("handoff: the depth of an exhaustive search must be at least 1")

// Config says what to search and how far.
type Config struct {
	// Design is the design under test; the zero value means
	// designs.Handoff.
	Design designs.Design
	// Depth is the bound: the most steps a sequence takes, a config
	// line included, the design line not.
	Depth int
	// Alphabet is what the steps are drawn from; its zero value is
	// DefaultAlphabet.
	Alphabet Alphabet
	// Reduction says which states count as one beyond equal ones (see
	// Reduction); the zero value is NoReduction.
	Reduction Reduction
	// Dir is where the search makes the folder of its databases; "" means
	// os.TempDir().
	Dir string
	// Progress, if not nil, is called after every depth completed.
	Progress func(Level)
	// Lanes, if not empty, expand the states of each depth side by side,
	// each taking the next state as it is free (see NewLane, and
	// internal/lanes for lanes in processes of their own); the result is
	// the same whatever their number. Search does not close them. Empty
	// means one lane of Search's own, in this process.
	Lanes []Lane
}

// Level is what one depth of the search did: the states first reached
// at it, and the transitions (steps) run from the states of the depth
// before.
type Level struct {
	Depth       int
	States      int64
	Transitions int64
	// Elapsed is the time since the search started, when the depth was
	// completed.
	Elapsed time.Duration
}

// Result is what a search proved or found.
type Result struct {
	Config Config
	// Alphabet is the alphabet searched, with its defaults filled in.
	Alphabet Alphabet
	// Completed is the deepest depth every sequence of which ran: no
	// sequence of at most Completed steps breaks an invariant (or, with a
	// failure, none shorter than it does).
	Completed int
	// Levels are the depths completed, and the one under way when the
	// search stopped, if any.
	Levels []Level
	// States counts the distinct states reached, the empty one included;
	// Transitions the steps run from expanded states, each checked;
	// Replayed the steps run again to restore states.
	States, Transitions, Replayed int64
	// Failure is the shortest sequence that broke an invariant, nil when
	// none within the bound did.
	Failure *sim.Failure
	// Stopped says why the search ended before its bound (ctx's error:
	// its deadline, or an interruption); nil when it did not.
	Stopped error
	Start   time.Time
	Elapsed time.Duration
}

// StatesPerSecond is the distinct states reached per second of the
// search.
func (r Result) StatesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.States) / r.Elapsed.Seconds()
}

// Fingerprint is a state's digest under the search's reduction (see
// Reduction): two states with one fingerprint are one state.
type Fingerprint [sha256.Size]byte

// node is a state of the search: the step that first reached it from its
// parent (the root has none), its depth and its fingerprint.
type node struct {
	parent *node
	step   sim.Step
	depth  int
	key    Fingerprint
}

// path returns the steps from the root to n.
func (n *node) path() []sim.Step {
	steps := make([]sim.Step, n.depth)
	for at := n; at.parent != nil; at = at.parent {
		steps[at.depth-1] = at.step
	}
	return steps
}

// Search runs the exhaustive search cfg asks for. It stops at the first
// violation, which is then the shortest there is (ties broken by the
// order of the states and of the alphabet, whatever the lanes), when
// every sequence up to cfg.Depth has run, or when ctx is done (its
// deadline is the search's time limit): the result then says which depth
// it completed. An error means the harness could not run a step, or a
// replay reached another state (ErrNondeterministic).
func Search(ctx context.Context, cfg Config) (r Result, err error) {
	if cfg.Design.Name == "" {
		cfg.Design = designs.Handoff
	}
	if cfg.Depth < 1 {
		return Result{}, fmt.Errorf("%w: got %d", ErrBadBound, cfg.Depth)
	}
	if cfg.Dir == "" {
		cfg.Dir = os.TempDir()
	}
	r = Result{Config: cfg, Alphabet: cfg.Alphabet.orDefault(), Start: time.Now()}
	defer func() { r.Elapsed = time.Since(r.Start) }()
	lanes := cfg.Lanes
	if len(lanes) == 0 {
		l, err := NewLane(ctx, LaneConfig{Design: cfg.Design, Alphabet: r.Alphabet, Reduction: cfg.Reduction, Dir: cfg.Dir})
		if err != nil {
			return r, err
		}
		defer l.Close()
		lanes = []Lane{l}
	}
	root := &node{}
	first, err := lanes[0].Expand(nil, Fingerprint{})
	if err != nil {
		return r, err
	}
	root.key = first.Key
	seen := map[Fingerprint]bool{root.key: true}
	r.States = 1
	frontier := []*node{root}
	for depth := 1; depth <= cfg.Depth && len(frontier) > 0; depth++ {
		level := Level{Depth: depth}
		expansions := expandAll(ctx, lanes, frontier, first)
		first = Expansion{}
		var next []*node
		for _, e := range expansions {
			r.Transitions += e.Transitions
			r.Replayed += e.Replayed
			level.Transitions += e.Transitions
		}
		for i, parent := range frontier {
			e := expansions[i]
			switch {
			case e.err != nil:
				return r, e.err
			case !e.done:
				r.Stopped = ctx.Err()
			case e.Failure != nil:
				r.Failure = e.Failure
			}
			if r.Stopped != nil || r.Failure != nil {
				r.States += level.States
				level.Elapsed = time.Since(r.Start)
				r.Levels = append(r.Levels, level)
				return r, nil
			}
			for _, c := range e.Children {
				if !seen[c.Key] {
					seen[c.Key] = true
					next = append(next, &node{parent: parent, step: c.Step, depth: depth, key: c.Key})
					level.States++
				}
			}
		}
		r.States += level.States
		level.Elapsed = time.Since(r.Start)
		r.Levels = append(r.Levels, level)
		r.Completed = depth
		if cfg.Progress != nil {
			cfg.Progress(level)
		}
		frontier = next
	}
	if r.Completed < cfg.Depth {
		// No state was left to expand: every deeper sequence repeats one.
		r.Completed = cfg.Depth
	}
	return r, nil
}

// expansion is a state's Expansion as Search collects it: done when its
// lane expanded it, or the lane's error.
type expansion struct {
	Expansion
	done bool
	err  error
}

// expandAll expands the states of frontier across lanes, each lane
// taking the next state in order as it is free, until every state is
// expanded, ctx is done, or a state's expansion failed or found a
// violation: no state after it is handed out then, and every state before
// it was, so that the first violation in frontier's order is found
// whatever the lanes. root, when its Key is set, is the expansion of the
// root, which the first lane made.
func expandAll(ctx context.Context, lanes []Lane, frontier []*node, root Expansion) []expansion {
	expansions := make([]expansion, len(frontier))
	if root.Key != (Fingerprint{}) {
		expansions[0] = expansion{Expansion: root, done: true}
		return expansions
	}
	var (
		mu     sync.Mutex
		next   int
		failed = len(frontier)
		wg     sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= failed || ctx.Err() != nil {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for _, l := range lanes {
		wg.Go(func() {
			for i, ok := take(); ok; i, ok = take() {
				e, err := l.Expand(frontier[i].path(), frontier[i].key)
				expansions[i] = expansion{Expansion: e, done: err == nil, err: err}
				if err != nil || e.Failure != nil {
					mu.Lock()
					failed = min(failed, i)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return expansions
}

// stepTexts prints steps as scenario lines.
func stepTexts(steps []sim.Step) []string {
	texts := make([]string, len(steps))
	for i, s := range steps {
		texts[i] = s.String()
	}
	return texts
}
