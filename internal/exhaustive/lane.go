package exhaustive

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/sim"
)

// Lane expands states of a search, one at a time, on a pair of databases
// of its own: a lane in this process (NewLane), or one in a process of its
// own (internal/lanes).
type Lane interface {
	// Expand restores the state the sequence path reaches, checks that
	// its fingerprint is want (unless want is zero: the root, whose
	// fingerprint the search learns from it), and runs every step the
	// alphabet enables there, each from that state.
	Expand(path []sim.Step, want Fingerprint) (Expansion, error)
	// Close closes the lane's databases and removes them.
	Close() error
}

// Expansion is what expanding a state gave: its fingerprint, the states
// its steps reached, in the alphabet's order (none after Converge, which
// ends a sequence), or the first of its steps that broke an invariant;
// and the steps run from it and run again to restore it.
type Expansion struct {
	Key                   Fingerprint
	Children              []Child
	Failure               *sim.Failure
	Transitions, Replayed int64
}

// Child is a state an expansion reached: the step that reached it and its
// fingerprint.
type Child struct {
	Step sim.Step
	Key  Fingerprint
}

// LaneConfig says what a lane searches: the design, the alphabet, the
// reduction, and where it makes the folder of its databases.
type LaneConfig struct {
	Design    designs.Design
	Alphabet  Alphabet
	Reduction Reduction
	Dir       string
}

// NewLane opens a lane in this process: a pair of the design's databases
// in a new folder inside cfg.Dir, emptied to restore each state.
func NewLane(ctx context.Context, cfg LaneConfig) (Lane, error) {
	if cfg.Design.Name == "" {
		cfg.Design = designs.Handoff
	}
	cfg.Alphabet = cfg.Alphabet.orDefault()
	env, done, err := sim.NewEnvIn(context.WithoutCancel(ctx), sim.EnvOptions{Dir: cfg.Dir, Design: cfg.Design, Renewable: true})
	if err != nil {
		return nil, err
	}
	return &searcher{ctx: context.WithoutCancel(ctx), cfg: cfg, env: env, done: done}, nil
}

// searcher is NewLane's Lane.
type searcher struct {
	ctx  context.Context
	cfg  LaneConfig
	env  *sim.Env
	done func()
	// at is the sequence whose state the Env holds, held says whether it
	// holds one, and run is the run that brought it there, the design
	// line first.
	at   []sim.Step
	held bool
	run  sim.Run
}

// Close closes the lane's databases and removes their folder.
func (s *searcher) Close() error {
	s.done()
	return nil
}

// restore brings the Env to the state of the sequence steps, from empty
// databases, and returns that state's fingerprint.
func (s *searcher) restore(steps []sim.Step) (Fingerprint, error) {
	s.held = false
	if err := s.env.Renew(s.ctx); err != nil {
		return Fingerprint{}, err
	}
	run := sim.Run{Design: s.cfg.Design.Name}
	all := steps
	if s.cfg.Design.Name != designs.Handoff.Name {
		all = append([]sim.Step{sim.NewStep("design", "name", s.cfg.Design.Name)}, steps...)
	}
	for i, step := range all {
		out, err := s.env.Apply(s.ctx, step)
		if err != nil {
			return Fingerprint{}, fmt.Errorf("step %d %q: %w", i+1, step, err)
		}
		run.Steps, run.Outcomes = append(run.Steps, step), append(run.Outcomes, out)
	}
	s.at, s.held, s.run = steps, true, run
	return s.key(), nil
}

// key is the fingerprint of the Env's state under the search's
// reduction.
func (s *searcher) key() Fingerprint {
	return s.cfg.Reduction.fingerprint(s.env.StateLines(), s.cfg.Alphabet)
}

// holds reports whether the Env holds the state of the sequence path.
func (s *searcher) holds(path []sim.Step) bool {
	return s.held && slices.EqualFunc(s.at, path, func(a, b sim.Step) bool { return a.String() == b.String() })
}

// Expand runs every step the alphabet enables in the state path reaches,
// each from that state (see Lane).
func (s *searcher) Expand(path []sim.Step, want Fingerprint) (Expansion, error) {
	var e Expansion
	var letters []sim.Step
	for i := 0; i == 0 || i < len(letters); i++ {
		if !s.holds(path) {
			key, err := s.restore(path)
			if err != nil {
				return e, err
			}
			e.Replayed += int64(len(s.run.Steps))
			if e.Key = key; want != (Fingerprint{}) && key != want {
				s.held = false
				return e, fmt.Errorf("%w: %s", ErrNondeterministic, strings.Join(stepTexts(path), "; "))
			}
		} else if i == 0 {
			e.Key = s.key()
		}
		if i == 0 {
			if letters = s.cfg.Alphabet.Steps(s.cfg.Design, s.env.Model(), len(path) == 0); len(letters) == 0 {
				return e, nil
			}
		}
		step := letters[i]
		out, err := s.env.Apply(s.ctx, step)
		s.held = false
		if err != nil {
			return e, fmt.Errorf("after %q, step %q: %w", strings.Join(stepTexts(path), "; "), step, err)
		}
		e.Transitions++
		run := s.run
		run.Steps = append(run.Steps[:len(run.Steps):len(run.Steps)], step)
		run.Outcomes = append(run.Outcomes[:len(run.Outcomes):len(run.Outcomes)], out)
		if out.Violation != nil {
			d := s.env.Disagreement()
			if d.Step > 0 {
				d.Step -= run.DesignLines()
			}
			e.Failure = &sim.Failure{Run: run, Violation: *out.Violation, Disagreement: d, Shortest: true}
			return e, nil
		}
		if step.Directive == Converge {
			continue
		}
		child := Child{Step: step, Key: s.key()}
		e.Children = append(e.Children, child)
		s.at, s.held, s.run = append(path[:len(path):len(path)], step), true, run
	}
	return e, nil
}
