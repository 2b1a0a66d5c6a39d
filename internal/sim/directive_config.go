package sim

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/outboxlab/handoff/model"
)

// configKeys are the options a config step sets, each in milliseconds but
// max-attempts.
var configKeys = []string{"lease", "send-timeout", "backoff-base", "backoff-cap", "max-age", "retention", "max-attempts"}

// config sets the scenario's options, before any step but design: the
// model starts afresh under them and every handle is one opened with them.
//
//	config lease=30000 send-timeout=10000 backoff-base=1000 backoff-cap=300000 max-age=0 retention=0 max-attempts=3
func (e *Env) config(ctx context.Context, s Step) (stepResult, error) {
	if e.started {
		return stepResult{}, fmt.Errorf("%w: config comes before every step but design", ErrScenario)
	}
	c := e.model.Config
	fields := map[string]*int64{"lease": &c.Lease, "send-timeout": &c.SendTimeout, "backoff-base": &c.BackoffBase,
		"backoff-cap": &c.BackoffCap, "max-age": &c.MaxAge, "retention": &c.Retention}
	for _, a := range s.Args {
		n, err := strconv.ParseInt(a.Value, 10, 64)
		if err != nil {
			return stepResult{}, fmt.Errorf("%w: config %s=%q is not a whole number", ErrScenario, a.Key, a.Value)
		}
		if n == 0 && (a.Key == "lease" || a.Key == "send-timeout" || a.Key == "backoff-cap") {
			// 0 in the system's Options means the default, not zero.
			return stepResult{}, fmt.Errorf("%w: config %s=0: give the option a positive value, or leave it out for the default", ErrScenario, a.Key)
		}
		if a.Key == "max-attempts" {
			c.MaxAttempts = int(n)
		} else {
			*fields[a.Key] = n
		}
	}
	next, err := model.Open(c)
	if err != nil {
		// Invalid options never reach a worker: system.Open refuses them
		// (system's tests show it), so a scenario cannot run with them.
		return stepResult{}, fmt.Errorf("%w: %v", ErrScenario, err)
	}
	// The handles opened with the options until now are set aside under
	// them, and the default worker and the CRM take handles with the new.
	if err := e.park(); err != nil {
		return stepResult{}, err
	}
	e.model = next
	if err := e.resume(ctx); err != nil {
		return stepResult{}, err
	}
	line := "configured: " + strings.TrimPrefix(s.String(), "config ")
	return stepResult{line: line, got: Answer{Kind: Configured}, want: Answer{Kind: Configured}}, nil
}
