package sim

import (
	"context"
	"fmt"
	"strconv"
)

// tick moves the virtual clock forward.
//
//	tick ms=30000
func (e *Env) tick(_ context.Context, s Step) (stepResult, error) {
	v, _ := s.Arg("ms")
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return stepResult{}, fmt.Errorf("%w: tick ms=%q, want a whole number of milliseconds, 0 or more", ErrScenario, v)
	}
	e.now += ms
	e.model, _ = e.model.Tick(ms)
	return stepResult{line: fmt.Sprintf("ticked %d ms: now %s", ms, e.clock().Format("15:04:05.000")), got: Answer{Kind: Ticked}, want: Answer{Kind: Ticked}}, nil
}
