package faults

import (
	"fmt"

	"github.com/outboxlab/handoff/system"
)

// Injector crashes the handoff at a fault point. Hook is what the system is
// opened with; Arm and CrashAtPass say where the next crash strikes. It
// keeps every point passed, in order, so that a run can be repeated with a
// crash at each.
type Injector struct {
	armed   system.FaultPoint
	crashAt int // the pass (1-based, over the Injector's life) to crash at; 0 for none
	trace   []system.FaultPoint
	crashed system.FaultPoint
}

// Hook returns the system.Hook that reports passes to in.
func (in *Injector) Hook() system.Hook { return in.pass }

func (in *Injector) pass(p system.FaultPoint) error {
	in.trace = append(in.trace, p)
	if p == in.armed || len(in.trace) == in.crashAt {
		in.armed, in.crashAt = "", 0
		in.crashed = p
		return fmt.Errorf("%w at %s", ErrCrash, p)
	}
	return nil
}

// Arm makes the next pass of p crash; "" disarms.
func (in *Injector) Arm(p system.FaultPoint) { in.armed = p }

// CrashAtPass makes the n-th pass (counted from the Injector's start, 1
// based) crash, whatever its point.
func (in *Injector) CrashAtPass(n int) { in.crashAt = n }

// Trace returns the fault points passed so far, in order.
func (in *Injector) Trace() []system.FaultPoint { return append([]system.FaultPoint(nil), in.trace...) }

// Crashed returns the point of the last crash and forgets it; "" if there
// was none since the last call.
func (in *Injector) Crashed() system.FaultPoint {
	p := in.crashed
	in.crashed = ""
	return p
}
