package system

// FaultPoint names a place in the handoff where a process can die. The
// harness crashes the handoff at these points; a production caller can use
// them for tracing.
type FaultPoint string

const (
	// PointBetweenApprovalInserts is inside the approval transaction, after
	// the approval row is inserted and before its outbox row is.
	PointBetweenApprovalInserts FaultPoint = "between-approval-inserts"

	// PointBeforeSend is after the attempt is committed and before the
	// request leaves for the receiver.
	PointBeforeSend FaultPoint = "before-send"

	// PointAfterReply is after the receiver answered and before the answer
	// is recorded.
	PointAfterReply FaultPoint = "after-reply"

	// PointPipelineRecorded is in a Pipeline, while a row is sent: after
	// the answer of the row before was recorded. When the next row is
	// claimed ahead, the two share one commit, and this point passes
	// after it, just before PointPipelineClaimedAhead.
	PointPipelineRecorded FaultPoint = "pipeline-recorded"

	// PointPipelineClaimedAhead is in a Pipeline, while a row is sent:
	// after the next row was claimed ahead, and before it is sent.
	PointPipelineClaimedAhead FaultPoint = "pipeline-claimed-ahead"

	// PointBeforeCommit is in a write transaction on PostgreSQL, after
	// its statements ran and before COMMIT leaves: where the connection
	// can die and leave the caller not knowing whether the write
	// committed (ErrCommitUnknown). SQLite does not pass it.
	PointBeforeCommit FaultPoint = "before-commit"
)

// Hook is called at every FaultPoint the handoff passes. A non-nil error
// aborts the operation right there, as a crash of that operation would:
// what is committed stays, what it wrote is rolled back, and the error is
// returned unchanged. Writes of other callers that share its batch (see
// CommitStats) still commit, as they would had they run just before it.
// A hook may run while the process holds the file's write lock: it must
// not write to the same file.
type Hook func(FaultPoint) error

// pass calls h at p; a nil Hook lets everything pass.
func (h Hook) pass(p FaultPoint) error {
	if h == nil {
		return nil
	}
	return h(p)
}
