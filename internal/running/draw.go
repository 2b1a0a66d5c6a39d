package running

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"pgregory.net/rapid"

	"github.com/outboxlab/handoff/designs"
)

// titles are the titles approvals draw: plain, non-ASCII, and at the
// spec's longest.
var titles = []string{
	"Call about the approved repair plan",
	"Rappeler le client: plan de réparation approuvé",
	"修理計画について電話する",
	"Follow up: 🔧 parts arrived",
}

// defaultLease is the lease a design that declares none is paused past.
const defaultLease = 30 * time.Second

// Draw draws a schedule for design d on backend: one to three replicas
// of it side by side (up to d.Replicas), approvals, crashes, connection
// resets and lost COMMIT replies (on PostgreSQL, where the database is
// at the other end of a connection), each striking one replica, and an
// outage at drawn times within the first two minutes; an answer for
// each of the first requests, a paused worker held past d's lease (or,
// for a job held by a lock, any pause); and for some cases a fault that
// lasts: refused for good, every reply late, or the receiver offline for it.
// Shrinking makes a failure's schedule small.
//
// replicas, when not 0, is the count of replicas every schedule runs,
// at most d.Replicas.
func Draw(t *rapid.T, d designs.Running, backend string, replicas int) Schedule {
	lease := cmp.Or(d.Lease, defaultLease)
	s := Schedule{Design: d.Name, Backend: backend}
	most := MaxReplicas
	if d.Replicas > 0 {
		most = min(d.Replicas, MaxReplicas)
	}
	if s.Replicas = min(replicas, most); replicas == 0 {
		s.Replicas = rapid.IntRange(1, most).Draw(t, "replicas")
	}
	replica := func(label string) int { return rapid.IntRange(1, s.Replicas).Draw(t, label) }
	at := func(label string) time.Duration {
		return time.Duration(rapid.IntRange(0, 120_000).Draw(t, label)) * time.Millisecond
	}
	cases := rapid.IntRange(1, 4).Draw(t, "approvals")
	for i := range cases {
		c := fmt.Sprintf("case-%d", i+1)
		title := rapid.SampledFrom(titles).Draw(t, "title")
		s.Events = append(s.Events, Event{At: at("approve at"), Kind: Approve, Case: c, Title: title, Replica: replica("approve on")})
		if rapid.IntRange(0, 4).Draw(t, "approve again") == 0 {
			s.Events = append(s.Events, Event{At: at("approve again at"), Kind: Approve, Case: c, Title: title, Replica: replica("approve again on")})
		}
		if f := rapid.SampledFrom(drawnKeyFaults).Draw(t, "key fault"); f != "" {
			s.Keys = append(s.Keys, KeyRule{Case: c, Fault: f})
		}
	}
	faults := []EventKind{ProcessCrash}
	if backend == "postgres" {
		// A connection to SQLite is a file in the process: it is reset,
		// or loses a COMMIT's reply, only as the process crashes.
		faults = append(faults, ConnectionReset, CommitReplyLost)
	}
	for _, k := range faults {
		for range rapid.IntRange(0, 2).Draw(t, string(k)+"s") {
			s.Events = append(s.Events, Event{At: at(string(k) + " at"), Kind: k, Replica: replica(string(k) + " on")})
		}
	}
	if rapid.Bool().Draw(t, "outage") {
		s.Events = append(s.Events, Event{At: at("outage at"), Kind: Outage,
			For: time.Duration(rapid.IntRange(1, 120).Draw(t, "outage seconds")) * time.Second})
	}
	if s.Replicas == 1 {
		for i := range s.Events {
			s.Events[i].Replica = 0
		}
	}
	slices.SortStableFunc(s.Events, func(a, b Event) int { return int(a.At - b.At) })
	for n := 1; n <= 12; n++ {
		a := rapid.SampledFrom(drawnAnswers).Draw(t, "answer")
		if a == Answered {
			continue
		}
		r := AnswerRule{N: n, Answer: a}
		switch a {
		case Paused:
			r.Wait = holdPast(d, lease) + time.Duration(rapid.IntRange(1, 300).Draw(t, "hold seconds past the lease"))*time.Second
		case Throttled503, Throttled429:
			r.Wait = time.Duration(rapid.IntRange(1, 60).Draw(t, "retry after seconds")) * time.Second
		}
		s.Answers = append(s.Answers, r)
	}
	return s
}

// holdPast is what a paused worker's pause is drawn past: d's lease, or
// nothing for a job held by a lock, which no other worker takes while
// its holder lives.
func holdPast(d designs.Running, lease time.Duration) time.Duration {
	if d.Holds == designs.HeldByLock {
		return 0
	}
	return lease
}

// drawnKeyFaults weighs the faults that last: most cases have none.
var drawnKeyFaults = []KeyFault{"", "", "", "", "", RefuseKey400, RefuseKey422, SlowKey, DownKey}

// drawnAnswers weighs the answers: most requests are answered.
var drawnAnswers = []Answer{Answered, Answered, Answered, Answered, Answered, Answered,
	LostReply, LateReply, Paused, Throttled503, Throttled429, InFlight, FailedAfterActing, Refused, KeyConflict}
