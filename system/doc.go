// Package system is the handoff itself: a transactional outbox on SQLite that
// records an approved action and its delivery intent in one transaction, a
// worker that delivers each action with the same stable action key on every
// attempt, and a durable receiver (the CRM simulation) that recognises a
// replayed key and answers with the task it already holds.
//
// The contract is ../shared/SPEC.md; the states an outbox row can be in are
// [Pending], [Sent] and [Blocked].
//
// Two SQLite files take part: the app's (approvals and outbox, opened with
// [Open]) and the receiver's (tasks, opened with [OpenCRM]). Every write runs
// in a BEGIN IMMEDIATE transaction and no transaction is ever held while the
// worker talks to the receiver. The writes one process makes at the same
// time on one file commit together, one sync for many, with the outcome of
// running them one after the other (see [CommitStats]). Named [FaultPoint]s let a caller observe, or
// crash, the handoff exactly where a process could die.
package system
