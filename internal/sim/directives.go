package sim

import (
	"context"
	"maps"
	"slices"

	"github.com/outboxlab/handoff/faults"
)

// directive is one directive of the scenario language: the method that
// runs it (each in a file of its own, directive_NAME.go, whose doc comment
// shows its line), the capability a design needs for it, and the faults
// its fault= argument takes.
type directive struct {
	run    func(*Env, context.Context, Step) (stepResult, error)
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
		"approve": {run: (*Env).approve,
			faults: []faults.Kind{faults.CrashBetweenInserts, faults.AppBusy, faults.AppFull, faults.CommitLost, faults.CommitReplyLost}},
		"deliver": {run: (*Env).deliver,
			faults: append(slices.Clone(faults.DeliveryKinds), faults.AppBusy, faults.CRMBusy, faults.CRMFull, faults.CommitLost)},
		"restart":   {run: (*Env).restartStep},
		"converge":  {run: (*Env).converge},
		"design":    {run: (*Env).design},
		"config":    {run: (*Env).config},
		"transport": {run: (*Env).transport},
		"backend":   {run: (*Env).backend},
		"tick":      {run: (*Env).tick, needs: needTime},
		"claim":     {run: (*Env).claim, needs: needWorkers, faults: []faults.Kind{faults.CommitLost, faults.CommitReplyLost}},
		"send": {run: (*Env).send, needs: needWorkers,
			faults: append(slices.Clone(faults.SendKinds), faults.CRMBusy, faults.CRMFull, faults.Answered, faults.Mangled)},
		"settle": {run: (*Env).settle, needs: needWorkers, faults: []faults.Kind{faults.AppBusy, faults.CommitLost, faults.CommitReplyLost}},
		"crash":  {run: (*Env).crash, needs: needWorkers},
		"pipe": {run: (*Env).pipe, needs: needPipeline, faults: []faults.Kind{faults.Offline, faults.LostReply, faults.DuplicateRequest,
			faults.ForeignTask, faults.Refused, faults.CrashAfterRecord, faults.CrashAfterClaimAhead}},
		"flush": {run: (*Env).flush, needs: needPipeline, faults: []faults.Kind{faults.Offline, faults.LostReply, faults.DuplicateRequest,
			faults.ForeignTask, faults.Refused}},
		"requeue":   {run: (*Env).requeue, needs: needOperator},
		"reconcile": {run: (*Env).reconcile, needs: needOperator},
		"stale":     {run: (*Env).stale, needs: needOperator},
	}
}

// FaultsOf are the faults that directive's fault= argument takes, in the
// order the generators weigh them; none for a directive that takes none.
func FaultsOf(directive string) []faults.Kind { return directives[directive].faults }

// Directives lists every directive of the scenario language, by name.
func Directives() []string { return slices.Sorted(maps.Keys(directives)) }
