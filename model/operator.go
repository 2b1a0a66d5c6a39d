package model

// Operator is who takes an operator action and why, as the audit log
// records it.
type Operator struct {
	Actor  string
	Reason string
}

// OpVerdict is the model's prediction for an operator action. Every
// verdict but OpDone is a refusal that changes nothing.
type OpVerdict string

const (
	OpDone            OpVerdict = "done"              // the row changed, its fence grew and the audit log has a line
	OpUnknownKey      OpVerdict = "unknown-key"       // no outbox row has the key
	OpNotBlocked      OpVerdict = "not-blocked"       // requeue: the row is pending or sent
	OpRetentionPassed OpVerdict = "retention-passed"  // requeue: the receiver may have forgotten the key; reconcile first
	OpAlreadySent     OpVerdict = "already-sent"      // reconcile: the row is sent
	OpLeased          OpVerdict = "leased"            // reconcile: the row is pending with a live lease
	OpInvalidRemoteID OpVerdict = "invalid-remote-id" // reconcile: a remote id below 1
)

// Audit log actions.
const (
	ActionRequeue         = "requeue"
	ActionReconcile       = "reconcile"
	ActionReconcileAbsent = "reconcile-absent"
)

// Requeue predicts `requeue KEY`: a blocked row becomes pending with
// attempts 0, eligible now, lease and last error cleared. It is refused
// once s.Now reaches the row's RetentionDeadline.
func (s State) Requeue(op Operator, key string) (State, OpVerdict) {
	i := s.row(key)
	switch {
	case i < 0:
		return s, OpUnknownKey
	case s.Outbox[i].State != Blocked:
		return s, OpNotBlocked
	}
	if at, ok := s.RetentionDeadline(s.Outbox[i]); ok && s.Now >= at {
		return s, OpRetentionPassed
	}
	return s.act(op, ActionRequeue, i, func(r *Row) { r.retry(s.Now) }), OpDone
}

// Reconcile predicts `reconcile KEY --remote-id N`: a blocked row, or a
// pending row without a live lease, becomes sent with remote id N.
func (s State) Reconcile(op Operator, key string, remoteID int64) (State, OpVerdict) {
	if remoteID < 1 {
		return s, OpInvalidRemoteID
	}
	i, v := s.reconcilable(key)
	if v != OpDone {
		return s, v
	}
	return s.act(op, ActionReconcile, i, func(r *Row) {
		r.State, r.RemoteID, r.LastError = Sent, remoteID, ""
	}), OpDone
}

// ReconcileAbsent predicts `reconcile KEY --absent`: a blocked row, or a
// pending row without a live lease, is requeued even past retention, and
// its first_claimed_at is cleared.
func (s State) ReconcileAbsent(op Operator, key string) (State, OpVerdict) {
	i, v := s.reconcilable(key)
	if v != OpDone {
		return s, v
	}
	return s.act(op, ActionReconcileAbsent, i, func(r *Row) {
		r.retry(s.Now)
		r.FirstClaimedAt = 0
	}), OpDone
}

// reconcilable returns the index of key's row and OpDone when a person may
// reconcile it, or the refusal.
func (s State) reconcilable(key string) (int, OpVerdict) {
	i := s.row(key)
	switch {
	case i < 0:
		return i, OpUnknownKey
	case s.Outbox[i].State == Sent:
		return i, OpAlreadySent
	case s.Outbox[i].State == Pending && s.Outbox[i].leased(s.Now):
		return i, OpLeased
	}
	return i, OpDone
}

// act applies an operator action to row i: change, then a cleared lease,
// one more fence and an audit line.
func (s State) act(op Operator, action string, i int, change func(*Row)) State {
	s = s.clone()
	row := &s.Outbox[i]
	change(row)
	row.release()
	row.Fence++
	s.Audit = append(s.Audit, AuditEntry{At: s.Now, Actor: op.Actor, Action: action, Key: row.Key, Reason: op.Reason})
	return s
}

// retry makes r pending with attempts 0, eligible at now, without a last
// error.
func (r *Row) retry(now int64) {
	r.State, r.Attempts, r.NextAttemptAt, r.LastError = Pending, 0, now, ""
}

// StaleRow is one row of the `stale` report. Age is in milliseconds.
type StaleRow struct {
	Key       string
	State     string
	Age       int64
	Attempts  int
	LastError string
}

// Stale predicts `stale --older-than D`: every blocked row and every
// pending row created more than olderThan milliseconds ago, oldest first,
// and whether a person is needed (the list is not empty).
func (s State) Stale(olderThan int64) ([]StaleRow, bool) {
	var list []StaleRow
	for _, r := range s.Outbox {
		age := s.Now - r.CreatedAt
		if r.State == Blocked || r.State == Pending && age > olderThan {
			list = append(list, StaleRow{Key: r.Key, State: r.State, Age: age, Attempts: r.Attempts, LastError: r.LastError})
		}
	}
	return list, len(list) > 0
}
