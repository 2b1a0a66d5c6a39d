// Package system is the handoff itself: a transactional outbox on SQLite
// or PostgreSQL that records an approved action and its delivery intent in
// one transaction, workers that deliver each action with the same stable
// action key on every attempt, under leases and fences, and a durable
// receiver (the CRM simulation) that recognises a replayed key and
// answers with the task it already holds. The contract is docs/spec.md.
//
// A row of the outbox is [Pending], [Sent] or [Blocked]. [Outbox.DeliverOne]
// (or [Outbox.ClaimNext], [Outbox.Send] and [Outbox.Settle], the phases one
// worker runs, or a [Pipeline] of them) reports a [Delivery]: its [Result]
// ([Idle], [ResultSent], [ResultPending], [ResultBlocked], [ResultStale]) and
// the row's last error ([LastErrorTransient], [LastErrorConflict],
// [LastErrorBudgetExhausted], [LastErrorDeadline],
// [LastErrorRetentionExpired], [LastErrorRejected], or a cause starting
// with [LastErrorLocalPrefix]). A receiver ([Receiver]) answers a task id,
// or an error wrapping [ErrTransient] (with a [RetryHint] if it gave
// one), [ErrKeyConflict] or [ErrRejected]. Refused input is
// [ErrInvalidInput]; a database that refused a write is [ErrBusy] or
// [ErrFull], and one whose commit may or may not have happened
// [ErrCommitUnknown].
//
// The app database is a SQLite file or a PostgreSQL schema ([Open] takes a
// path or a postgres:// URL); the receiver's is a SQLite file ([OpenCRM]).
// No transaction is ever held while a worker talks to the receiver. On
// SQLite every write runs in a BEGIN IMMEDIATE transaction, and the writes
// one process makes at the same time on one file commit together, one
// sync for many, with the outcome of running them one after the other
// (see [CommitStats]). Named [FaultPoint]s let a caller observe, or crash,
// the handoff exactly where a process could die.
package system
