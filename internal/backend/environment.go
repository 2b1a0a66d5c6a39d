package backend

import (
	"errors"
	"fmt"

	"github.com/outboxlab/handoff/system"
)

// ErrEnvironment marks a failure of what the harness runs on rather than
// of the design under test: a PostgreSQL server that took no connection
// within the wait (it was full, starting or not there), or a full disk
// under the run's folder. It proves nothing about the design; the run
// that meets it ends without a counterexample. It is here, beside where
// the harness's databases live, so that internal/cli, which both command
// lines link, tells it apart (exit status 4) without linking the harness.
var ErrEnvironment = errors.New("handoff: the environment failed, not the design")

// Environmental returns err marked ErrEnvironment when it is a failure of
// the environment (see ErrEnvironment), and err as it is otherwise.
func Environmental(err error) error {
	if err == nil || errors.Is(err, ErrEnvironment) {
		return err
	}
	switch system.Class(err) {
	case system.ErrUnavailable, system.ErrFull:
		return fmt.Errorf("%w: %w", ErrEnvironment, err)
	}
	return err
}
