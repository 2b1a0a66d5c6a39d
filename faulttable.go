package handoff

import (
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// faultEffect is what one fault does: the system fault point where it
// crashes (none for the others), and what the model hears of it.
type faultEffect struct {
	point           system.FaultPoint
	network         model.Network // what happens to a delivery's request and reply
	crash           model.Crash   // where a delivery's worker dies
	crashesApproval bool          // the approval dies between its two inserts
}

// faultTable is the one place that says what every fault of package faults
// does to the system and to the model: adding a fault is one row here, and
// TestReach then demands that explorations make it take effect.
var faultTable = map[faults.Kind]faultEffect{
	faults.CrashBetweenInserts: {point: system.PointBetweenApprovalInserts, crashesApproval: true},
	faults.CrashBeforeSend:     {point: system.PointBeforeSend, crash: model.CrashBeforeSend},
	faults.CrashAfterReply:     {point: system.PointAfterReply, crash: model.CrashAfterReply},
	faults.Offline:             {network: model.Offline},
	faults.LostReply:           {network: model.LostReply},
	faults.DuplicateRequest:    {network: model.DuplicateRequest},
	faults.ForeignTask:         {network: model.ForeignTask},
	faults.Throttled:           {network: model.Throttled},
	faults.Refused:             {network: model.Refused},
	faults.Restart:             {},
}

// FaultPoint is the system fault point where the crash fault k strikes, or
// "" for a fault that is not a crash.
func FaultPoint(k faults.Kind) system.FaultPoint { return faultTable[k].point }

// crashAt is the effect of the crash fault whose point is p: what the model
// hears of a crash that struck there, whichever way it was injected (a
// step's fault, or a pass the harness enumerates). Zero for p "".
func crashAt(p system.FaultPoint) faultEffect {
	for _, f := range faultTable {
		if p != "" && f.point == p {
			return f
		}
	}
	return faultEffect{}
}
