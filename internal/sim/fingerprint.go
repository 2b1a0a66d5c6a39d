package sim

import (
	"fmt"
	"slices"
)

// StateLines returns, as sorted lines of text, everything that decides
// what the Env's next steps do and what they are checked against: the
// model's state, the system's observation after the last step (the whole
// app database and the receiver's tasks, as the invariants see them), and
// what the harness keeps beside them (the sends it counted per key, the
// fences a person's actions left, each named worker's claim and what its
// send heard, the jitter the next backoff draws, the systems' clock,
// whether the sequence has started). Two runs with the same lines are in
// the same state as far as the harness can tell, so that an exhaustive
// search expands only one of them.
//
// Every entry of a map is a line of its own and the lines are sorted, so
// that their order says nothing; a slice (the outbox rows, in the order
// they were recorded) stays within one line, in its order. A search that
// renames keys or workers in the lines and sorts them again gets the
// lines of the renamed state.
//
// What a design keeps in memory beyond that (a pipelined worker's
// window, say) is not there: it is taken to follow from the rest, as the
// model's prediction of it does.
func (e *Env) StateLines() []string {
	m := e.model
	lines := []string{
		fmt.Sprintf("config %#v", m.Config),
		fmt.Sprintf("model approvals %#v", m.Approvals),
		fmt.Sprintf("model outbox %#v", m.Outbox),
		fmt.Sprintf("model tasks %#v", m.Tasks),
		fmt.Sprintf("model now %d audit %#v", m.Now, m.Audit),
		fmt.Sprintf("observed approvals %#v", e.before.Approvals),
		fmt.Sprintf("observed outbox %#v", e.before.Outbox),
		fmt.Sprintf("observed tasks %#v", e.before.Tasks),
		fmt.Sprintf("started %t jitter %d clock %d", e.started, e.jitter, e.now),
	}
	for name, c := range m.Claims {
		lines = append(lines, fmt.Sprintf("model claim %q %#v", name, c))
	}
	for name, p := range m.Pipes {
		lines = append(lines, fmt.Sprintf("model pipe %q fast %t idle %t ahead %s ready %s", name, p.Fast, p.Idle, pointed(p.Ahead), pointed(p.Ready)))
	}
	for key, mem := range m.Memory {
		lines = append(lines, fmt.Sprintf("model memory %q %#v", key, mem))
	}
	for key, n := range e.sends {
		lines = append(lines, fmt.Sprintf("sends %q %d", key, n))
	}
	for key, fence := range e.actedFence {
		lines = append(lines, fmt.Sprintf("acted %q %d", key, fence))
	}
	for name, w := range e.workers {
		line := fmt.Sprintf("worker %q heard %t task %d error %v pipe %t", name, w.heard, w.taskID, w.sendErr, w.pipe != nil)
		if c := w.claim; c != nil {
			line += fmt.Sprintf(" claim %d %q %q attempt %d fence %d send-by %d took-over %q",
				c.Seq, c.Key, c.Payload, c.Attempt, c.Fence, c.SendBy.UnixMilli(), c.TookOver)
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	return lines
}

// pointed prints what p points to, or nil: never the address, which
// differs from run to run.
func pointed[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprintf("%#v", *p)
}
