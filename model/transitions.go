package model

// Verdict is the model's prediction for an approval.
type Verdict string

const (
	Recorded    Verdict = "recorded" // a new approval and its pending row
	Repeated    Verdict = "repeated" // the same approval again: nothing changes
	Conflicting Verdict = "conflict" // the key is approved with another payload
	Invalid     Verdict = "invalid"  // the input breaks SPEC's rules
	Crashed     Verdict = "crashed"  // the process died between the two inserts
)

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
	s.Outbox = append(s.Outbox, Row{Key: a.Key, State: Pending})
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
)

// Crash is where, if anywhere, the worker dies during a delivery.
type Crash int

const (
	NoCrash         Crash = iota
	CrashBeforeSend       // after the attempt is committed, before the send
	CrashAfterReply       // after the reply, before it is recorded
)

// Result is the model's prediction for one delivery.
type Result string

const (
	Idle          Result = "idle"
	ResultSent    Result = "sent"
	ResultPending Result = "pending"
	ResultBlocked Result = "blocked"
	ResultCrashed Result = "crashed"
)

// Delivery is the input of one delivery attempt: what happens on the way
// to the receiver, where the worker dies if it does, and, for ForeignTask,
// the content another system puts under the key.
type Delivery struct {
	Network Network
	Crash   Crash
	Foreign string
}

// Deliver predicts one delivery attempt. It returns the key of the row it
// worked on (empty when Idle).
func (s State) Deliver(in Delivery) (State, Result, string) {
	i := -1
	for j, r := range s.Outbox {
		if r.State == Pending {
			i = j
			break
		}
	}
	if i < 0 {
		return s, Idle, ""
	}
	s = s.clone()
	row := &s.Outbox[i]
	if row.Attempts == s.MaxAttempts {
		row.State, row.LastError = Blocked, BudgetExhausted
		return s, ResultBlocked, row.Key
	}
	row.Attempts++
	if in.Crash == CrashBeforeSend {
		return s, ResultCrashed, row.Key
	}
	a, _ := s.approval(row.Key)
	var id int64
	var conflict bool
	switch in.Network {
	case ForeignTask:
		s, _, _ = s.receive(a.Key, in.Foreign)
		s, id, conflict = s.receive(a.Key, a.Payload)
	case DuplicateRequest:
		s, id, conflict = s.receive(a.Key, a.Payload)
		s, _, _ = s.receive(a.Key, a.Payload)
	case Delivered, LostReply:
		s, id, conflict = s.receive(a.Key, a.Payload)
	}
	row = &s.Outbox[i]
	if in.Crash == CrashAfterReply {
		return s, ResultCrashed, row.Key
	}
	switch {
	case in.Network == Offline || in.Network == LostReply:
		row.LastError = Transient
		if row.Attempts == s.MaxAttempts {
			row.State = Blocked
			return s, ResultBlocked, row.Key
		}
		return s, ResultPending, row.Key
	case conflict:
		row.State, row.LastError = Blocked, Conflict
		return s, ResultBlocked, row.Key
	}
	row.State, row.RemoteID, row.LastError = Sent, id, ""
	return s, ResultSent, row.Key
}

// receive applies the receiver's contract to one request: a new key gets
// the next task id, a replay gets the existing id, another payload is a
// conflict. s must already be a private clone.
func (s State) receive(key, payload string) (State, int64, bool) {
	if t, known := s.task(key); known {
		return s, t.ID, t.Payload != payload
	}
	id := int64(len(s.Tasks)) + 1
	s.Tasks = append(s.Tasks, Task{ID: id, Key: key, Payload: payload})
	return s, id, false
}

// Converge predicts delivering without faults until the worker is idle and
// returns how many deliveries that took, the idle one included.
func (s State) Converge() (State, int) {
	for n := 1; ; n++ {
		var r Result
		s, r, _ = s.Deliver(Delivery{})
		if r == Idle {
			return s, n
		}
	}
}
