package running

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The lanes of a run's timeline besides each boot's ("boot 1", …).
const (
	LaneApp      = "app"      // the app's approvals
	LaneReceiver = "receiver" // the receiver: requests, answers, outages
	LaneHarness  = "harness"  // what the harness read and decided
)

// Entry is one thing that happened in a run, in one lane.
type Entry struct {
	At   time.Duration
	Lane string
	Text string
	// From, for a request, is the lane of the boot that sent it.
	From string
}

// Timeline is every entry of res in time order: the harness's own, each
// request (in the receiver's lane, from its boot's), and the check that
// broke last. At one instant the harness's entries come first, as it
// acted then.
func (res Result) Timeline() []Entry {
	entries := slices.Clone(res.Log)
	for _, q := range res.Requests {
		key := q.Key
		if q.Keyless {
			key = "case " + cmp.Or(q.Case, "unknown") + " with no Idempotency-Key"
		}
		text := fmt.Sprintf("request %d for %s: %s", q.N, key, cmp.Or(q.Outcome, "under way at the end"))
		e := Entry{At: q.At, Lane: LaneReceiver, From: bootLane(res.Schedule.replicas(), q.Replica, q.Generation), Text: text}
		if q.Worker != "" {
			e.Lane, e.From = q.Worker, ""
			e.Text = fmt.Sprintf("%s → receiver: %s", bootLane(res.Schedule.replicas(), q.Replica, q.Generation), text)
		}
		entries = append(entries, e)
	}
	slices.SortStableFunc(entries, func(a, b Entry) int { return cmp.Compare(a.At, b.At) })
	if v := res.Violation; v != nil {
		entries = append(entries, Entry{At: v.At, Lane: LaneHarness, Text: fmt.Sprintf("%s broke: %s", v.Check, v.Detail)})
	}
	return entries
}

// Lanes are the lanes of res's timeline, in the order a report shows
// them: the app, each boot, each named worker (its requests, whichever
// boot it ran in), the receiver (and the requests of unnamed workers),
// the harness.
func (res Result) Lanes() []string {
	lanes := []string{LaneApp}
	for i := 2; i <= res.Schedule.replicas(); i++ {
		lanes = append(lanes, fmt.Sprintf("%s (replica %d)", LaneApp, i))
	}
	if res.Schedule.replicas() > 1 {
		lanes[0] = LaneApp + " (replica 1)"
	}
	lanes = append(lanes, res.BootLanes...)
	var workers []string
	for _, q := range res.Requests {
		if q.Worker != "" && !slices.Contains(workers, q.Worker) {
			workers = append(workers, q.Worker)
		}
	}
	slices.Sort(workers)
	return append(append(lanes, workers...), LaneReceiver, LaneHarness)
}

// String is the entry as a line: its time, its lane, what happened.
func (e Entry) String() string {
	lane := e.Lane
	if e.From != "" {
		lane = e.From + " → " + e.Lane
	}
	return fmt.Sprintf("%10s  %-20s %s", e.At.Round(time.Millisecond), lane, e.Text)
}

// Story is res's timeline as text, a line each.
func (res Result) Story() string {
	var b strings.Builder
	for _, e := range res.Timeline() {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}
