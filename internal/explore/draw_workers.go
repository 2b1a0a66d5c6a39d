package explore

import (
	"strconv"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/model"
	"pgregory.net/rapid"
)

// namedWorkers are the workers a sequence interleaves, beside the default
// one that deliver and converge use: two most of the time, a third
// seldom, and, for a design whose workers run pipelined, P, pipelined
// (see drawPipe).
var namedWorkers = []string{"A", "B", "C", pipelined}

// pipelined is the name of the pipelined worker.
const pipelined = "P"

// configs are the options a sequence may start with (one in two does):
// the spec's defaults but for backoff, which scenarios turn off, then backoff
// on, a receiver that forgets keys, a time budget, a short lease, and
// attempt budgets other than three: two, and five with backoff. (A
// budget of one would let no-budget be caught in three steps, one fewer
// than its catalog entry and corpus file show.)
var configs = []sim.Step{
	sim.NewStep("config", "backoff-base", "1000", "backoff-cap", "8000"),
	sim.NewStep("config", "retention", "60000"),
	sim.NewStep("config", "max-age", "90000"),
	sim.NewStep("config", "lease", "5000", "send-timeout", "2000"),
	sim.NewStep("config", "retention", "45000", "backoff-base", "2000", "backoff-cap", "16000", "max-age", "120000"),
	sim.NewStep("config", "max-age", "40000", "lease", "20000", "send-timeout", "5000"),
	sim.NewStep("config", "max-attempts", "2", "lease", "5000", "send-timeout", "2000"),
	sim.NewStep("config", "max-attempts", "5", "backoff-base", "1000", "backoff-cap", "4000"),
}

// drawConfig draws the options a sequence starts with: none (the zero
// Step, where shrinking goes) one time in two.
func drawConfig(t *rapid.T) sim.Step {
	if pick(t, "config", 1, 1) == 0 {
		return sim.Step{}
	}
	return configs[pickOf(t, "which config", len(configs))]
}

// retryHints are the retry hints, in milliseconds, a throttled send
// draws: none, shorter and longer than a backoff. Over HTTP a Retry-After
// is whole seconds.
var retryHints = map[sim.Transport][]string{
	sim.InProcess: {"0", "1500", "20000"},
	sim.HTTP:      {"0", "2000", "20000"},
}

// answeredStatuses are the statuses a hop answers itself over HTTP: one
// of each class of the spec's sender table that the other faults do not
// draw (409 in flight, 422, 5xx without a hint, a redirect, 4xx).
var answeredStatuses = []string{"409", "500", "502", "504", "503", "422", "400", "401", "404", "413", "307", "301", "418"}

// drawPhase draws a named worker and its next phase: a claim when it holds
// none (on PostgreSQL, by default one time in sixteen with its commit
// lost), then the send of what it claimed (with a fault, some of the
// time), then the settle (with a jitter drawn within the backoff ceiling,
// and by default one time in sixteen a busy app database or, on
// PostgreSQL, a lost commit, for a design that takes them); or, one time
// in eight, its crash. Each fault weighs as m's level for it says, so that
// a swarm brings bursts of one fault to the workers' phases too (the
// faults m does not tune, throttled and refused, weigh as by default).
func (m mix) drawPhase(t *rapid.T, e *sim.Env) sim.Step {
	pipes := 0
	if sim.Supported(e.Design(), sim.NewStep("pipe")) == nil {
		pipes = 4
	}
	name := namedWorkers[pick(t, "worker", 6, 6, 1, pipes)]
	if pick(t, "worker crash", 7, 1) == 1 {
		return sim.NewStep("crash", "worker", name)
	}
	if name == pipelined {
		return m.drawPipe(t, e)
	}
	c, holds := e.Model().Claims[name]
	switch {
	case !holds:
		return m.drawFault(t, e, sim.NewStep("claim", "worker", name), "claim fault", sim.FaultsOf("claim"))
	case c.Heard == "":
		weights := []int{6}
		for _, k := range sim.FaultsOf("send") {
			weights = append(weights, faultWeight[m.faults[k]])
		}
		i := choose(t, "send fault", sendBits, weights...)
		if i == 0 {
			return sim.NewStep("send", "worker", name)
		}
		k := sim.FaultsOf("send")[i-1]
		s := sim.NewStep("send", "worker", name, "fault", k.String())
		switch k {
		case faults.Throttled:
			hints := retryHints[e.Transport()]
			s = s.With("retry-after", hints[pickOf(t, "retry after", len(hints))])
		case faults.Answered:
			s = s.With("status", answeredStatuses[pickOf(t, "status", len(answeredStatuses))])
		case faults.Mangled:
			s = s.With("spoil", string(model.Mangles[pickOf(t, "spoil", len(model.Mangles))]))
		}
		return s
	}
	s := sim.NewStep("settle", "worker", name)
	if ceiling := e.Model().JitterCeiling(c.Attempt); c.Heard == model.ResultTransient && ceiling > 0 {
		if j := ceiling * int64(pickOf(t, "jitter", 5)) / 4; j > 0 {
			s = s.With("jitter", itoa(j))
		}
	}
	return m.drawFault(t, e, s, "settle fault", sim.FaultsOf("settle"))
}

// drawPipe draws a call of the pipelined worker: Next, or Flush (as often
// as Next when the worker holds something to flush, one time in four
// otherwise); by default one time in sixteen with a fault (one of the
// network's, a crash in its background or, for Next and a design that
// takes it, a busy app database), each as m's level says; its
// sends answered at once most of the time, else at exactly half the send
// timeout (the slowest answer still fast, which two in a row make end
// with the window of the row claimed ahead), past half of it (a slow
// answer, which stops the claiming ahead), or past the whole of it; and,
// when the answer it will record is a transient failure, the jitter of
// its backoff.
func (m mix) drawPipe(t *rapid.T, e *sim.Env) sim.Step {
	state := e.Model()
	flushWeight := 1
	if _, held := state.Claims[pipelined]; held {
		flushWeight = 3
	}
	directive := []string{"pipe", "flush"}[pick(t, "pipe or flush", 3, flushWeight)]
	s := sim.NewStep(directive, "worker", pipelined)
	switch pick(t, "slow", 6, 1, 2, 1) {
	case 1:
		s = s.With("slow", itoa(state.SendTimeout/2))
	case 2:
		s = s.With("slow", itoa(state.SendTimeout/2+1))
	case 3:
		s = s.With("slow", itoa(state.SendTimeout+1))
	}
	if c, ok := state.Claims[pipelined]; ok && c.Heard == model.ResultTransient {
		if ceiling := state.JitterCeiling(c.Attempt); ceiling > 0 {
			if j := ceiling * int64(pickOf(t, "jitter", 5)) / 4; j > 0 {
				s = s.With("jitter", itoa(j))
			}
		}
	}
	weights := []int{15}
	var kinds []faults.Kind
	for _, k := range sim.FaultsOf(directive) {
		if sim.Supported(e.Design(), s.With("fault", k.String())) != nil || !sim.RunsOn(k, e.Backend()) {
			continue
		}
		kinds = append(kinds, k)
		weights = append(weights, faultWeight[m.faults[k]])
	}
	if i := choose(t, "pipe fault", pipeBits, weights...); i > 0 {
		s = s.With("fault", kinds[i-1].String())
	}
	return s
}

// drawFault adds to s, by default one time in sixteen, one of kinds, each
// as often as m's level for it says: those of kinds that run on the Env's
// backend, for a design that takes faults of the databases. With none to
// draw it draws nothing, so that a step that takes only the other
// backend's faults costs no draw.
func (m mix) drawFault(t *rapid.T, e *sim.Env, s sim.Step, label string, kinds []faults.Kind) sim.Step {
	if !sim.TakesDatabaseFaults(e.Design()) {
		return s
	}
	var runs []faults.Kind
	weights := []int{15}
	for _, k := range kinds {
		if sim.RunsOn(k, e.Backend()) {
			runs = append(runs, k)
			weights = append(weights, faultWeight[m.faults[k]])
		}
	}
	if len(runs) == 0 {
		return s
	}
	if i := choose(t, label, phaseBits, weights...); i > 0 {
		s = s.With("fault", runs[i-1].String())
	}
	return s
}

// ticks are the steps of time a sequence takes: a moment, past a backoff,
// past the send timeout, past a lease, past a retention, past a time budget.
var ticks = []string{"1", "2000", "10000", "30000", "61000", "95000"}

// drawTick draws a tick of the clock.
func drawTick(t *rapid.T, _ *sim.Env) sim.Step {
	return sim.NewStep("tick", "ms", ticks[pickOf(t, "tick", len(ticks))])
}

// drawOperate draws, one time in four, a person asking what is stale;
// otherwise a person's repair of a row that needs one, as the spec's
// simulation has it: the person tells the truth. A blocked row is
// requeued or reconciled, a pending row without a live lease reconciled:
// with the id of the task the CRM holds for its key with its payload, or
// as absent when it holds none; a row whose key the CRM holds with other
// content is only requeued. With no such row, the person requeues case-1
// (refused, or unknown).
func drawOperate(t *rapid.T, e *sim.Env) sim.Step {
	if pick(t, "stale", 3, 1) == 1 {
		return sim.NewStep("stale", "older-than", []string{"0", "30000", "90000"}[pickOf(t, "older than", 3)])
	}
	var rows []model.Row
	for _, r := range e.Model().Outbox {
		if r.State == model.Blocked || r.State == model.Pending && (r.LeaseOwner == "" || r.LeaseUntil <= e.Model().Now) {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return sim.NewStep("requeue", "case", "case-1")
	}
	// Blocked rows, three times in four: they are what a person is called
	// for.
	var blocked []model.Row
	for _, r := range rows {
		if r.State == model.Blocked {
			blocked = append(blocked, r)
		}
	}
	if len(blocked) > 0 && pick(t, "blocked first", 1, 3) == 1 {
		rows = blocked
	}
	r := rows[pickOf(t, "row to repair", len(rows))]
	c := r.Key[len(model.KeyPrefix):]
	requeue := sim.NewStep("requeue", "case", c)
	if r.State == model.Blocked && pick(t, "requeue", 1, 1) == 0 {
		return requeue
	}
	payload := ""
	for _, a := range e.Model().Approvals {
		if a.Key == r.Key {
			payload = a.Payload
		}
	}
	for _, task := range e.Model().Tasks {
		switch {
		case task.Key == r.Key && task.Payload == payload:
			return sim.NewStep("reconcile", "case", c, "remote-id", itoa(task.ID))
		case task.Key == r.Key:
			return requeue
		}
	}
	return sim.NewStep("reconcile", "case", c, "absent", "true")
}

// itoa prints n in decimal, as a step's argument.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
