package exhaustive

import (
	"slices"
	"strconv"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/model"
)

// Alphabet is the bounded set of steps the search draws from, built from
// the scenario language: the steps it enables in a state are every one
// of its letters that the design supports and that fits the state (a
// named worker's next phase, a person's repair of a row that needs one).
// The zero Alphabet means DefaultAlphabet.
type Alphabet struct {
	// Cases are the case ids approved: two by default, so that keys can
	// be interleaved but the state space stays small.
	Cases []string
	// Workers are the named workers beside the default one (deliver,
	// converge): A and B by default, and Pipelined for a design whose
	// workers run pipelined.
	Workers []string
	// Configs are the options a sequence may start with, besides none.
	Configs []sim.Step
}

// Pipelined is the name of the pipelined worker, as the random search
// names it.
const Pipelined = "P"

// The letters the default alphabet is made of.
var (
	defaultCases   = []string{"case-1", "case-2"}
	defaultWorkers = []string{"A", "B", Pipelined}
	// defaultConfigs turn on, one at a time, what the default options
	// leave off: a receiver that forgets keys, backoff, a time budget.
	defaultConfigs = []sim.Step{
		sim.NewStep("config", "retention", "60000"),
		sim.NewStep("config", "backoff-base", "1000", "backoff-cap", "8000"),
		sim.NewStep("config", "max-age", "90000"),
	}
	// titles are the two contents an approval carries: the same case
	// approved again with the other is a conflict.
	titles = []string{"Call back", "Rappeler le client"}
	// throttleHint is the retry hint of a throttled send, longer than the
	// backoff so that it decides the next attempt.
	throttleHint = "20000"
)

// DefaultAlphabet is the alphabet of the search when none is given: two
// cases, workers A, B and P, and the three configs.
func DefaultAlphabet() Alphabet {
	return Alphabet{Cases: defaultCases, Workers: defaultWorkers, Configs: defaultConfigs}
}

// orDefault returns a, or DefaultAlphabet when a has no case: the zero
// Alphabet. (Any other alphabet is taken as it is: no workers, or no
// configs, mean none.)
func (a Alphabet) orDefault() Alphabet {
	if len(a.Cases) == 0 {
		return DefaultAlphabet()
	}
	return a
}

// Steps returns every step of the alphabet that design d supports and
// that fits model state m, in a fixed order: config (only as the first
// step), approvals, deliveries, restart, converge, ticks, each named
// worker's next phase or crash, a person's repairs. Every fault of the
// fault table that the step takes and that runs on SQLite in process is
// a letter of its own.
func (a Alphabet) Steps(d designs.Design, m model.State, first bool) []sim.Step {
	var steps []sim.Step
	add := func(s sim.Step) {
		if sim.Supported(d, s) == nil {
			steps = append(steps, s)
		}
	}
	if first {
		for _, c := range a.Configs {
			add(c)
		}
	}
	for _, c := range a.Cases {
		for _, title := range titles {
			add(sim.NewStep("approve", "case", c, "title", title))
		}
		for _, k := range runnable("approve") {
			add(sim.NewStep("approve", "case", c, "title", titles[0], "fault", k.String()))
		}
	}
	add(sim.NewStep("deliver"))
	for _, k := range runnable("deliver") {
		add(sim.NewStep("deliver", "fault", k.String()))
	}
	add(sim.NewStep("restart"))
	add(sim.NewStep(Converge))
	for _, ms := range boundaries(m) {
		add(sim.NewStep("tick", "ms", strconv.FormatInt(ms, 10)))
	}
	for _, w := range a.Workers {
		if w == Pipelined {
			a.pipelined(m, add)
			continue
		}
		phase(w, m, add)
	}
	a.repairs(m, add)
	return steps
}

// Converge is the directive that ends a sequence: faults off, time past
// every lease and backoff, the default worker delivers until idle. The
// search checks it from every state, as the random search ends every
// sequence with it, and expands nothing after it.
const Converge = "converge"

// runnable are the faults directive takes that run on SQLite in process.
func runnable(directive string) []faults.Kind {
	var ks []faults.Kind
	for _, k := range sim.FaultsOf(directive) {
		if sim.RunsOn(k, backend.SQLite) && !sim.HTTPOnly(k) {
			ks = append(ks, k)
		}
	}
	return ks
}

// boundaries are the ticks of the clock in state m: the lease, the
// backoff cap (with backoff on), just past the retention and just past
// the time budget (when the options set them), the way the random
// search's ticks pass them; each once, shortest first.
func boundaries(m model.State) []int64 {
	ticks := []int64{m.Lease}
	if m.BackoffBase > 0 {
		ticks = append(ticks, m.BackoffCap)
	}
	if m.Retention > 0 {
		ticks = append(ticks, m.Retention+1000)
	}
	if m.MaxAge > 0 {
		ticks = append(ticks, m.MaxAge+5000)
	}
	slices.Sort(ticks)
	return slices.Compact(ticks)
}

// phase adds named worker w's next phase in state m: a claim when it
// holds none, the send of what it claimed (plain, and with each fault),
// or the settle of what its send heard (plain, and with each fault; a
// transient failure waits the longest backoff its attempt may draw); and,
// while it holds a claim, its crash.
func phase(w string, m model.State, add func(sim.Step)) {
	c, holds := m.Claims[w]
	switch {
	case !holds:
		add(sim.NewStep("claim", "worker", w))
		for _, k := range runnable("claim") {
			add(sim.NewStep("claim", "worker", w, "fault", k.String()))
		}
		return
	case c.Heard == "":
		add(sim.NewStep("send", "worker", w))
		for _, k := range runnable("send") {
			s := sim.NewStep("send", "worker", w, "fault", k.String())
			if k == faults.Throttled {
				s = s.With("retry-after", throttleHint)
			}
			add(s)
		}
	default:
		settle := sim.NewStep("settle", "worker", w)
		if ceiling := m.JitterCeiling(c.Attempt); c.Heard == model.ResultTransient && ceiling > 0 {
			settle = settle.With("jitter", strconv.FormatInt(ceiling, 10))
		}
		add(settle)
		for _, k := range runnable("settle") {
			add(settle.With("fault", k.String()))
		}
	}
	add(sim.NewStep("crash", "worker", w))
}

// pipelined adds the pipelined worker's calls in state m: Next plain,
// slow (past half the send timeout, which stops its claiming ahead, and
// past the whole of it) and with each fault; Flush plain and with each
// fault; and, while it holds something, its crash.
func (a Alphabet) pipelined(m model.State, add func(sim.Step)) {
	pipe := sim.NewStep("pipe", "worker", Pipelined)
	flush := sim.NewStep("flush", "worker", Pipelined)
	if c, ok := m.Claims[Pipelined]; ok && c.Heard == model.ResultTransient {
		if ceiling := m.JitterCeiling(c.Attempt); ceiling > 0 {
			pipe = pipe.With("jitter", strconv.FormatInt(ceiling, 10))
			flush = flush.With("jitter", strconv.FormatInt(ceiling, 10))
		}
	}
	add(pipe)
	add(pipe.With("slow", strconv.FormatInt(m.SendTimeout/2+1, 10)))
	add(pipe.With("slow", strconv.FormatInt(m.SendTimeout+1, 10)))
	for _, k := range runnable("pipe") {
		add(pipe.With("fault", k.String()))
	}
	add(flush)
	for _, k := range runnable("flush") {
		add(flush.With("fault", k.String()))
	}
	_, claims := m.Claims[Pipelined]
	_, pipes := m.Pipes[Pipelined]
	if claims || pipes {
		add(sim.NewStep("crash", "worker", Pipelined))
	}
}

// repairs adds a person's repairs in state m, as the random search draws
// them, truthful: for a case whose row is blocked, its requeue; for one
// whose row is blocked, or pending with no live lease, its reconcile with
// the task the receiver holds for its key and payload, or as absent when
// it holds none (only a requeue when it holds the key with other
// content); and a person asking what is stale.
func (a Alphabet) repairs(m model.State, add func(sim.Step)) {
	for _, c := range a.Cases {
		key := model.KeyPrefix + c
		i := slices.IndexFunc(m.Outbox, func(r model.Row) bool { return r.Key == key })
		if i < 0 {
			continue
		}
		r := m.Outbox[i]
		if r.State == model.Blocked {
			add(sim.NewStep("requeue", "case", c))
		}
		if r.State != model.Blocked && (r.State != model.Pending || r.LeaseOwner != "" && r.LeaseUntil > m.Now) {
			continue
		}
		if reconcile, ok := truthfulReconcile(m, c, key); ok {
			add(reconcile)
		}
	}
	add(sim.NewStep("stale", "older-than", "0"))
}

// truthfulReconcile is the reconcile of case c (key key) that tells the
// truth in state m: with the id of the task the receiver holds for the
// key and its payload, or as absent when it holds none; false when it
// holds the key with other content.
func truthfulReconcile(m model.State, c, key string) (sim.Step, bool) {
	payload := ""
	for _, ap := range m.Approvals {
		if ap.Key == key {
			payload = ap.Payload
		}
	}
	for _, task := range m.Tasks {
		switch {
		case task.Key == key && task.Payload == payload:
			return sim.NewStep("reconcile", "case", c, "remote-id", strconv.FormatInt(task.ID, 10)), true
		case task.Key == key:
			return sim.Step{}, false
		}
	}
	return sim.NewStep("reconcile", "case", c, "absent", "true"), true
}

// Letters is an alphabet as a design runs it, for a summary: what of the
// alphabet the design supports.
type Letters struct {
	Cases   []string `json:"cases"`
	Workers []string `json:"workers"`
	// Configs are the options a sequence may start with, besides none.
	Configs []string `json:"configs"`
	// Directives are the directives drawn, and Faults every fault one of
	// them carries.
	Directives []string `json:"directives"`
	Faults     []string `json:"faults"`
	// Ticks say where the clock moves to.
	Ticks string `json:"ticks"`
}

// alphabetDirectives are the directives an alphabet draws, in the order
// Steps adds them.
var alphabetDirectives = []string{"approve", "deliver", "restart", Converge, "tick", "claim", "send", "settle", "crash", "pipe", "flush", "requeue", "reconcile", "stale"}

// Letters says what of alphabet a design d runs: the directives it
// supports and every fault of theirs it takes (on SQLite, in process).
func (a Alphabet) Letters(d designs.Design) Letters {
	a = a.orDefault()
	l := Letters{Cases: a.Cases, Workers: []string{}, Configs: []string{}, Faults: []string{}, Ticks: "the lease, the backoff cap, just past the retention, just past the time budget (those the options set)"}
	for _, w := range a.Workers {
		directive := "claim"
		if w == Pipelined {
			directive = "pipe"
		}
		if sim.Supported(d, sim.NewStep(directive)) == nil {
			l.Workers = append(l.Workers, w)
		}
	}
	for _, c := range a.Configs {
		if sim.Supported(d, c) == nil {
			l.Configs = append(l.Configs, c.String())
		}
	}
	phased := slices.ContainsFunc(l.Workers, func(w string) bool { return w != Pipelined })
	needs := map[string]bool{"claim": phased, "send": phased, "settle": phased, "crash": len(l.Workers) > 0,
		"pipe": slices.Contains(l.Workers, Pipelined), "flush": slices.Contains(l.Workers, Pipelined)}
	for _, directive := range alphabetDirectives {
		if has, ok := needs[directive]; ok && !has || sim.Supported(d, sim.NewStep(directive)) != nil {
			continue
		}
		l.Directives = append(l.Directives, directive)
		for _, k := range runnable(directive) {
			if sim.Supported(d, sim.NewStep(directive, "fault", k.String())) == nil && !slices.Contains(l.Faults, k.String()) {
				l.Faults = append(l.Faults, k.String())
			}
		}
	}
	if !slices.Contains(l.Directives, "tick") {
		l.Ticks = "none: the design has no clock"
	}
	return l
}

// phasedWorkers are a's named workers but the pipelined one.
func (a Alphabet) phasedWorkers() []string {
	var ws []string
	for _, w := range a.Workers {
		if w != Pipelined {
			ws = append(ws, w)
		}
	}
	return ws
}
