package designs

import (
	"fmt"
	"strings"
)

// Capabilities say what a design does beyond the core every design has:
// one worker delivering one row at a time, without a clock. The harness
// draws steps only of what a design supports, and compares with the
// model only what it shows; Unchecked names the rest.
type Capabilities struct {
	// Time: rows carry times from system.Options.Now (created,
	// next attempt, first claim); a transient failure backs off; MaxAge
	// blocks an old row. The harness moves the clock (tick) and draws
	// options of backoff and time budget.
	Time bool
	// Leases (needs Time): a claim leases its row until now + Lease and
	// adds one to its fence; a worker that starts again releases its
	// leases (Leaser). The harness compares lease owners, lease ends and
	// fences, and draws options of lease and send timeout.
	Leases bool
	// Workers (needs Leases): several workers claim, send and settle at
	// once (Phases), and one may crash alone. The harness interleaves
	// the phases of named workers.
	Workers bool
	// Operator (needs Time): a person requeues or reconciles a row, with
	// an audit log, and asks what is stale (Operator).
	Operator bool
	// Retention (needs Time): the app honours a receiver that forgets
	// keys (system.Retainer): no claim that leads to a send at or after
	// first_claimed_at + retention - send timeout. The harness draws
	// receivers with a retention window.
	Retention bool
}

// Everything is every capability: what the real design supports.
var Everything = Capabilities{Time: true, Leases: true, Workers: true, Operator: true, Retention: true}

// capability is one capability: its name, whether c has it, what it
// needs, and the guarantees left unchecked without it.
type capability struct {
	name      string
	has       func(Capabilities) bool
	needs     string
	unchecked string
}

// capabilities are the Capabilities, in the order Check and Unchecked
// speak of them.
var capabilities = []capability{
	{"Time", func(c Capabilities) bool { return c.Time }, "",
		"backoff and the time budget (invariant 10), the times rows carry, and convergence once time passes (invariant 12)"},
	{"Leases", func(c Capabilities) bool { return c.Leases }, "Time",
		"leases and fences (invariants 8 and 9), and what a restart releases"},
	{"Workers", func(c Capabilities) bool { return c.Workers }, "Leases",
		"several workers at once: interleaved claims, sends and settles, a stale settle, a worker that crashes alone"},
	{"Operator", func(c Capabilities) bool { return c.Operator }, "Time",
		"a person's requeue and reconcile, the audit log, and what is stale"},
	{"Retention", func(c Capabilities) bool { return c.Retention }, "Time",
		"a receiver that forgets keys: no late claim (invariant 11)"},
}

// problems says, in one line, which capabilities of c need others that
// c lacks, directly or through another; "" when none does.
func (c Capabilities) problems() string {
	byName := map[string]capability{}
	for _, k := range capabilities {
		byName[k.name] = k
	}
	var ps []string
	for _, k := range capabilities {
		if !k.has(c) {
			continue
		}
		var missing []string
		for n := k.needs; n != ""; n = byName[n].needs {
			if !byName[n].has(c) {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			ps = append(ps, fmt.Sprintf("capability %s needs %s", k.name, strings.Join(missing, " and ")))
		}
	}
	return strings.Join(ps, "; ")
}

// Unchecked lists, for every capability c lacks, the guarantees of the spec
// that a run on such a design does not check.
func (c Capabilities) Unchecked() []string {
	var lines []string
	for _, k := range capabilities {
		if !k.has(c) {
			lines = append(lines, fmt.Sprintf("without %s: %s", k.name, k.unchecked))
		}
	}
	return lines
}

// String lists the capabilities c has, or says it has none.
func (c Capabilities) String() string {
	var names []string
	for _, k := range capabilities {
		if k.has(c) {
			names = append(names, k.name)
		}
	}
	if len(names) == 0 {
		return "one worker, no clock"
	}
	return strings.Join(names, ", ")
}
