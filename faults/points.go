package faults

import "github.com/outboxlab/handoff/system"

// crashPoints says where each crash fault strikes: the fault point of
// package system whose next pass an Injector armed with it crashes. A
// fault it has no row for is not a crash.
var crashPoints = map[Kind]system.FaultPoint{
	CrashBetweenInserts:  system.PointBetweenApprovalInserts,
	CrashBeforeSend:      system.PointBeforeSend,
	CrashAfterReply:      system.PointAfterReply,
	CrashAfterRecord:     system.PointPipelineRecorded,
	CrashAfterClaimAhead: system.PointPipelineClaimedAhead,
}

// Point is the system fault point where the crash fault k strikes, or ""
// for a fault that is not a crash: what an Injector is armed with to
// inject k. The product's deliver --fault and the harness's fault table
// both read it here.
func Point(k Kind) system.FaultPoint { return crashPoints[k] }
