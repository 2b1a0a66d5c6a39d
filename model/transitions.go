package model

// Verdict is the model's prediction for an approval.
type Verdict string

const (
	Recorded    Verdict = "recorded" // a new approval and its pending row
	Repeated    Verdict = "repeated" // the same approval again: nothing changes
	Conflicting Verdict = "conflict" // the key is approved with another payload
	Invalid     Verdict = "invalid"  // the input breaks the spec's rules
	Crashed     Verdict = "crashed"  // the process died between the two inserts
	Busy        Verdict = "busy"     // the app database was busy: nothing written
	Full        Verdict = "full"     // a new approval found no room: nothing written
	// CommitUnknown: the connection died during the approval's COMMIT:
	// nothing written, and the caller told the outcome is unknown.
	CommitUnknown Verdict = "commit-unknown"
)

// Refusal is whether a database refused a step's write, writing nothing
// of it: not at all, because another connection held its write lock past
// the busy timeout (every write transaction fails before it reads), or
// because the write needed room the file could not grow by (a write that
// needs none goes through). Whether a write needs room depends on how
// full the file's pages are, which the model does not know: RefusedFull
// predicts the write refused, Accepted the write that found room, and the
// harness takes the prediction the system shows. CommitLost is not a
// refusal but a loss: the connection to the database (PostgreSQL) died
// while the write's COMMIT was due, so the caller hears that the outcome
// is unknown (system.ErrCommitUnknown). CommitReplyLost is the other
// branch of that loss: the write committed, and the caller hears the
// same.
type Refusal int

const (
	Accepted    Refusal = iota // the write went through, or there was none
	RefusedBusy                // the database was busy
	RefusedFull                // the write found no room
	// CommitLost: the connection died before the COMMIT reached the
	// server, so nothing of the write committed.
	CommitLost
	// CommitReplyLost: the COMMIT reached the server, which committed
	// the write, and the connection died before its reply came back.
	// The writer is told, as after CommitLost, that the outcome is
	// unknown; the write stands (a claim's lease then runs out).
	CommitReplyLost
)

// ApproveRefused predicts recording an approval of caseID with title
// while the app database refuses writes with r. Invalid input is refused
// before any write; a busy database refuses every other approval; a full
// one only a new approval, since a repeat and a conflict write nothing. A
// lost commit loses a new approval and a repeat, whose transaction
// commits though it writes nothing, but not a conflict, which rolls back
// before its COMMIT: nothing changes, or, when only the COMMIT's reply
// was lost, the approval is recorded all the same.
func (s State) ApproveRefused(caseID, title string, r Refusal) (State, Verdict, string) {
	next, v, key := s.Approve(caseID, title, false)
	switch {
	case v == Invalid || r == Accepted:
		return next, v, key
	case r == RefusedBusy:
		return s, Busy, key
	case r == CommitLost && v != Conflicting:
		return s, CommitUnknown, key
	case r == CommitReplyLost && v != Conflicting:
		return next, CommitUnknown, key
	case r == RefusedFull && v == Recorded:
		return s, Full, key
	}
	return next, v, key
}

// Approve predicts recording an approval of caseID with title; crash says a
// crash is injected between the approval's two inserts.
func (s State) Approve(caseID, title string, crash bool) (State, Verdict, string) {
	a, ok := Action(caseID, title)
	if !ok {
		return s, Invalid, ""
	}
	if held, known := s.approval(a.Key); known {
		if held.Payload == a.Payload {
			return s, Repeated, a.Key
		}
		return s, Conflicting, a.Key
	}
	if crash {
		return s, Crashed, a.Key
	}
	s = s.clone()
	s.Approvals = append(s.Approvals, a)
	s.Outbox = append(s.Outbox, Row{Key: a.Key, State: Pending, CreatedAt: s.Now, NextAttemptAt: s.Now})
	return s, Recorded, a.Key
}

// Network is what happens to a delivery's request and reply.
type Network int

const (
	Delivered        Network = iota // the receiver acts and the reply arrives
	Offline                         // the request fails before the receiver acts
	LostReply                       // the receiver acts and the reply is lost
	DuplicateRequest                // the receiver gets the request twice; the reply arrives
	ForeignTask                     // another system puts Delivery.Foreign under the key first
	Throttled                       // the receiver answers transient with a retry hint, without acting (429, 503)
	Refused                         // the receiver refuses the request for good, without acting (rejected)
	ReceiverBusy                    // the receiver's database is busy: it stores nothing and the worker hears it (ResultBusy)
	ReceiverFull                    // the receiver's database has no room for the task: it stores nothing and the worker hears it (ResultFull)
	Answered                        // a hop answers Request.Status itself, forwarding nothing: the worker hears what a sender makes of the status (StatusHeard)
	Mangled                         // the receiver acts, and its answer reaches the worker spoiled as Request.Mangle says
)

// Mangle is how the receiver's answer reaches the worker spoiled.
type Mangle string

// The ways an answer is spoiled, and what the worker hears of each: a
// transient failure when the answer is cut or replaced by a gateway's
// error, a refusal for good when a 2xx answer is not the contract's task
// (a breach a person must look at).
const (
	CutBody      Mangle = "cut-body"      // the body ends before its length says: transient
	GatewayError Mangle = "gateway-error" // a hop answers 502 after the receiver acted: transient
	NotJSON      Mangle = "not-json"      // a 201 whose body is not JSON: rejected
	NoTaskID     Mangle = "no-task-id"    // a 201 task without its id: rejected
	OtherKey     Mangle = "other-key"     // a 201 task of another key: rejected
)

// Mangles are the ways an answer is spoiled, in the order a shrinking
// run prefers them.
var Mangles = []Mangle{CutBody, GatewayError, NotJSON, NoTaskID, OtherKey}

// StatusHeard is what a sender hears of an answer with HTTP status code
// that carries no task, as the spec's sender table says: 409 (in flight
// elsewhere), 429, 503 and every other 5xx are transient, 422 is a key
// conflict, anything else (a 3xx, which is not followed, a 4xx, a 2xx
// without a task) is refused for good.
func StatusHeard(code int) Result {
	switch {
	case code == 409 || code == 429 || code >= 500:
		return ResultTransient
	case code == 422:
		return ResultConflict
	}
	return ResultRejected
}

// Crash is where, if anywhere, the worker dies during a delivery.
type Crash int

const (
	NoCrash         Crash = iota
	CrashBeforeSend       // after the attempt is committed, before the send
	CrashAfterReply       // after the reply, before it is recorded
)

// Result is the model's prediction for one delivery, or for one phase of
// a worker's delivery (Claim, Send, Settle).
type Result string

const (
	Idle          Result = "idle"
	ResultSent    Result = "sent"
	ResultPending Result = "pending"
	ResultBlocked Result = "blocked"
	ResultCrashed Result = "crashed"

	ResultClaimed       Result = "claimed"        // Claim: a lease and an attempt; send next
	ResultOutOfTurn     Result = "out-of-turn"    // the worker is not at this phase: nothing changes
	ResultTask          Result = "task"           // Send: a task id came back
	ResultTransient     Result = "transient"      // Send: a transient failure (maybe with a retry hint)
	ResultConflict      Result = "conflict"       // Send: the key holds other content
	ResultRejected      Result = "rejected"       // Send: the receiver refused the request for good
	ResultStale         Result = "stale"          // Settle: the fence moved on; nothing written
	ResultInvalidJitter Result = "invalid-jitter" // Settle: jitter outside [0, ceiling]; nothing changes
	ResultBusy          Result = "busy"           // a database was busy: the step's write, or the receiver's, was refused
	ResultFull          Result = "full"           // a database had no room: the step's write, or the receiver's, was refused
	ResultCommitUnknown Result = "commit-unknown" // the connection died during the step's COMMIT: nothing committed, the outcome unknown to the worker
)

// refusedResults are the results of a step whose write a database refused
// or whose commit was lost.
var refusedResults = map[Refusal]Result{RefusedBusy: ResultBusy, RefusedFull: ResultFull, CommitLost: ResultCommitUnknown}

// Delivery is the input of one delivery attempt: what happens on the way
// to the receiver, where the worker dies if it does, for ForeignTask the
// content another system puts under the key, for Throttled the retry hint
// in milliseconds, the backoff jitter drawn for a transient failure, and
// whether the app database refuses the claim.
type Delivery struct {
	Network    Network
	Crash      Crash
	Foreign    string
	RetryAfter int64
	Status     int    // with Answered
	Mangle     Mangle // with Mangled
	Jitter     int64
	App        Refusal
}

// Deliver predicts one delivery attempt by DefaultWorker: a claim, a send
// and a settle in one step. A crash in it is the default worker dying and
// starting again at once, which releases its lease at once. Any claim the
// default worker had in flight is dropped first (its lease stays). It
// returns the key of the row it worked on (empty when Idle). With an
// invalid jitter it returns ResultInvalidJitter and s unchanged. When the
// app database refuses the claim, nothing changes and no key is named:
// the claim's transaction failed before it read a row, or its commit was
// lost (whatever the claim found: an idle claim commits too). When only
// the commit's reply was lost, the claim stands and the worker sends
// nothing, as ClaimCommitReplyLost says (the harness's deliveries do not
// draw it).
func (s State) Deliver(in Delivery) (State, Result, string) {
	if in.App == CommitReplyLost { // the claim committed; its worker sends nothing
		next, res := s.Crash(DefaultWorker).ClaimCommitReplyLost(DefaultWorker)
		return next, res, ""
	}
	if in.App != Accepted {
		return s, refusedResults[in.App], ""
	}
	next, c := s.Crash(DefaultWorker).Claim(DefaultWorker)
	if c.Result != ResultClaimed {
		return next, c.Result, c.Key
	}
	if in.Crash == CrashBeforeSend {
		next, _ = next.Restart(DefaultWorker)
		return next, ResultCrashed, c.Key
	}
	next, _ = next.Send(DefaultWorker, Request{Network: in.Network, Foreign: in.Foreign, RetryAfter: in.RetryAfter, Status: in.Status, Mangle: in.Mangle})
	if in.Crash == CrashAfterReply {
		next, _ = next.Restart(DefaultWorker)
		return next, ResultCrashed, c.Key
	}
	next, r, _ := next.Settle(DefaultWorker, in.Jitter)
	if r == ResultInvalidJitter {
		return s, r, c.Key
	}
	return next, r, c.Key
}

// receive applies the receiver's contract at s.Now to one request: a key
// it does not remember (never stored, or stored Retention or more ago)
// gets a new task with the next id, a replay gets the remembered id,
// another payload is a conflict. s must already be a private clone.
func (s State) receive(key, payload string) (State, int64, bool) {
	if m, known := s.Memory[key]; known && (s.Retention == 0 || s.Now < m.StoredAt+s.Retention) {
		return s, m.TaskID, s.Tasks[m.TaskID-1].Payload != payload
	}
	id := int64(len(s.Tasks)) + 1
	s.Tasks = append(s.Tasks, Task{ID: id, Key: key, Payload: payload})
	s.Memory = cloneOrMake(s.Memory)
	s.Memory[key] = Memory{TaskID: id, StoredAt: s.Now}
	return s, id, false
}

// Converge predicts the default worker delivering without faults until it
// is idle, after moving the clock to the instant every lease and backoff
// of a pending row has run out (if that is later than now). It returns
// how many deliveries that took, the idle one included.
func (s State) Converge() (State, int) {
	for _, r := range s.Outbox {
		if r.State == Pending {
			s.Now = max(s.Now, eligibleAt(r))
		}
	}
	for n := 1; ; n++ {
		var r Result
		s, r, _ = s.Deliver(Delivery{})
		if r == Idle {
			return s, n
		}
	}
}
