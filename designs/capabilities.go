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
	// Time: rows carry times from system.Options.Harness.Now (created,
	// next attempt, first claim); a transient failure backs off. The
	// harness moves the clock (tick) and draws options of backoff.
	Time bool
	// TimeBudget (needs Time): MaxAge blocks a row too old to send (last
	// error deadline). The harness draws options of time budget.
	TimeBudget bool
	// Leases (needs Time): a claim leases its row until now + Lease; other
	// workers skip a leased row until the lease runs out, and a settle
	// after another claim of the row writes nothing (ResultStale). The
	// harness draws options of lease and send timeout and ticks past
	// leases, and judges every settle by the claims it saw (invariant 8).
	Leases bool
	// Workers (needs Leases): several workers claim, send and settle at
	// once (Phases), and one may crash alone. The harness interleaves
	// the phases of named workers.
	Workers bool
	// Pipeline (needs Workers): a worker can run pipelined, sending one
	// row while it records the answer before and claims the row after
	// (Pipeliner), as handoff work runs. The harness draws pipelined
	// workers' calls, slow answers and crashes in their background.
	Pipeline bool
	// PipelineOneCommit (needs Pipeline): a pipelined worker records the
	// last answer and claims the row after in one write transaction, as
	// system.Pipeline does, so that a crash after the recording comes
	// after the claim ahead too. Without it the two commit apart.
	PipelineOneCommit bool
	// Operator (needs Time): a person requeues or reconciles a row, with
	// an audit log, and asks what is stale (Operator).
	Operator bool
	// Retention (needs Time): the app honours a receiver that forgets
	// keys (system.Options.Retention): no claim that leads to a send at or
	// after first_claimed_at + retention - send timeout. The harness draws
	// receivers with a retention window and compares first_claimed_at.
	Retention bool

	// RestartReleases (needs Leases): a worker that starts again after a
	// crash first releases the leases held under its name, at once, as
	// the spec's workers do (Leaser). Without it, a dead worker's leases
	// run out, as a queue's visibility timeout does.
	RestartReleases bool
	// Fences (needs Leases): the rows show a fence (system.Row.Fence)
	// counted as the spec counts it (one more at every claim, release and
	// operator action), which the harness compares with the model's.
	// Without it the harness judges stale settles by their answers alone.
	Fences bool
	// Holders (needs Leases): the rows show who holds their lease and
	// until when (system.Row.LeaseOwner, LeaseUntil), compared with the
	// model's, and a sent or blocked row holds none (invariant 9).
	Holders bool
	// DueFirst (needs Time): a claim takes the row due first (the
	// earliest next attempt, then the oldest), as a queue ordered by its
	// scheduled time does, where the spec's take the oldest eligible row.
	DueFirst bool
}

// Everything is every capability that adds checks. The real design has
// them all, and PipelineOneCommit besides (see Handoff): like DueFirst, it
// says how a design behaves, not what more the harness checks.
var Everything = Capabilities{Time: true, TimeBudget: true, Leases: true, Workers: true, Pipeline: true, Operator: true,
	Retention: true, RestartReleases: true, Fences: true, Holders: true}

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
		"backoff (invariant 10), the times rows carry, and convergence once time passes (invariant 12)"},
	{"TimeBudget", func(c Capabilities) bool { return c.TimeBudget }, "Time",
		"the time budget: a row too old to send blocks (deadline)"},
	{"Leases", func(c Capabilities) bool { return c.Leases }, "Time",
		"leases and stale settles (invariant 8), and a short lease, a send timeout and time past a lease"},
	{"Workers", func(c Capabilities) bool { return c.Workers }, "Leases",
		"several workers at once: interleaved claims, sends and settles, a stale settle, a worker that crashes alone"},
	{"Pipeline", func(c Capabilities) bool { return c.Pipeline }, "Workers",
		"a pipelined worker: its claims ahead, its send window after a slow answer, and a crash while it records or claims ahead"},
	{"PipelineOneCommit", func(c Capabilities) bool { return c.PipelineOneCommit }, "Pipeline", ""}, // when a crash strikes: nothing unchecked
	{"Operator", func(c Capabilities) bool { return c.Operator }, "Time",
		"a person's requeue and reconcile, the audit log, and what is stale"},
	{"Retention", func(c Capabilities) bool { return c.Retention }, "Time",
		"a receiver that forgets keys: no late claim (invariant 11), and first_claimed_at"},
	{"RestartReleases", func(c Capabilities) bool { return c.RestartReleases }, "Leases",
		"that a worker starting again releases its leases at once (the harness lets them run out instead)"},
	{"Fences", func(c Capabilities) bool { return c.Fences }, "Leases",
		"the rows' fences (stale settles are still judged by their answers)"},
	{"Holders", func(c Capabilities) bool { return c.Holders }, "Leases",
		"who holds each lease and until when, and that sent and blocked rows hold none (invariant 9)"},
	{"DueFirst", func(c Capabilities) bool { return c.DueFirst }, "Time", ""}, // how it orders claims: nothing unchecked
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
		if !k.has(c) && k.unchecked != "" {
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
