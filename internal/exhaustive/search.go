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
// databases.
package exhaustive

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strings"
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

// node is a state of the search: the step that first reached it from its
// parent (the root has none), and its depth.
type node struct {
	parent *node
	step   sim.Step
	depth  int
	key    [sha256.Size]byte
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
// alphabet's order), when every sequence up to cfg.Depth has run, or when
// ctx is done (its deadline is the search's time limit): the result
// then says which depth it completed. An error means the harness could
// not run a step, or a replay reached another state (ErrNondeterministic).
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
	s, err := newSearcher(ctx, cfg, r.Alphabet)
	if err != nil {
		return r, err
	}
	defer s.close()
	root, err := s.restore(nil)
	if err != nil {
		return r, err
	}
	seen := map[[sha256.Size]byte]bool{root.key: true}
	r.States = 1
	frontier := []*node{root}
	for depth := 1; depth <= cfg.Depth && len(frontier) > 0; depth++ {
		level := Level{Depth: depth}
		var next []*node
		for _, parent := range frontier {
			if r.Stopped = ctx.Err(); r.Stopped != nil {
				level.Elapsed = time.Since(r.Start)
				r.Levels = append(r.Levels, level)
				return r, nil
			}
			children, failure, err := s.expand(parent, &r, &level)
			if err != nil {
				return r, err
			}
			if failure != nil {
				r.Failure = failure
				level.Elapsed = time.Since(r.Start)
				r.Levels = append(r.Levels, level)
				return r, nil
			}
			for _, c := range children {
				if !seen[c.key] {
					seen[c.key] = true
					next = append(next, c)
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

// searcher runs the steps of a search on one pair of databases, emptied
// to restore each state.
type searcher struct {
	ctx      context.Context
	cfg      Config
	alphabet Alphabet
	env      *sim.Env
	done     func()
	// at is the node whose state the Env holds, nil when it holds
	// another; run is the run that brought it there, the design line
	// first.
	at  *node
	run sim.Run
}

func newSearcher(ctx context.Context, cfg Config, a Alphabet) (*searcher, error) {
	env, done, err := sim.NewEnvIn(context.WithoutCancel(ctx), sim.EnvOptions{Dir: cfg.Dir, Design: cfg.Design, Renewable: true})
	if err != nil {
		return nil, err
	}
	return &searcher{ctx: context.WithoutCancel(ctx), cfg: cfg, alphabet: a, env: env, done: done}, nil
}

func (s *searcher) close() { s.done() }

// restore brings the Env to the state of the sequence steps, from empty
// databases, and returns that state's node (its parent and step unset),
// which the Env then holds.
func (s *searcher) restore(steps []sim.Step) (*node, error) {
	s.at = nil
	if err := s.env.Renew(s.ctx); err != nil {
		return nil, err
	}
	run := sim.Run{Design: s.cfg.Design.Name}
	all := steps
	if s.cfg.Design.Name != designs.Handoff.Name {
		all = append([]sim.Step{sim.NewStep("design", "name", s.cfg.Design.Name)}, steps...)
	}
	for i, step := range all {
		out, err := s.env.Apply(s.ctx, step)
		if err != nil {
			return nil, fmt.Errorf("step %d %q: %w", i+1, step, err)
		}
		run.Steps, run.Outcomes = append(run.Steps, step), append(run.Outcomes, out)
	}
	n := &node{depth: len(steps), key: s.key()}
	s.at, s.run = n, run
	return n, nil
}

// key is the fingerprint of the Env's state under the search's
// reduction.
func (s *searcher) key() [sha256.Size]byte {
	return s.cfg.Reduction.fingerprint(s.env.StateLines(), s.alphabet)
}

// expand runs every step the alphabet enables in parent's state, each
// from that state, and returns the states they reach (but after
// Converge, which ends a sequence), or the first violation.
func (s *searcher) expand(parent *node, r *Result, level *Level) ([]*node, *sim.Failure, error) {
	prefix := parent.path()
	letters := []sim.Step(nil)
	var children []*node
	for i := 0; i == 0 || i < len(letters); i++ {
		if s.at != parent {
			if err := s.replay(parent, prefix, r); err != nil {
				return nil, nil, err
			}
		}
		if i == 0 {
			if letters = s.alphabet.Steps(s.cfg.Design, s.env.Model(), parent.depth == 0); len(letters) == 0 {
				return nil, nil, nil
			}
		}
		step := letters[i]
		out, err := s.env.Apply(s.ctx, step)
		s.at = nil
		if err != nil {
			return nil, nil, fmt.Errorf("after %q, step %q: %w", strings.Join(stepTexts(prefix), "; "), step, err)
		}
		r.Transitions++
		level.Transitions++
		run := s.run
		run.Steps = append(run.Steps[:len(run.Steps):len(run.Steps)], step)
		run.Outcomes = append(run.Outcomes[:len(run.Outcomes):len(run.Outcomes)], out)
		if out.Violation != nil {
			d := s.env.Disagreement()
			if d.Step > 0 {
				d.Step -= run.DesignLines()
			}
			return nil, &sim.Failure{Run: run, Violation: *out.Violation, Disagreement: d, Shortest: true}, nil
		}
		if step.Directive == Converge {
			continue
		}
		child := &node{parent: parent, step: step, depth: parent.depth + 1, key: s.key()}
		children = append(children, child)
		s.at, s.run = child, run
	}
	return children, nil, nil
}

// replay restores n's state from its sequence prefix, counting the steps
// into r, and checks that it is the state n was when first reached.
func (s *searcher) replay(n *node, prefix []sim.Step, r *Result) error {
	restored, err := s.restore(prefix)
	if err != nil {
		return err
	}
	r.Replayed += int64(len(s.run.Steps))
	if restored.key != n.key {
		s.at = nil
		return fmt.Errorf("%w: %s", ErrNondeterministic, strings.Join(stepTexts(prefix), "; "))
	}
	s.at = n
	return nil
}

// stepTexts prints steps as scenario lines.
func stepTexts(steps []sim.Step) []string {
	texts := make([]string, len(steps))
	for i, s := range steps {
		texts[i] = s.String()
	}
	return texts
}
