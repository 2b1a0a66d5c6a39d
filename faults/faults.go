// Package faults injects the faults of the spec's table into the handoff: crashes
// at the named fault points of package system (through its Hook), a
// faulty network between the worker and the receiver in process, and
// Proxy, a TCP proxy on loopback that does to each HTTP request what its
// caller sets. Every decision to inject comes from the caller (a rapid
// draw or a scenario line); nothing here is random.
package faults

import (
	"errors"
	"fmt"
)

// ErrCrash is returned by an operation the Injector crashed. The harness
// then restarts: every database handle is closed and reopened.
var ErrCrash = errors.New("faults: simulated crash")

// Kind names one fault. Its string is the token that injects it in a
// scenario (fault=<kind>), or the directive that does.
type Kind string

const (
	// CrashBetweenInserts crashes an approval between its two inserts.
	CrashBetweenInserts Kind = "crash-between-inserts"
	// Offline fails a request before the receiver acts: the receiver
	// is down (the connection refused). In a running schedule, for a
	// span of time (offline at= for=) or for every request of one case
	// (key fault=offline).
	Offline Kind = "offline"
	// LostReply lets the receiver act and loses its reply.
	LostReply Kind = "lost-reply"
	// CrashBeforeSend crashes the worker after it counted the attempt.
	CrashBeforeSend Kind = "crash-before-send"
	// CrashAfterReply crashes the worker after the reply, before recording it.
	CrashAfterReply Kind = "crash-after-reply"
	// CrashAfterRecord crashes a pipelined worker after it recorded the
	// answer of its last send (and the claim ahead that shares its
	// commit, if any), before the row it is sending leaves.
	CrashAfterRecord Kind = "crash-after-record"
	// CrashAfterClaimAhead crashes a pipelined worker after it claimed
	// the next row ahead, before the row it is sending leaves.
	CrashAfterClaimAhead Kind = "crash-after-claim-ahead"
	// DuplicateRequest delivers the same request twice, the second copy
	// arriving while the first is being processed where the receiver allows
	// it (see Window).
	DuplicateRequest Kind = "duplicate-request"
	// ForeignTask has another system put a task with ForeignPayload under
	// the key at the receiver just before the request arrives: a conflict
	// waiting to happen.
	ForeignTask Kind = "foreign-task"
	// Throttled answers with a transient failure and a not-before hint
	// (an HTTP 429 or 503 with Retry-After), before the receiver acts.
	// A running schedule says which status (status=429 or status=503).
	Throttled Kind = "throttled"
	// Refused has the receiver refuse the request for good (validation,
	// authorization), before it acts: over HTTP a 403 in a scenario, a
	// 400 in a running schedule.
	Refused Kind = "refused"
	// Restart closes every database handle and reopens it from its file
	// (scenario directive restart).
	Restart Kind = "restart"
	// AppBusy has another connection hold the app database's write lock
	// while the step runs, past the busy timeout of the step's writes.
	AppBusy Kind = "app-busy"
	// CRMBusy has another connection hold the receiver database's write
	// lock while the step runs.
	CRMBusy Kind = "crm-busy"
	// AppFull pins the app database at its size while the step runs: a
	// write that needs another page fails as on a full disk.
	AppFull Kind = "app-full"
	// CRMFull pins the receiver database at its size while the step runs.
	CRMFull Kind = "crm-full"
	// CommitLost ends the server connection of the step's write to an app
	// database in PostgreSQL while its COMMIT is due: the writer cannot
	// know whether the write committed (system.ErrCommitUnknown).
	CommitLost Kind = "commit-lost"
	// Answered has a hop in front of the receiver answer a status of its
	// own (a redirect, a 4xx, a 409, a 5xx), forwarding nothing: the
	// sender's reading of every answer the contract names. Over HTTP only.
	Answered Kind = "answered"
	// Mangled lets the receiver act and spoils its answer on the way back
	// (a body cut short, a gateway's 502, a 201 that is not the task):
	// the sender must not take it for a task. Over HTTP only.
	Mangled Kind = "mangled"
	// CommitReplyLost lets a COMMIT to an app database in PostgreSQL
	// reach the server, which commits it, and loses the reply with the
	// connection: the writer cannot know that the write committed
	// (system.ErrCommitUnknown). The step mode strikes the step's write;
	// the running mode, the next COMMIT of the process it strikes.
	CommitReplyLost Kind = "commit-reply-lost"
	// ProcessCrash stops one running process of the app at any instant,
	// every goroutine of it and every connection it holds (open
	// transactions lost), and boots it again.
	ProcessCrash Kind = "process-crash"
	// ConnectionReset cuts every database connection of one running
	// process; the process lives on.
	ConnectionReset Kind = "connection-reset"
	// LateReply lets the receiver act and sends its reply after the
	// sender gave up waiting (its timeout).
	LateReply Kind = "late-reply"
	// Paused holds the worker that sends for a while before its request
	// leaves, longer than a lease or a visibility timeout.
	Paused Kind = "paused"
	// InFlight has the receiver answer that a request with the same key
	// is still being processed (HTTP 409), before it acts.
	InFlight Kind = "in-flight"
	// KeyConflict has the receiver answer that it holds the key with
	// another payload (HTTP 422), before it acts, though no task holds
	// the key: the sender hears a conflict for good.
	KeyConflict Kind = "key-conflict"
	// FailedAfterActing lets the receiver act and answer a failure of
	// its own (HTTP 500): the task exists, the sender hears a transient
	// failure.
	FailedAfterActing Kind = "failed-after-acting"
)

// All is every fault, in the order of their declaration: a new Kind
// belongs here (TestAllKinds fails until it is), in injectedBy with the
// modes that inject it, and then in each mode's own table (see
// docs/extending.md).
var All = []Kind{CrashBetweenInserts, Offline, LostReply, CrashBeforeSend, CrashAfterReply, CrashAfterRecord, CrashAfterClaimAhead, DuplicateRequest, ForeignTask,
	Throttled, Refused, Restart, AppBusy, CRMBusy, AppFull, CRMFull, CommitLost, Answered, Mangled, CommitReplyLost,
	ProcessCrash, ConnectionReset, LateReply, Paused, InFlight, KeyConflict, FailedAfterActing}

// Mode is a mode of the harness that injects faults, or a set of them.
type Mode uint8

// The modes of the harness.
const (
	// StepMode runs a scenario's steps one at a time against the
	// reference model (package internal/sim).
	StepMode Mode = 1 << iota
	// RunningMode runs a design's own goroutines under a schedule of
	// timed events and answers (package internal/running).
	RunningMode
)

// injectedBy is the fault table: each fault, meaning what its doc
// comment says in every mode, with the modes that inject it. A fault
// both modes inject is one fault, done alike by both.
var injectedBy = map[Kind]Mode{
	CrashBetweenInserts: StepMode, CrashBeforeSend: StepMode, CrashAfterReply: StepMode, CrashAfterRecord: StepMode, CrashAfterClaimAhead: StepMode,
	DuplicateRequest: StepMode, ForeignTask: StepMode, Restart: StepMode, AppBusy: StepMode, CRMBusy: StepMode, AppFull: StepMode, CRMFull: StepMode,
	CommitLost: StepMode, Answered: StepMode, Mangled: StepMode,

	Offline: StepMode | RunningMode, LostReply: StepMode | RunningMode, Throttled: StepMode | RunningMode,
	Refused: StepMode | RunningMode, CommitReplyLost: StepMode | RunningMode,

	ProcessCrash: RunningMode, ConnectionReset: RunningMode, LateReply: RunningMode, Paused: RunningMode,
	InFlight: RunningMode, KeyConflict: RunningMode, FailedAfterActing: RunningMode,
}

// Injects reports whether mode m injects fault k.
func (m Mode) Injects(k Kind) bool { return injectedBy[k]&m != 0 }

// Kinds is every fault m injects, in All's order.
func (m Mode) Kinds() []Kind {
	var ks []Kind
	for _, k := range All {
		if m.Injects(k) {
			ks = append(ks, k)
		}
	}
	return ks
}

// DeliveryKinds are the faults a delivery step can carry.
// Their order is the order in which a shrinking rapid run prefers them.
var DeliveryKinds = []Kind{DuplicateRequest, ForeignTask, Offline, LostReply, CrashAfterReply, CrashBeforeSend}

// SendKinds are the faults a named worker's send step can carry: those on
// the network and at the receiver (a named worker's crash is a step of
// its own).
var SendKinds = []Kind{DuplicateRequest, ForeignTask, Offline, LostReply, Throttled, Refused}

// DatabaseKinds are the faults of a database itself, each held for the
// one step that carries it: busy (another connection holds the write
// lock) and full (the file cannot grow), of the app's and the CRM's, and
// the app database's connection lost during a COMMIT, before it reached
// the server or after it committed (PostgreSQL only).
var DatabaseKinds = []Kind{AppBusy, CRMBusy, AppFull, CRMFull, CommitLost, CommitReplyLost}

// ForeignPayload is the content of the task ForeignTask puts at the
// receiver; no approval's payload can equal it.
const ForeignPayload = `{"note":"other content, put here by another system"}`

// String returns the scenario token of k.
func (k Kind) String() string { return string(k) }

// ParseKind returns the Kind whose token is s, or an error naming the
// tokens that are allowed among those given.
func ParseKind(s string, allowed ...Kind) (Kind, error) {
	for _, k := range allowed {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("faults: unknown fault %q, want one of %v", s, allowed)
}
