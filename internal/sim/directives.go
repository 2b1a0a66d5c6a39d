package sim

import (
	"context"
	"maps"
	"slices"

	"github.com/outboxlab/handoff/faults"
)

// directive is one directive of the scenario language: the method that
// runs it (each in a file of its own, directive_NAME.go, whose doc comment
// shows its line), the arguments it takes (Env.Apply refuses any other
// before it runs), the capability a design needs for it, and the faults
// its fault= argument takes.
type directive struct {
	run    func(*Env, context.Context, Step) (stepResult, error)
	args   []string
	needs  need
	faults []faults.Kind
}

// directives is the scenario language, one row per directive: adding a
// directive is a handler and a row here (internal/explore's TestReach then
// demands the generators draw it, or says why they do not).
var directives map[string]directive

func init() {
	// In init: the handlers read the table (faultArg), which a package
	// variable's initializer could not refer back to.
	directives = map[string]directive{
		"approve": {run: (*Env).approve, args: []string{"case", "title", "fault"},
			faults: []faults.Kind{faults.CrashBetweenInserts, faults.AppBusy, faults.AppFull, faults.CommitLost, faults.CommitReplyLost}},
		"deliver": {run: (*Env).deliver, args: []string{"jitter", "fault"},
			faults: append(slices.Clone(faults.DeliveryKinds), faults.AppBusy, faults.CRMBusy, faults.CRMFull, faults.CommitLost)},
		"restart":   {run: (*Env).restartStep},
		"converge":  {run: (*Env).converge},
		"design":    {run: (*Env).design, args: []string{"name"}},
		"config":    {run: (*Env).config, args: configKeys},
		"transport": {run: (*Env).transport, args: []string{"name"}},
		"backend":   {run: (*Env).backend, args: []string{"name"}},
		"tick":      {run: (*Env).tick, args: []string{"ms"}, needs: needTime},
		"claim":     {run: (*Env).claim, args: []string{"worker", "fault"}, needs: needWorkers, faults: []faults.Kind{faults.CommitLost, faults.CommitReplyLost}},
		"send": {run: (*Env).send, args: []string{"worker", "fault", "retry-after", "status", "spoil"}, needs: needWorkers,
			faults: append(slices.Clone(faults.SendKinds), faults.CRMBusy, faults.CRMFull, faults.Answered, faults.Mangled)},
		"settle": {run: (*Env).settle, args: []string{"worker", "jitter", "fault"}, needs: needWorkers, faults: []faults.Kind{faults.AppBusy, faults.CommitLost, faults.CommitReplyLost}},
		"crash":  {run: (*Env).crash, args: []string{"worker"}, needs: needWorkers},
		"pipe": {run: (*Env).pipe, args: []string{"worker", "fault", "slow", "jitter"}, needs: needPipeline, faults: []faults.Kind{faults.Offline, faults.LostReply, faults.DuplicateRequest,
			faults.ForeignTask, faults.Refused, faults.CrashAfterRecord, faults.CrashAfterClaimAhead, faults.AppBusy}},
		"flush": {run: (*Env).flush, args: []string{"worker", "fault", "slow", "jitter"}, needs: needPipeline, faults: []faults.Kind{faults.Offline, faults.LostReply, faults.DuplicateRequest,
			faults.ForeignTask, faults.Refused}},
		"requeue":   {run: (*Env).requeue, args: []string{"case"}, needs: needOperator},
		"reconcile": {run: (*Env).reconcile, args: []string{"case", "remote-id", "absent"}, needs: needOperator},
		"stale":     {run: (*Env).stale, args: []string{"older-than"}, needs: needOperator},
	}
}

// FaultsOf are the faults that directive's fault= argument takes, in the
// order the generators weigh them; none for a directive that takes none.
func FaultsOf(directive string) []faults.Kind { return directives[directive].faults }

// Directives lists every directive of the scenario language, by name.
func Directives() []string { return slices.Sorted(maps.Keys(directives)) }
