// Package running is the running mode of the harness (docs/spec.md,
// "Verifying an outbox as it runs"): it boots a design as a process does,
// inside one testing/synctest bubble whose clock is virtual, lets the
// design's own goroutines run, plays a schedule of approvals and faults
// of package faults (process crashes, lost connections and COMMIT
// replies, the receiver offline, each request's answer), and judges the
// history of requests and tasks at its receiver with the checks H1–H8.
//
// A Schedule is what a run plays, drawn by Draw or read from a
// .schedule file in the scenario language's syntax (ParseSchedule); Run
// runs one and returns its Result:
// the violation, if a check broke, the requests and tasks, and the
// timeline a person reads (Story) or a page shows (internal/report's WriteTimeline).
package running
