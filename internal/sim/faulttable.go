package sim

import (
	"maps"
	"net/http"
	"slices"

	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// faultEffect is what one fault does: what the model hears of it, and
// what the fault proxy does with the request over HTTP. Where a crash
// fault strikes is faults.Point's.
type faultEffect struct {
	network         model.Network   // what happens to a delivery's request and reply
	crash           model.Crash     // where a delivery's worker dies
	crashesApproval bool            // the approval dies between its two inserts
	pipeCrash       model.PipeCrash // where a pipelined worker dies
	// proxy is the fault proxy's action on the request over HTTP; the
	// zero Action forwards it. A throttled answer's Retry-After is the
	// step's hint; a foreign task is another system's request, forwarded
	// ahead of the worker's.
	proxy faults.Action
	// database is the file a database fault holds busy or full for the
	// step ("" for the other faults), and refusal what it then does with
	// a write of the step that needs it.
	database string
	refusal  model.Refusal
	// overHTTP is what the worker hears over HTTP when the receiver's
	// database refuses the task: crm.Server answers 503 with Retry-After
	// (retryAfter, in milliseconds) when it is busy, 500 otherwise.
	overHTTP   model.Network
	retryAfter int64
	// httpOnly says the fault is the fault proxy's or the HTTP server's
	// alone, with nothing in process to be: a scenario of it runs over
	// HTTP.
	httpOnly bool
	// only is the backend the fault needs, "" when it runs on both: a
	// SQLite file's size can be pinned per connection, and a PostgreSQL
	// transaction's connection ended from another one at its COMMIT.
	only backend.Backend
}

// faultTable is the one place that says what every fault of package faults
// does to the model and over HTTP (where a crash strikes the system is
// faults.Point's): adding a fault is one row here, and
// TestReach then demands that explorations make it take effect. Over HTTP
// every network fault is the proxy's: nothing is emulated in process.
var faultTable = map[faults.Kind]faultEffect{
	faults.CrashBetweenInserts:  {crashesApproval: true},
	faults.CrashBeforeSend:      {crash: model.CrashBeforeSend},
	faults.CrashAfterReply:      {crash: model.CrashAfterReply},
	faults.CrashAfterRecord:     {pipeCrash: model.PipeRecorded},
	faults.CrashAfterClaimAhead: {pipeCrash: model.PipeClaimedAhead},
	faults.Offline:              {network: model.Offline, proxy: faults.Action{Verb: faults.Refuse}},
	faults.LostReply:            {network: model.LostReply, proxy: faults.Action{Verb: faults.CutReply}},
	faults.DuplicateRequest:     {network: model.DuplicateRequest, proxy: faults.Action{Verb: faults.Duplicate}},
	faults.ForeignTask:          {network: model.ForeignTask},
	faults.Throttled:            {network: model.Throttled, proxy: faults.Action{Verb: faults.Respond, Status: http.StatusTooManyRequests}},
	faults.Refused:              {network: model.Refused, proxy: faults.Action{Verb: faults.Respond, Status: http.StatusForbidden}},
	faults.Restart:              {},
	faults.AppBusy:              {database: appFile, refusal: model.RefusedBusy},
	faults.AppFull:              {database: appFile, refusal: model.RefusedFull, only: backend.SQLite},
	faults.CRMBusy: {database: crmFile, refusal: model.RefusedBusy, network: model.ReceiverBusy,
		overHTTP: model.Throttled, retryAfter: crm.BusyRetryAfter.Milliseconds()},
	faults.CRMFull:         {database: crmFile, refusal: model.RefusedFull, network: model.ReceiverFull, overHTTP: model.Offline},
	faults.CommitLost:      {database: appFile, refusal: model.CommitLost, only: backend.Postgres},
	faults.CommitReplyLost: {database: appFile, refusal: model.CommitReplyLost, only: backend.Postgres},
	faults.Answered:        {network: model.Answered, proxy: faults.Action{Verb: faults.Respond}, httpOnly: true},
	faults.Mangled:         {network: model.Mangled, proxy: faults.Action{Verb: faults.Spoil}, httpOnly: true},
}

// HTTPOnly reports whether fault k runs over HTTP only.
func HTTPOnly(k faults.Kind) bool { return faultTable[k].httpOnly }

// RunsOn reports whether fault k runs on backend b.
func RunsOn(k faults.Kind, b backend.Backend) bool {
	only := faultTable[k].only
	return only == "" || only == b
}

// crashAt is the effect of the crash fault whose point is p: what the model
// hears of a crash that struck there, whichever way it was injected (a
// step's fault, or a pass the harness enumerates). Zero for p "".
func crashAt(p system.FaultPoint) faultEffect {
	for k, f := range faultTable {
		if p != "" && faults.Point(k) == p {
			return f
		}
	}
	return faultEffect{}
}

// Faults lists every fault the fault table has a row for, by name.
func Faults() []faults.Kind { return slices.Sorted(maps.Keys(faultTable)) }

// NetworkFaults lists the faults that act on a request to the receiver
// (over HTTP, the fault proxy's actions and crm.Server's answers), by
// name.
func NetworkFaults() []faults.Kind {
	var ks []faults.Kind
	for _, k := range Faults() {
		if faultTable[k].network != model.Delivered {
			ks = append(ks, k)
		}
	}
	return ks
}
