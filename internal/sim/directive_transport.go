package sim

import (
	"context"
	"fmt"
)

// transportLines say what each transport carries, for a transport step.
var transportLines = map[Transport]string{
	InProcess: "the worker calls the CRM in process",
	HTTP:      "the worker sends with crm.Sender through a fault proxy to crm.Server serving the CRM file",
}

// transport carries the worker's requests over another transport from
// now on, before every step but design and config. The databases stay
// as they are; over HTTP a restart restarts the server too.
//
//	transport name=http
func (e *Env) transport(_ context.Context, s Step) (stepResult, error) {
	if e.started {
		return stepResult{}, fmt.Errorf("%w: transport comes before every step but design and config", ErrScenario)
	}
	name, _ := s.Arg("name")
	t, err := ParseTransport(name)
	if err == nil {
		err = CheckTransport(e.cfg.Design, t)
	}
	if err != nil {
		return stepResult{}, fmt.Errorf("%w: %v", ErrScenario, err)
	}
	if t != e.cfg.Transport {
		crm, err := carry(e.crm, t)
		if err != nil {
			return stepResult{}, err
		}
		e.crm, e.cfg.Transport = crm, t
	}
	return stepResult{line: fmt.Sprintf("transport %s: %s", t, transportLines[t]), got: Answer{Kind: Transported}, want: Answer{Kind: Transported}}, nil
}
