package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
)

// ErrUnsupported is a step that needs a capability the Env's design does
// not declare (see designs.Capabilities): a scenario with it does not
// apply to the design. Such an error is an ErrScenario too: the scenario
// cannot run.
var ErrUnsupported = errors.New("handoff: the design does not support the step")

// unsupportedError is an ErrUnsupported error: why the design does not
// support the step.
type unsupportedError struct{ why string }

func (e *unsupportedError) Error() string { return "handoff: " + e.why }

// Is makes an unsupportedError both ErrUnsupported and ErrScenario.
func (e *unsupportedError) Is(target error) bool {
	return target == ErrUnsupported || target == ErrScenario
}

// unsupported returns the ErrUnsupported error that says why.
func unsupported(format string, args ...any) error {
	return &unsupportedError{fmt.Sprintf(format, args...)}
}

// need is one capability a step may need: its name in
// designs.Capabilities, and whether a design's capabilities hold it.
type need struct {
	name string
	has  func(designs.Capabilities) bool
}

// The capabilities steps need.
var (
	needTime      = need{"Time", func(c designs.Capabilities) bool { return c.Time }}
	needBudget    = need{"TimeBudget", func(c designs.Capabilities) bool { return c.TimeBudget }}
	needLeases    = need{"Leases", func(c designs.Capabilities) bool { return c.Leases }}
	needWorkers   = need{"Workers", func(c designs.Capabilities) bool { return c.Workers }}
	needPipeline  = need{"Pipeline", func(c designs.Capabilities) bool { return c.Pipeline }}
	needOperator  = need{"Operator", func(c designs.Capabilities) bool { return c.Operator }}
	needRetention = need{"Retention", func(c designs.Capabilities) bool { return c.Retention }}
)

// configNeeds is the capability each option of a config step needs,
// where it needs one.
var configNeeds = map[string]need{
	"lease": needLeases, "send-timeout": needLeases, "backoff-base": needTime, "backoff-cap": needTime,
	"max-age": needBudget, "retention": needRetention,
}

// needed is a capability a step needs, and what of the step needs it: its
// directive, or one of a config step's options.
type needed struct {
	what string
	need
}

// needs returns the capabilities step s needs, in the order of its
// directive then its options.
func needs(s Step) []needed {
	var ns []needed
	if n := directives[s.Directive].needs; n.name != "" {
		ns = append(ns, needed{s.Directive, n})
	}
	if s.Directive == "config" {
		for _, a := range s.Args {
			if n, ok := configNeeds[a.Key]; ok {
				ns = append(ns, needed{"config " + a.Key, n})
			}
		}
	}
	return ns
}

// Supported reports whether design d supports step s: an ErrUnsupported
// error that names the capability s needs, a transport d cannot run over
// (see CheckTransport), or the fault of a database that d does not take
// (see takesDatabaseFaults); or nil.
func Supported(d designs.Design, s Step) error {
	for _, n := range needs(s) {
		if !n.has(d.Supports) {
			return unsupported("design %s does not support %s: it needs capability %s", d.Name, n.what, n.name)
		}
	}
	if v, ok := s.Arg("name"); ok && s.Directive == "transport" {
		if err := CheckTransport(d, Transport(v)); err != nil {
			return unsupported("%s", strings.TrimPrefix(err.Error(), "handoff: "))
		}
	}
	if v, ok := s.Arg("fault"); ok && !TakesDatabaseFaults(d) {
		if k, err := faults.ParseKind(v, faults.DatabaseKinds...); err == nil {
			return unsupported("design %s does not support %s fault=%s: the harness holds the databases of the real design only", d.Name, s.Directive, k)
		}
	}
	return nil
}

// shown is o as design d shows it: without the times of a design without
// Time, the first claims of one without Retention, the lease holders of
// one without Holders and the fences of one without Fences (Leases is
// needed for both). The model's predictions are compared the same way, so
// that a design is held to what it declares.
func shown(d designs.Design, o model.Observation) model.Observation {
	c := d.Supports
	if c.Time && c.Retention && c.Leases && c.Holders && c.Fences {
		return o
	}
	o.Outbox = slices.Clone(o.Outbox)
	for i, r := range o.Outbox {
		if !c.Time {
			r.CreatedAt, r.NextAttemptAt = 0, 0
		}
		if !c.Time || !c.Retention {
			r.FirstClaimedAt = 0
		}
		if !c.Leases || !c.Holders {
			r.LeaseOwner, r.LeaseUntil = "", 0
		}
		if !c.Leases || !c.Fences {
			r.Fence = 0
		}
		o.Outbox[i] = r
	}
	return o
}

// TakesDatabaseFaults reports whether design d takes faults of the
// databases: only the real design does. A fragile design's shortcut
// writes with SQL of its own, whose errors package system does not
// classify, so that a busy or full database would catch that, not the
// shortcut.
func TakesDatabaseFaults(d designs.Design) bool {
	return d.Name == designs.Handoff.Name
}

// ScenarioSupported reports the first step of sc that d does not
// support, as an ErrUnsupported error, or nil.
func ScenarioSupported(d designs.Design, sc Scenario) error {
	for _, c := range sc.Cases {
		if err := Supported(d, c.Step); err != nil {
			return fmt.Errorf("%s:%d: %w", sc.Name, c.Line, err)
		}
	}
	return nil
}
