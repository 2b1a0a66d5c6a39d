package model

import "maps"

// ClaimResult is the model's prediction for one claim. Result is Idle,
// ResultClaimed, ResultBlocked or ResultOutOfTurn. Key is the row claimed
// or blocked; LastError is why it blocked. Wake is, when Idle, the
// earliest time a pending row becomes eligible (0 when none is pending).
type ClaimResult struct {
	Result    Result
	Key       string
	LastError string
	Wake      int64
}

// Tick predicts the virtual clock moving ms milliseconds forward; ok is
// false, and nothing changes, when ms is negative.
func (s State) Tick(ms int64) (next State, ok bool) {
	if ms < 0 {
		return s, false
	}
	s.Now += ms
	return s, true
}

// eligibleAt returns when a pending row r becomes eligible for a claim:
// its next attempt time, or its lease's end if that is later.
func eligibleAt(r Row) int64 {
	if r.LeaseOwner == "" {
		return r.NextAttemptAt
	}
	return max(r.NextAttemptAt, r.LeaseUntil)
}

// Claim predicts worker claiming the oldest eligible row. A worker that
// still has a claim in flight, or has no name, gets ResultOutOfTurn and
// nothing changes.
func (s State) Claim(worker string) (State, ClaimResult) {
	return s.claimInto(worker, worker)
}

// claimInto is Claim for owner, keeping the claim in Claims[slot]: a
// pipelined worker keeps two claims at once, under one name.
func (s State) claimInto(slot, owner string) (State, ClaimResult) {
	if _, busy := s.Claims[slot]; busy || owner == "" {
		return s, ClaimResult{Result: ResultOutOfTurn}
	}
	i, wake := -1, int64(0)
	for j, r := range s.Outbox {
		if r.State != Pending {
			continue
		}
		if at := eligibleAt(r); at > s.Now {
			if wake == 0 || at < wake {
				wake = at
			}
			continue
		}
		if i < 0 || s.ClaimsDueFirst && r.NextAttemptAt < s.Outbox[i].NextAttemptAt {
			i = j
		}
		if !s.ClaimsDueFirst {
			break
		}
	}
	if i < 0 {
		return s, ClaimResult{Result: Idle, Wake: wake}
	}
	s = s.clone()
	row := &s.Outbox[i]
	row.Fence++
	row.release()
	if reason := s.blocks(*row); reason != "" {
		row.State, row.LastError = Blocked, reason
		return s, ClaimResult{Result: ResultBlocked, Key: row.Key, LastError: reason}
	}
	row.Attempts++
	row.LeaseOwner, row.LeaseUntil = owner, s.Now+s.Lease
	if row.FirstClaimedAt == 0 {
		row.FirstClaimedAt = s.Now
	}
	s.Claims = cloneOrMake(s.Claims)
	s.Claims[slot] = Claim{Key: row.Key, Fence: row.Fence, Attempt: row.Attempts, At: s.Now}
	return s, ClaimResult{Result: ResultClaimed, Key: row.Key}
}

// blocks returns the last error with which a claim at s.Now blocks r
// instead of sending it, in the spec's order, or "" when r may be sent.
func (s State) blocks(r Row) string {
	if r.Attempts >= s.MaxAttempts {
		return BudgetExhausted
	}
	if at, ok := s.AgeDeadline(r); ok && s.Now >= at {
		return Deadline
	}
	if at, ok := s.RetentionDeadline(r); ok && s.Now >= at {
		return RetentionExpired
	}
	return ""
}

// cloneOrMake returns a map to write to: m itself when s.clone already
// copied it, or a new map when m is nil.
func cloneOrMake[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// Request is what happens to one send on the network and at the receiver.
// Foreign is the content another system puts under the key first, for
// ForeignTask; RetryAfter is the receiver's not-before hint in
// milliseconds, for Throttled.
type Request struct {
	Network    Network
	Foreign    string
	RetryAfter int64
	Status     int    // with Answered: the status the hop answers
	Mangle     Mangle // with Mangled: how the answer is spoiled
}

// Send predicts worker sending its claimed row's key and payload at s.Now
// and returns what the worker heard: ResultTask, ResultTransient,
// ResultConflict or ResultRejected. The worker keeps what it heard until
// it settles; ResultBusy or ResultFull when the receiver's database
// refused the task. A worker with no claim, or one already sent, gets
// ResultOutOfTurn and nothing changes. A send is made whatever has
// happened to the row since the claim (only the settle is fenced), but
// not at or after the claim's time plus the send timeout: then nothing is
// sent and the worker hears a transient failure.
func (s State) Send(worker string, in Request) (State, Result) {
	c, ok := s.Claims[worker]
	if !ok || c.Heard != "" {
		return s, ResultOutOfTurn
	}
	s = s.clone()
	if s.Now >= c.At+s.SendTimeout {
		// A send starts within the send timeout of its claim or not at all:
		// a later one could reach a receiver past its retention.
		c.Heard = ResultTransient
		s.Claims[worker] = c
		return s, c.Heard
	}
	a, _ := s.approval(c.Key)
	var id int64
	var conflict bool
	switch in.Network {
	case ForeignTask:
		s, _, _ = s.receive(a.Key, in.Foreign)
		s, id, conflict = s.receive(a.Key, a.Payload)
	case DuplicateRequest:
		s, id, conflict = s.receive(a.Key, a.Payload)
		s, _, _ = s.receive(a.Key, a.Payload)
	case Delivered, LostReply, Mangled:
		s, id, conflict = s.receive(a.Key, a.Payload)
	}
	switch {
	case in.Network == Answered:
		c.Heard = StatusHeard(in.Status)
	case in.Network == Mangled && (in.Mangle == CutBody || in.Mangle == GatewayError):
		c.Heard = ResultTransient
	case in.Network == Mangled:
		c.Heard = ResultRejected
	case in.Network == ReceiverBusy:
		c.Heard = ResultBusy
	case in.Network == ReceiverFull:
		c.Heard = ResultFull
	case in.Network == Offline || in.Network == LostReply:
		c.Heard = ResultTransient
	case in.Network == Throttled:
		c.Heard, c.RetryAfter = ResultTransient, in.RetryAfter
	case in.Network == Refused:
		c.Heard = ResultRejected
	case conflict:
		c.Heard = ResultConflict
	default:
		c.Heard, c.RemoteID = ResultTask, id
	}
	s.Claims[worker] = c
	return s, c.Heard
}

// Settle predicts worker recording what it heard, with jitter the drawn
// backoff jitter in milliseconds (used only for a transient failure that
// leaves the row pending). It returns the result and the row's key:
//
//   - ResultOutOfTurn: the worker has nothing sent to settle; no change.
//   - ResultInvalidJitter: a transient failure with jitter outside
//     [0, JitterCeiling(attempt)]; no change, the claim stays.
//   - ResultStale: the row is no longer pending or no longer carries the
//     claim's fence; nothing is written and the claim ends.
//   - ResultSent, ResultPending or ResultBlocked: the outcome is written
//     and the claim ends.
//   - ResultBusy or ResultFull, when the send heard the receiver's
//     database refuse the task: neither a task nor a transient failure, so
//     no outcome is written. The row, if it is still pending under the
//     claim's fence, records the cause as its last error (LocalBusy,
//     LocalFull) and keeps its lease until it runs out, as after a crash;
//     the claim ends.
func (s State) Settle(worker string, jitter int64) (State, Result, string) {
	c, ok := s.Claims[worker]
	if !ok || c.Heard == "" {
		return s, ResultOutOfTurn, ""
	}
	if c.Heard == ResultTransient && (jitter < 0 || jitter > s.JitterCeiling(c.Attempt)) {
		return s, ResultInvalidJitter, c.Key
	}
	s = s.clone()
	delete(s.Claims, worker)
	i := s.row(c.Key)
	row := &s.Outbox[i]
	if cause, ok := localCauses[c.Heard]; ok {
		row.recordCause(c, cause)
		return s, c.Heard, c.Key
	}
	if row.State != Pending || row.Fence != c.Fence {
		return s, ResultStale, c.Key
	}
	row.release()
	switch c.Heard {
	case ResultTask:
		row.State, row.RemoteID, row.LastError = Sent, c.RemoteID, ""
		return s, ResultSent, c.Key
	case ResultConflict:
		row.State, row.LastError = Blocked, Conflict
		return s, ResultBlocked, c.Key
	case ResultRejected:
		row.State, row.LastError = Blocked, Rejected
		return s, ResultBlocked, c.Key
	}
	row.LastError = Transient
	if row.Attempts >= s.MaxAttempts {
		row.State = Blocked
		return s, ResultBlocked, c.Key
	}
	row.NextAttemptAt = NextAttemptAfter(s.Now, jitter, c.RetryAfter)
	return s, ResultPending, c.Key
}

// recordCause writes cause as the last error of r, the row of claim c,
// if r is still pending under c's fence: what a worker records when its
// attempt's outcome is unknown to it.
func (r *Row) recordCause(c Claim, cause string) {
	if r.State == Pending && r.Fence == c.Fence {
		r.LastError = cause
	}
}

// The last errors of a row whose attempt's outcome a failure of a
// database made unknown: the cause, after "local: ".
const (
	LocalBusy          = "local: database is busy"
	LocalFull          = "local: disk is full"
	LocalCommitUnknown = "local: commit outcome unknown"
)

// localCauses are the last errors a settle records for what a send heard
// that is neither a task nor a failure of the request.
var localCauses = map[Result]string{ResultBusy: LocalBusy, ResultFull: LocalFull}

// SettleRefused predicts worker settling while the app database refuses
// its writes with r, RefusedBusy or RefusedFull: the claim ends, nothing
// is written (not even the cause of a failed send, which needs a write of
// its own) and the row keeps its lease until it runs out. A worker with
// nothing sent to settle gets ResultOutOfTurn and nothing changes.
func (s State) SettleRefused(worker string, r Refusal) (State, Result, string) {
	c, ok := s.Claims[worker]
	if !ok || c.Heard == "" {
		return s, ResultOutOfTurn, ""
	}
	return s.Crash(worker), refusedResults[r], c.Key
}

// ClaimCommitLost predicts worker claiming while its connection dies
// during the claim's COMMIT: nothing committed, whatever the claim found,
// and the worker, told the outcome is unknown, sends nothing. A worker
// with a claim in flight, or without a name, gets ResultOutOfTurn and
// writes nothing.
func (s State) ClaimCommitLost(worker string) (State, Result) {
	if _, busy := s.Claims[worker]; busy || worker == "" {
		return s, ResultOutOfTurn
	}
	return s, ResultCommitUnknown
}

// ClaimCommitReplyLost predicts worker claiming while its connection
// dies after the claim's COMMIT committed, before its reply: the claim
// stands (a lease, an attempt counted, or a row blocked), but the worker,
// told the outcome is unknown, sends nothing, and its lease runs out as
// after a crash. A worker with a claim in flight, or without a name, gets
// ResultOutOfTurn and writes nothing.
func (s State) ClaimCommitReplyLost(worker string) (State, Result) {
	next, c := s.Claim(worker)
	if c.Result == ResultOutOfTurn {
		return s, ResultOutOfTurn
	}
	return next.Crash(worker), ResultCommitUnknown
}

// SettleCommitReplyLost predicts worker settling with jitter while its
// connection dies after the COMMIT of the settle's first write committed,
// before its reply. When the send heard a task or a failure of the
// request, that write is the outcome's, which stands: the worker hears
// ResultCommitUnknown and, on a new connection, records
// LocalCommitUnknown as the row's last error if the row is still pending
// under the claim's fence (a transient failure). When the send heard the
// receiver's database refuse the task, the first write is the cause's,
// which stands, and the worker hears what its send heard. A worker with
// nothing sent to settle, or a jitter outside the ceiling, changes
// nothing, as Settle says.
func (s State) SettleCommitReplyLost(worker string, jitter int64) (State, Result, string) {
	c := s.Claims[worker]
	next, res, key := s.Settle(worker, jitter)
	if _, local := localCauses[c.Heard]; local || res == ResultOutOfTurn || res == ResultInvalidJitter {
		return next, res, key
	}
	next.Outbox[next.row(c.Key)].recordCause(c, LocalCommitUnknown)
	return next, ResultCommitUnknown, key
}

// SettleCommitLost predicts worker settling while its connection dies
// during the COMMIT of the settle's first write, which then commits
// nothing. When the send heard a task or a failure of the request, that
// write is the outcome's: the worker hears ResultCommitUnknown and, on a
// new connection, records LocalCommitUnknown as the row's last error (if
// the row is still pending under the claim's fence); the row keeps its
// attempt and its lease until it runs out. When the send heard the
// receiver's database refuse the task, the first write is that cause's,
// which is lost: the worker hears what its send heard and nothing is
// written. The claim ends either way. A worker with nothing sent to
// settle gets ResultOutOfTurn and nothing changes.
func (s State) SettleCommitLost(worker string) (State, Result, string) {
	c, ok := s.Claims[worker]
	if !ok || c.Heard == "" {
		return s, ResultOutOfTurn, ""
	}
	if _, ok := localCauses[c.Heard]; ok {
		return s.Crash(worker), c.Heard, c.Key
	}
	s = s.clone()
	delete(s.Claims, worker)
	s.Outbox[s.row(c.Key)].recordCause(c, LocalCommitUnknown)
	return s, ResultCommitUnknown, c.Key
}

// Crash predicts worker dying: its claims in flight are gone (a
// pipelined worker's, and what it kept between calls, too), and the
// leases it holds stay until they run out.
func (s State) Crash(worker string) State {
	_, claimed := s.Claims[worker]
	_, ahead := s.Claims[worker+pipeNext]
	_, piped := s.Pipes[worker]
	if !claimed && !ahead && !piped {
		return s
	}
	s.Claims, s.Pipes = maps.Clone(s.Claims), maps.Clone(s.Pipes)
	delete(s.Claims, worker)
	delete(s.Claims, worker+pipeNext)
	delete(s.Pipes, worker)
	return s
}

// Restart predicts worker starting again: any claim in flight is gone and
// every lease held under its name, run out or not, is released, adding
// one to the row's fence. It returns the released rows' keys in
// insertion order. With RestartKeepsLeases, nothing is released: the
// leases run out.
func (s State) Restart(worker string) (State, []string) {
	if s.RestartKeepsLeases {
		return s.Crash(worker), nil
	}
	s = s.Crash(worker).clone()
	var released []string
	for i := range s.Outbox {
		if row := &s.Outbox[i]; row.LeaseOwner != "" && row.LeaseOwner == worker {
			row.release()
			row.Fence++
			released = append(released, row.Key)
		}
	}
	return s, released
}
