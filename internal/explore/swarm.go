package explore

import (
	"slices"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/sim"
	"pgregory.net/rapid"
)

// level is how often one kind of step or fault comes up in a sequence of
// swarm testing: as by default, often, or seldom (for most kinds: never).
type level int

// The levels, in the order a shrinking run prefers them.
const (
	byDefault level = iota
	often
	seldom
	off // never: for kinds a design does not take
)

// weighted is one kind of step or fault that a swarm can tune: its weight
// at each level. A zero weight switches it off.
type weighted [4]int

// The weights of every kind a swarm tunes. Steps end with weight 2 (about
// 25 steps at the default levels) whatever the swarm; approvals and
// deliveries never switch off, or nothing would happen.
var (
	approveWeight = weighted{byDefault: 22, often: 66, seldom: 4}
	deliverWeight = weighted{byDefault: 25, often: 50, seldom: 4}
	restartWeight = weighted{byDefault: 1, often: 4, seldom: 0}
	workerWeight  = weighted{byDefault: 12, often: 40, seldom: 0} // a named worker's next phase, or its crash
	tickWeight    = weighted{byDefault: 3, often: 12, seldom: 0}
	operateWeight = weighted{byDefault: 2, often: 6, seldom: 0}  // a person's requeue or reconcile
	plainWeight   = weighted{byDefault: 6, often: 24, seldom: 0} // a delivery without a fault
	faultWeight   = weighted{byDefault: 1, often: 4, seldom: 0}  // each fault
)

// The width in bits of the choices a swarm tunes: fixed, so that a run
// keeps its shape when the shrinker turns a level back to the default
// (only the meaning of each step's draws changes, not their number). Each
// is enough to resolve the largest total of its weights.
const (
	kindBits    = 8 // 2 + 66 + 50 + 4 + 40 + 12 + 6 = 180 < 256
	faultBits   = 6 // 24 + 10·4 = 64 (on PostgreSQL; on SQLite commit-lost weighs nothing; deliveries draw no commit-reply-lost)
	approveBits = 5 // 7 + 4·4 = 23 < 32 (app-full and the commit faults never both)
	crashBits   = 4 // 7 + 4 = 11 < 16: an approval's crash alone, for a design without faults of the databases
	sendBits    = 6 // 6 + 10·4 = 46 < 64: a named worker's send
	phaseBits   = 5 // 15 + 3·4 = 27 < 32: a named worker's claim or settle
	pipeBits    = 6 // 15 + 8·4 = 47 < 64: a pipelined worker's call
)

// mix is the mix one sequence draws its steps from (swarm testing, as
// TigerBeetle's VOPR does): each sequence first draws a level for every
// kind of step and fault, so that some sequences have one fault in bursts,
// or many approvals and few deliveries (many rows pending at different
// attempt counts), combinations a fixed mix draws rarely. A sequence
// swarms one time in four; the others draw at the default levels. (A
// failure found in a swarm costs rapid's shrinker more runs when the
// failure needs the swarm's mix.)
type mix struct {
	approve, deliver, restart level
	worker, tick, operate     level
	plain                     level                 // deliveries without a fault
	faults                    map[faults.Kind]level // by swarmedFaults
	databases                 bool                  // faults of the databases are drawn (see takesDatabaseFaults)
}

// swarmedFaults are the faults a swarm tunes, in the order their levels
// are drawn: those of deliveries, the crash of approvals, and those of
// the databases.
var swarmedFaults = append(append(slices.Clone(faults.DeliveryKinds), faults.CrashBetweenInserts), faults.DatabaseKinds...)

// drawMix draws a mix for design d on backend b over transport tr
// (without named workers,
// time or repairs unless d supports them; without faults of the databases
// unless sim.TakesDatabaseFaults(d); without the faults that need the other
// backend, which draw nothing, so that SQLite's sequences are what they
// were before PostgreSQL's faults): whether to swarm (two bits, both 1 to swarm, so
// that zeroing either turns it off), then a level for every kind, drawn
// whether to swarm or not, so that a shrinking run can turn the swarm off
// (or any one level to the default) without moving a later draw. With
// swarm false every level is the default.
func drawMix(t *rapid.T, swarm bool, d designs.Design, b backend.Backend, tr sim.Transport) mix {
	on := pick(t, "swarm", 3, 1) == 1 && swarm
	draw := func(label string) level {
		l := []level{byDefault, often, seldom, seldom}[pickOf(t, label, 4)]
		if !on {
			return byDefault
		}
		return l
	}
	m := mix{approve: draw("approve"), deliver: draw("deliver"), restart: draw("restart"), plain: draw("plain"),
		worker: draw("worker"), tick: draw("tick"), operate: draw("operate")}
	for _, k := range []struct {
		level     *level
		directive string
	}{{&m.worker, "claim"}, {&m.tick, "tick"}, {&m.operate, "requeue"}} {
		if sim.Supported(d, sim.NewStep(k.directive)) != nil {
			*k.level = off
		}
	}
	m.faults, m.databases = map[faults.Kind]level{}, sim.TakesDatabaseFaults(d)
	for _, k := range swarmedFaults {
		if slices.Contains(faults.DatabaseKinds, k) && !m.databases || !sim.RunsOn(k, b) {
			m.faults[k] = off // not drawn: a design without them draws what it drew before they were
			continue
		}
		m.faults[k] = draw(k.String())
	}
	for _, k := range faults.StepMode.Kinds() {
		if sim.HTTPOnly(k) {
			// Answers over HTTP come up often there (a status or a
			// spoiling is drawn with each), and never in process, where
			// they draw nothing.
			m.faults[k] = map[bool]level{true: often, false: off}[tr == sim.HTTP]
		}
	}
	return m
}

// deliveryWeights are the weights of a delivery without a fault and of
// each of sim.FaultsOf("deliver"); never all zero.
func (m mix) deliveryWeights() []int {
	w := []int{plainWeight[m.plain]}
	total := w[0]
	for _, k := range sim.FaultsOf("deliver") {
		w = append(w, faultWeight[m.faults[k]])
		total += faultWeight[m.faults[k]]
	}
	if total == 0 {
		w[0] = plainWeight[byDefault]
	}
	return w
}

// drawStep draws one step: approvals and deliveries, rarely a restart
// (crashes restart too, and a restart, which opens every handle again,
// is a costly step), a named worker's next phase, a tick of the clock, a person's
// repair, or the end of the sequence, as often as m says. Every choice
// shrinks towards the end, then a plain approval of case-1 or a delivery
// without faults. The worker and operator steps look at e, so that a
// drawn phase is always the worker's next one.
func (m mix) drawStep(t *rapid.T, e *sim.Env) sim.Step {
	switch choose(t, "kind", kindBits, 2, approveWeight[m.approve], deliverWeight[m.deliver], restartWeight[m.restart],
		workerWeight[m.worker], tickWeight[m.tick], operateWeight[m.operate]) {
	case 0:
		return sim.Step{}
	case 1:
		return m.drawApprove(t)
	case 2:
		return m.drawDeliver(t, e)
	case 3:
		return sim.NewStep("restart")
	case 4:
		return m.drawPhase(t, e)
	case 5:
		return drawTick(t, e)
	}
	return drawOperate(t, e)
}

// drawApprove draws an approval of a drawn case and title (see drawCase
// and drawTitle), by default with each of sim.FaultsOf("approve") that runs on the
// backend about one time in ten: a crash between its inserts, a busy or
// a full app database, a lost commit or a lost reply to it (for a design
// without faults of the databases, a crash one time in eight).
func (m mix) drawApprove(t *rapid.T) sim.Step {
	s := sim.NewStep("approve")
	if id, ok := drawCase(t); ok {
		s = s.With("case", id)
	}
	if title, ok := drawTitle(t); ok {
		s = s.With("title", title)
	}
	if !m.databases {
		if choose(t, "crash", crashBits, 7, faultWeight[m.faults[faults.CrashBetweenInserts]]) == 1 {
			s = s.With("fault", faults.CrashBetweenInserts.String())
		}
		return s
	}
	weights := []int{7}
	for _, k := range sim.FaultsOf("approve") {
		weights = append(weights, faultWeight[m.faults[k]])
	}
	if i := choose(t, "approval fault", approveBits, weights...); i > 0 {
		s = s.With("fault", sim.FaultsOf("approve")[i-1].String())
	}
	return s
}

// drawDeliver draws a delivery: by default two in five without a fault,
// the rest spread over every delivery fault, in the order sim.FaultsOf("deliver")
// gives; with backoff on, for a design without named workers (whose
// settles draw it otherwise), the jitter a transient failure would wait,
// up to the backoff base (within the ceiling of every attempt).
func (m mix) drawDeliver(t *rapid.T, e *sim.Env) sim.Step {
	s := sim.NewStep("deliver")
	if i := choose(t, "delivery", faultBits, m.deliveryWeights()...); i > 0 {
		s = s.With("fault", sim.FaultsOf("deliver")[i-1].String())
	}
	if base := e.Model().BackoffBase; base > 0 && !e.Design().Supports.Workers {
		if j := base * int64(pickOf(t, "jitter", 5)) / 4; j > 0 {
			s.Args = append([]sim.Arg{{Key: "jitter", Value: itoa(j)}}, s.Args...)
		}
	}
	return s
}
