package running

import (
	"fmt"
	"slices"
	"time"

	"pgregory.net/rapid"
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

// Draw draws a schedule for a design whose jobs stay with a worker for
// lease (0: defaultLease) on backend: approvals, crashes,
// connection resets and lost COMMIT replies (on PostgreSQL, where the
// database is at the other end of a connection), and an outage at drawn times
// within the first two minutes, and an answer for each of the first
// requests, a paused worker held past the lease. Shrinking makes a
// failure's schedule small.
func Draw(t *rapid.T, design, backend string, lease time.Duration) Schedule {
	if lease == 0 {
		lease = defaultLease
	}
	s := Schedule{Design: design, Backend: backend}
	at := func(label string) time.Duration {
		return time.Duration(rapid.IntRange(0, 120_000).Draw(t, label)) * time.Millisecond
	}
	cases := rapid.IntRange(1, 4).Draw(t, "approvals")
	for i := range cases {
		c := fmt.Sprintf("case-%d", i+1)
		title := rapid.SampledFrom(titles).Draw(t, "title")
		s.Events = append(s.Events, Event{At: at("approve at"), Kind: Approve, Case: c, Title: title})
		if rapid.IntRange(0, 4).Draw(t, "approve again") == 0 {
			s.Events = append(s.Events, Event{At: at("approve again at"), Kind: Approve, Case: c, Title: title})
		}
	}
	faults := []EventKind{Crash}
	if backend == "postgres" {
		// A connection to SQLite is a file in the process: it is reset,
		// or loses a COMMIT's reply, only as the process crashes.
		faults = append(faults, Reset, CommitLost)
	}
	for _, k := range faults {
		for range rapid.IntRange(0, 2).Draw(t, string(k)+"s") {
			s.Events = append(s.Events, Event{At: at(string(k) + " at"), Kind: k})
		}
	}
	if rapid.Bool().Draw(t, "outage") {
		s.Events = append(s.Events, Event{At: at("outage at"), Kind: Outage,
			For: time.Duration(rapid.IntRange(1, 120).Draw(t, "outage seconds")) * time.Second})
	}
	slices.SortStableFunc(s.Events, func(a, b Event) int { return int(a.At - b.At) })
	for n := 1; n <= 12; n++ {
		a := rapid.SampledFrom(drawnAnswers).Draw(t, "answer")
		if a == Answered {
			continue
		}
		r := AnswerRule{N: n, Answer: a}
		switch a {
		case Hold:
			r.Wait = lease + time.Duration(rapid.IntRange(1, 300).Draw(t, "hold seconds past the lease"))*time.Second
		case Busy, Throttled:
			r.Wait = time.Duration(rapid.IntRange(1, 60).Draw(t, "retry after seconds")) * time.Second
		}
		s.Answers = append(s.Answers, r)
	}
	return s
}

// drawnAnswers weighs the answers: most requests are answered.
var drawnAnswers = []Answer{Answered, Answered, Answered, Answered, Answered, Answered,
	LostReply, Slow, Hold, Busy, Throttled, InFlight, Failed, Refused, Conflict}
