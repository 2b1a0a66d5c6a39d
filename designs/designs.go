// Package designs holds the designs the harness can run: the handoff of
// package system, and (see Catalog) deliberately fragile variants that each
// take one shortcut real teams take. The harness must catch every fragile
// one; that is the evidence that it would catch the same mistake in the
// real thing.
package designs

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxlab/handoff/system"
)

// App is the application side of a design: approvals, outbox and worker.
type App interface {
	RecordApproval(ctx context.Context, caseID, title string) (string, error)
	DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error)
	Snapshot(ctx context.Context) (system.Snapshot, error)
	// Recover releases the leases of the design's worker: called when the
	// worker starts again after a crash.
	Recover(ctx context.Context) (int, error)
	// The phases of one delivery, for scenarios that interleave workers.
	ClaimNext(ctx context.Context, retention time.Duration) (system.Claim, system.Delivery, error)
	Send(ctx context.Context, c system.Claim, r system.Receiver) (int64, error)
	Settle(ctx context.Context, c system.Claim, taskID int64, sendErr error) (system.Delivery, error)
	// The operator actions.
	Requeue(ctx context.Context, key string, retention time.Duration, actor, reason string) error
	Reconcile(ctx context.Context, key string, remoteID int64, actor, reason string) error
	ReconcileAbsent(ctx context.Context, key, actor, reason string) error
	Audit(ctx context.Context) ([]system.AuditEntry, error)
	Stale(ctx context.Context, olderThan time.Duration) ([]system.Row, error)
	Close() error
}

// CRM is the receiver side of a design.
type CRM interface {
	system.Receiver
	Tasks(ctx context.Context) ([]system.Task, error)
	Close() error
}

// Design opens the two sides of one way of building the handoff.
type Design struct {
	// Name is how scenarios and the CLI call the design.
	Name string
	// Summary says in one line what the design does.
	Summary string
	// Doc, for a fragile design, says in one paragraph: the shortcut, why
	// someone writes it, the failure it causes, the invariant of SPEC that
	// catches it and the length of its minimal counterexample.
	Doc string
	// Failure is what a fragile design does to the work: DuplicateTask,
	// LostWork or ReplacedInstruction.
	Failure string
	// Invariant is the invariant that catches a fragile design after
	// shrinking, and MinimalSteps the length of that counterexample (not
	// counting the design line). MostSteps, when not zero, is the longest a
	// search may shrink it to: interleavings of workers give the shrinker
	// local minima that it cannot always leave.
	Invariant, MinimalSteps, MostSteps int
	// Workers says that the harness draws for it what only many workers
	// show: named workers' interleaved phases, time, a person's repairs
	// and options. A design of the single-worker catalog leaves it false,
	// so that its minimal counterexample stays one of a single worker.
	Workers bool
	// OwnReceiver says that the design's shortcut is in the receiver, so
	// that OpenCRM opens something else than system's CRM. Over HTTP the
	// receiver is crm.Server in front of system's CRM: such a design runs
	// in process only.
	OwnReceiver bool
	// OpenApp opens the app database at path.
	OpenApp func(ctx context.Context, path string, opts system.Options) (App, error)
	// OpenCRM opens the receiver database at path.
	OpenCRM func(ctx context.Context, path string, opts system.CRMOptions) (CRM, error)
}

// Handoff is the real design: package system as it is.
var Handoff = Design{
	Name:    "handoff",
	Summary: "transactional outbox, stable key on every attempt, idempotent durable receiver",
	Workers: true,
	OpenApp: openApp,
	OpenCRM: openCRM,
}

// All is every design: Handoff first, then the fragile catalog.
func All() []Design {
	return append([]Design{Handoff}, Fragile...)
}

// Lookup returns the design called name.
func Lookup(name string) (Design, error) {
	for _, d := range All() {
		if d.Name == name {
			return d, nil
		}
	}
	return Design{}, fmt.Errorf("designs: unknown design %q (see handoff designs)", name)
}
