package designs

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/outboxlab/handoff/system"
)

// Running is an outbox as it runs in production: its own workers, polls,
// timers and backoff, judged by what it did rather than step by step
// (docs/spec.md, "Verifying an outbox as it runs"). The harness boots it
// inside a testing/synctest bubble, where the time package is virtual,
// approves through it at drawn times, crashes and boots it again, answers
// its requests with drawn faults, and checks the history checks H1–H8
// against what its receiver saw.
type Running struct {
	// Name is how the catalog, the CLI and saved schedules call it.
	Name string
	// Summary says in one line what runs.
	Summary string
	// Doc, for a fragile running design, says the mistake, why someone
	// makes it, what it does to the work, and the check that catches it.
	Doc string
	// Failure, for a fragile design, is what it does to the work:
	// DuplicateTask or LostWork.
	Failure string
	// CaughtBy, for a fragile design, is the history check that catches it
	// (H1 to H8); AlsoCaughtBy the others its mistake breaks first on the
	// schedules that show it another way.
	CaughtBy     string
	AlsoCaughtBy []string
	// MinimalSize, for a fragile design, is how many lines (events,
	// answer rules, key rules) its minimal schedule holds: the one saved
	// in corpus/running-fragile. MostSize, when larger, is the most a
	// search's minimal schedule may hold: a search may end on a longer
	// one that no single change makes smaller, as the step catalog's
	// MostSteps allows.
	MinimalSize, MostSize int
	// Budget is the most requests the outbox sends for one key before it
	// gives up (blocks or discards the key); 0 means it has none, and H4
	// then checks no request count.
	Budget int
	// Counts says what the outbox counts toward Budget: attempts before
	// each send (the zero value), errors after a send that failed, or
	// nothing. H4 and H7 judge what it declares (docs/verify.md, "What a
	// design declares").
	Counts Counting
	// Holds says how a job stays with the worker that took it: a lease
	// (the zero value), a visibility timeout, or a row lock held for the
	// whole job.
	Holds Holding
	// Replicas is the most processes of the design that may run side by
	// side on the one database; 0 means as many as a schedule draws (up
	// to 3). Say 1 only for an outbox that refuses to run twice.
	Replicas int
	// Lease is how long a job stays with the worker that took it before
	// another may take it: a lease, a visibility timeout, a rescue
	// horizon. The harness pauses some workers for longer (0 means 30 s).
	Lease time.Duration
	// Settle is how long, at most, the outbox takes to finish every key
	// once every fault has healed: its budget's backoff and send timeouts,
	// and its leases. The harness runs virtual time that long past the
	// last fault (and stops early once every key has been final for a
	// minute).
	Settle time.Duration
	// SQLiteOnly says the outbox runs only on SQLite.
	SQLiteOnly bool
	// Unchecked lists what of the outbox's time-based behaviour a run
	// cannot judge: the bubble's clock is virtual, and a database that
	// stamps times itself (now() in SQL, a default of CURRENT_TIMESTAMP)
	// reads the real one. A library that takes a clock (River's time
	// generator) is given the virtual one; where it takes none, say here
	// what reads the database's clock, and VerifyRunning says it is not
	// checked.
	Unchecked []string
	// Boot starts the app as a process does when it boots: it opens the
	// app database (through p's connections, which a crash cuts), starts
	// the workers with their production settings, sending through
	// p.Receiver, and returns without waiting for them. ctx is cancelled
	// when the process crashes or the run ends.
	Boot func(ctx context.Context, p Process) (Booted, error)
}

// Process is what one boot of a Running design gets from the harness:
// where its database is, the connections to it, and the receiver. A
// crash cuts every connection the process made, at once (open
// transactions are lost), refuses its new ones, and drops its requests.
type Process interface {
	// Backend is "sqlite" or "postgres".
	Backend() string
	// Database is the app database: a SQLite file's path, or a
	// PostgreSQL URL whose schema (schema=) is the run's own.
	Database() string
	// WrapSQLite wraps the connector of a database/sql handle on the
	// SQLite file (system.Options.Harness.WrapSQLite takes it).
	WrapSQLite(driver.Connector) driver.Connector
	// Dial connects to PostgreSQL, in place of a dial of the URL's host
	// (system.Options.Dial; pgx's DialFunc).
	Dial(ctx context.Context, network, addr string) (net.Conn, error)
	// Receiver is the harness's receiver, reached in memory. Its answers
	// carry the spec's sentinels (system.ErrTransient with a RetryHint,
	// system.ErrRejected); a reply lost or too slow is ErrTransient.
	Receiver() system.Receiver
	// ReceiverFor is Receiver as the worker named worker reaches it: the
	// report draws that worker's requests in a lane of its own.
	ReceiverFor(worker string) system.Receiver
	// HTTPClient is a client whose requests reach the same receiver over
	// HTTP, in memory, as the worker named worker's ("" for none): POST
	// ReceiverURL()/tasks with the key in Idempotency-Key, answered with
	// the spec's status classes and Retry-After, the drawn faults acting
	// on the exchange (a reply lost is a connection reset after the
	// receiver acted; a slow answer comes after the request's deadline).
	// To keep a client of your own (its timeouts, its middleware), set
	// its Transport to this client's. A POST without Idempotency-Key
	// creates a task every time, as a receiver whose key is optional
	// does.
	HTTPClient(worker string) *http.Client
	// ReceiverURL is the base URL HTTPClient's requests go to.
	ReceiverURL() string
	// Replica is which of the processes running side by side on the one
	// database this is, from 1. A boot names its workers after it, so
	// that no two live workers share a name (a worker that boots releases
	// the leases held under its own name).
	Replica() int
}

// Booted is a running process of a Running design.
type Booted interface {
	// Approve records an approval in the app's real transaction and
	// returns its action key and payload as the app derives them; nil
	// means it committed, an error that it did not, or that its outcome
	// is unknown (a lost COMMIT's reply).
	Approve(ctx context.Context, caseID, title string) (key, payload string, err error)
	// Read reads every key the outbox shows, and where it stands.
	Read(ctx context.Context) (map[string]RunningRow, error)
	// Stop stops every goroutine the boot started and closes what it
	// opened, and returns once they are gone. After a crash its
	// connections are cut already: Stop must not wait for them.
	Stop() error
}

// Counting is what a running outbox counts toward its budget.
type Counting string

// What an outbox may count.
const (
	// CountsAttempts: one is added before each send (at the claim), so a
	// crash during a send spends its try. H4: the attempts shown cover
	// every request that left, and the receiver sees at most Budget
	// requests for a key.
	CountsAttempts Counting = "attempts"
	// CountsErrors: one is added when a send fails (the handler returned
	// an error), so a crash during a send is a free retry. H4: the
	// receiver answers at most Budget failures for a key; requests cut
	// by a crash are not bounded.
	CountsErrors Counting = "errors"
	// CountsNothing: no count is kept where the harness can read it. H4
	// checks no count; H7 takes the requests that left as the tries.
	CountsNothing Counting = "nothing"
)

// Holding is how a job stays with the worker that took it.
type Holding string

// How an outbox may hold a job.
const (
	// HeldByLease: a lease with an expiry (Lease); another worker may
	// take the job once it ran out. The harness pauses workers past it.
	HeldByLease Holding = "lease"
	// HeldByVisibility: a queue's visibility timeout (Lease); the same
	// as a lease for the checks.
	HeldByVisibility Holding = "visibility timeout"
	// HeldByLock: a row lock (SELECT … FOR UPDATE) held for the whole
	// job; no other worker takes the job while its holder lives, so a
	// paused worker delays it, and the horizon waits out the pause.
	HeldByLock Holding = "lock"
)

// RowState is where a key stands in a running outbox, as Read shows it.
type RowState string

// The states Read may show. A key Read does not show at all is gone: a
// job deleted once done.
const (
	// RowPending: not yet delivered; the outbox will try (again).
	RowPending RowState = "pending"
	// RowSent: the receiver's task is recorded (TaskID).
	RowSent RowState = "sent"
	// RowDone: delivered, and the task id not kept.
	RowDone RowState = "done"
	// RowBlocked: the outbox gave up and shows the key for a person, with
	// its Reason.
	RowBlocked RowState = "blocked"
	// RowDiscarded: the outbox gave up and keeps the key, with its
	// Reason, where a person can find it (a dead-letter table, say).
	RowDiscarded RowState = "discarded"
)

// RunningRow is one key of a running outbox, as Read shows it.
type RunningRow struct {
	State  RowState
	TaskID int64 // for RowSent
	// Attempts is how many sends the outbox counted for the key, or -1
	// when it does not keep them.
	Attempts int
	// Reason says why a blocked or discarded key was given up.
	Reason string
}

// Final reports whether the row's state is one the outbox leaves alone.
func (r RunningRow) Final() bool { return r.State != RowPending }

// ErrRunning is a running design that cannot run: a part missing.
var ErrRunning = errors.New("designs: invalid running design")

// Check reports whether r can run, as an ErrRunning error.
func (r Running) Check() error {
	switch {
	case r.Name == "":
		return fmt.Errorf("%w: a running design needs a Name", ErrRunning)
	case r.Boot == nil:
		return fmt.Errorf("%w %s: it needs Boot", ErrRunning, r.Name)
	case r.Budget < 0:
		return fmt.Errorf("%w %s: Budget is %d, want 0 (none) or more", ErrRunning, r.Name, r.Budget)
	case r.Lease < 0:
		return fmt.Errorf("%w %s: Lease is %v, want 0 (30 s) or more", ErrRunning, r.Name, r.Lease)
	case r.Counts != "" && r.Counts != CountsAttempts && r.Counts != CountsErrors && r.Counts != CountsNothing:
		return fmt.Errorf("%w %s: Counts is %q, want %q, %q or %q", ErrRunning, r.Name, r.Counts, CountsAttempts, CountsErrors, CountsNothing)
	case r.Holds != "" && r.Holds != HeldByLease && r.Holds != HeldByVisibility && r.Holds != HeldByLock:
		return fmt.Errorf("%w %s: Holds is %q, want %q, %q or %q", ErrRunning, r.Name, r.Holds, HeldByLease, HeldByVisibility, HeldByLock)
	case r.Replicas < 0:
		return fmt.Errorf("%w %s: Replicas is %d, want 0 (up to 3) or more", ErrRunning, r.Name, r.Replicas)
	case r.Settle <= 0:
		return fmt.Errorf("%w %s: Settle is %v, want how long it takes to finish every key once faults heal", ErrRunning, r.Name, r.Settle)
	}
	return nil
}

// AllRunning is every running design: the handoff's pool (in memory and
// over HTTP), the plain
// polling worker, then the fragile running catalog.
func AllRunning() []Running {
	return append([]Running{Pool, PoolHTTP, Plain}, RunningFragile...)
}

// LookupRunning returns the running design called name.
func LookupRunning(name string) (Running, error) {
	for _, r := range AllRunning() {
		if r.Name == name {
			return r, nil
		}
	}
	return Running{}, fmt.Errorf("designs: unknown running design %q (see handoff designs)", name)
}
