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
	return &searcher{ctx: context.WithoutCancel(ctx), cfg: cfg, renamings: cfg.Reduction.renamings(cfg.Alphabet), env: env, done: done}, nil
}

// searcher is NewLane's Lane.
type searcher struct {
	ctx       context.Context
	cfg       LaneConfig
	renamings []renaming // the reduction's, on the alphabet
	env       *sim.Env
	done      func()
	// at is the sequence whose state the Env holds, held says whether it
	// holds one, run is the run that brought it there, the design line
	// first, and lines are that state's lines (sim.Env.StateLines);
	// skipped counts the steps the Env ran since its last restore that
	// left the state as it was, which run leaves out.
	at      []sim.Step
	held    bool
	run     sim.Run
	lines   []string
	skipped int
	// alwaysRestore restores the state before every step, even after a
	// step that left it as it was: what a test compares the shortcut with.
	alwaysRestore bool
}

// Close closes the lane's databases and removes their folder.
func (s *searcher) Close() error {
	s.done()
	return nil
}

// restore brings the Env to the state of the sequence steps, from empty
// databases.
func (s *searcher) restore(steps []sim.Step) error {
	s.held = false
	if err := s.env.Renew(s.ctx); err != nil {
		return err
	}
	run := sim.Run{Design: s.cfg.Design.Name}
	all := steps
	if s.cfg.Design.Name != designs.Handoff.Name {
		all = append([]sim.Step{sim.NewStep("design", "name", s.cfg.Design.Name)}, steps...)
	}
	for i, step := range all {
		out, err := s.env.Apply(s.ctx, step)
		if err != nil {
			return fmt.Errorf("step %d %q: %w", i+1, step, err)
		}
		run.Steps, run.Outcomes = append(run.Steps, step), append(run.Outcomes, out)
	}
	s.at, s.held, s.run, s.lines, s.skipped = steps, true, run, s.env.StateLines(), 0
	return nil
}

// key is the fingerprint of a state's lines under the search's
// reduction.
func (s *searcher) key(lines []string) Fingerprint {
	return fingerprint(lines, s.renamings)
}

// holds reports whether the Env holds the state of the sequence path.
func (s *searcher) holds(path []sim.Step) bool {
	return s.held && slices.EqualFunc(s.at, path, func(a, b sim.Step) bool { return a.String() == b.String() })
}

// Expand runs every step the alphabet enables in the state path reaches,
// each from that state (see Lane). A step that leaves every line of the
// state as it was leaves the Env in the state of path, as the search
// counts states, so the next step runs from there without a restore;
// any other step is followed by one.
func (s *searcher) Expand(path []sim.Step, want Fingerprint) (Expansion, error) {
	var e Expansion
	var letters []sim.Step
	for i := 0; i == 0 || i < len(letters); i++ {
		restored := !s.holds(path)
		if restored {
			if err := s.restore(path); err != nil {
				return e, err
			}
			e.Replayed += int64(len(s.run.Steps))
		}
		if restored || i == 0 {
			if e.Key = s.key(s.lines); want != (Fingerprint{}) && e.Key != want {
				s.held = false
				return e, fmt.Errorf("%w: %s", ErrNondeterministic, strings.Join(stepTexts(path), "; "))
			}
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
				d.Step -= run.DesignLines() + s.skipped
			}
			e.Failure = &sim.Failure{Run: run, Violation: *out.Violation, Disagreement: d, Shortest: true}
			return e, nil
		}
		if step.Directive == Converge {
			continue
		}
		lines := s.env.StateLines()
		e.Children = append(e.Children, Child{Step: step, Key: s.key(lines)})
		if !s.alwaysRestore && slices.Equal(lines, s.lines) {
			s.held = true // still path's state: the run that reached it stands
			s.skipped++
			continue
		}
		s.at, s.held, s.run, s.lines = append(path[:len(path):len(path)], step), true, run, lines
	}
	return e, nil
}
