package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/outboxlab/handoff/internal/backend"
)

// ErrOtherBackend is returned, wrapped with its reason, by a scenario
// whose backend line names the backend the Env does not run: a scenario
// of a fault that only the other backend has. It is no failure: a replay
// reports the file as not applicable and goes on.
var ErrOtherBackend = errors.New("handoff: not applicable on this backend")

// backendLines say what a backend line runs on, on its own backend.
var backendLines = map[backend.Backend]string{
	backend.SQLite:   "the scenario needs the app database in a SQLite file",
	backend.Postgres: "the scenario needs the app database in PostgreSQL",
}

// backend says that the scenario runs on one backend only, before every
// step but design, config and transport: on the other, the replay stops
// there with ErrOtherBackend.
//
//	backend name=sqlite
func (e *Env) backend(_ context.Context, s Step) (stepResult, error) {
	if e.started {
		return stepResult{}, fmt.Errorf("%w: backend comes before every step but design, config and transport", ErrScenario)
	}
	name, _ := s.Arg("name")
	b, err := backend.Parse(name)
	if err != nil {
		return stepResult{}, fmt.Errorf("%w: %v", ErrScenario, err)
	}
	if b != e.cfg.Backend {
		return stepResult{}, fmt.Errorf("%w: the scenario runs on %s only; here the app database is on %s", ErrOtherBackend, b, e.cfg.Backend)
	}
	return stepResult{line: fmt.Sprintf("backend %s: %s", b, backendLines[b]), got: Answer{Kind: OnBackend}, want: Answer{Kind: OnBackend}}, nil
}
