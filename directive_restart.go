package handoff

import (
	"context"

	"github.com/outboxlab/handoff/faults"
)

// restartStep closes every database handle and reopens it from its file.
//
//	restart
func (e *Env) restartStep(ctx context.Context, s Step) (stepResult, error) {
	if err := s.only(); err != nil {
		return stepResult{}, err
	}
	if err := e.restart(ctx); err != nil {
		return stepResult{}, err
	}
	return stepResult{line: "restarted: every handle closed and reopened from its file", got: Answer{Kind: Restarted}, want: Answer{Kind: Restarted}, fired: faults.Restart}, nil
}
