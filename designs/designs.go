// Package designs holds the designs the harness can run: the handoff of
// package system, and (see Catalog) deliberately fragile variants that each
// take one shortcut real teams take. The harness must catch every fragile
// one; that is the evidence that it would catch the same mistake in the
// real thing. A design of your own, from any module, is a Design too: an
// App (and the interfaces of the Capabilities it declares) and a CRM,
// which handoff.Verify checks in your go test.
package designs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/outboxlab/handoff/system"
)

// App is the application side of a design: approvals, outbox and the
// default worker, one delivery at a time. Every design has it; the
// interfaces below add what its Capabilities declare. Errors carry
// package system's sentinels, which the harness compares with the
// model's predictions: an approval refused for its input wraps
// system.ErrInvalidInput, one whose key holds another payload
// system.ErrKeyConflict. The app passes every system.FaultPoint it has
// (between the approval's inserts, before the send, after the reply)
// through system.Options.Harness.Hook, and stops where the hook returns an
// error, as a process that died there would, returning that error (the
// harness knows where it struck, and which row the delivery worked on).
//
// DeliverOne reports what the spec's table says (see package system's
// doc): Idle; ResultSent with the task id; ResultPending or ResultBlocked
// with the row's last error; and returns any other error of the send,
// the row left pending with its attempt counted.
type App interface {
	RecordApproval(ctx context.Context, caseID, title string) (string, error)
	DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error)
	Snapshot(ctx context.Context) (system.Snapshot, error)
	Close() error
}

// Leaser is the App of a design whose restarts release (RestartReleases):
// a worker that starts again after a crash first releases the leases it
// held (see system.Outbox.Recover).
type Leaser interface {
	Recover(ctx context.Context) (int, error)
}

// Phases is the App of a design that runs many workers: the phases of
// one delivery, which the harness interleaves between named workers.
type Phases interface {
	ClaimNext(ctx context.Context) (system.Claim, system.Delivery, error)
	Send(ctx context.Context, c system.Claim, r system.Receiver) (int64, error)
	Settle(ctx context.Context, c system.Claim, taskID int64, sendErr error) (system.Delivery, error)
}

// Pipeliner is the App of a design whose workers run pipelined: Pipeline
// returns a Pipe that delivers this handle's rows to r (see
// system.Outbox.Pipeline), passing system.PointPipelineRecorded and
// system.PointPipelineClaimedAhead through system.Options.Harness.Hook in its
// background.
type Pipeliner interface {
	Pipeline(r system.Receiver) (Pipe, error)
}

// Pipe is a pipelined worker (see system.Pipeline): Next returns the next
// delivery it made, Flush what is left.
type Pipe interface {
	Next(ctx context.Context) (system.Delivery, error)
	Flush(ctx context.Context) (system.Delivery, bool, error)
}

// Operator is the App of a design that lets a person repair rows: the
// operator actions, their audit log, and what needs a person.
type Operator interface {
	Requeue(ctx context.Context, key, actor, reason string) error
	Reconcile(ctx context.Context, key string, remoteID int64, actor, reason string) error
	ReconcileAbsent(ctx context.Context, key, actor, reason string) error
	Audit(ctx context.Context) ([]system.AuditEntry, error)
	Stale(ctx context.Context, olderThan time.Duration) ([]system.Row, error)
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
	// someone writes it, the failure it causes, the invariant of the spec that
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
	// OrInvariant, when not zero, is an invariant that the counterexample's
	// last step may break beside Invariant, and that is checked first: a
	// search that shrinks to such a step reports it (see
	// handoff.Violation.AsDocumented).
	OrInvariant int
	// Supports says what the design does beyond one worker without a
	// clock; the harness draws nothing else for it, and compares nothing
	// else with the model (see Capabilities).
	Supports Capabilities
	// OwnReceiver says that the design's shortcut is in the receiver, so
	// that OpenCRM opens something else than system's CRM. Over HTTP the
	// receiver is crm.Server in front of system's CRM: such a design runs
	// in process only.
	OwnReceiver bool
	// OpenApp opens the app database at path, with the clock, the hook,
	// the worker's name and the options of opts (which have their
	// defaults: opts.RetryWait computes a transient failure's backoff as
	// the harness draws it). On SQLite path is a file's; on PostgreSQL a
	// URL whose schema exists (system.SplitPostgres gives the URL to
	// connect with and the schema). The harness gives every sequence a
	// path of its own and opens it again on every restart, several times
	// at once for several workers. Its App implements the interfaces that
	// Supports asks for (see CheckApp).
	OpenApp func(ctx context.Context, path string, opts system.Options) (App, error)
	// OpenCRM opens the receiver database at path: a receiver that starts
	// empty on a new path (task ids from 1, as the spec's receiver counts) and
	// keeps what it holds across a restart on the same path.
	OpenCRM func(ctx context.Context, path string, opts system.CRMOptions) (CRM, error)
}

// ErrDesign is a design that cannot run: it lacks a part, or its
// capabilities or its app do not hold together.
var ErrDesign = errors.New("designs: invalid design")

// Handoff is the real design: package system as it is, whose Pipeline
// records and claims ahead in one commit.
var Handoff = Design{
	Name:    "handoff",
	Summary: "transactional outbox, stable key on every attempt, idempotent durable receiver",
	Supports: func() Capabilities {
		c := Everything
		c.PipelineOneCommit = true
		return c
	}(),
	OpenApp: openApp,
	OpenCRM: openCRM,
}

// Check reports whether d can run: it has a name, both openers, and
// capabilities that hold together (each has the capabilities it needs),
// as an ErrDesign error.
func (d Design) Check() error {
	switch {
	case d.Name == "":
		return fmt.Errorf("%w: a design needs a Name", ErrDesign)
	case d.OpenApp == nil || d.OpenCRM == nil:
		return fmt.Errorf("%w %s: it needs both OpenApp and OpenCRM", ErrDesign, d.Name)
	}
	if p := d.Supports.problems(); p != "" {
		return fmt.Errorf("%w %s: %s", ErrDesign, d.Name, p)
	}
	return nil
}

// CheckApp reports whether app, opened by d, implements what d's
// capabilities ask for.
func (d Design) CheckApp(app App) error {
	var missing []string
	first := ""
	for _, i := range []struct {
		name, methods string
		needed, has   bool
	}{
		{"Leaser", "Recover", d.Supports.RestartReleases, is[Leaser](app)},
		{"Phases", "ClaimNext, Send, Settle", d.Supports.Workers, is[Phases](app)},
		{"Pipeliner", "Pipeline", d.Supports.Pipeline, is[Pipeliner](app)},
		{"Operator", "Requeue, Reconcile, ReconcileAbsent, Audit, Stale", d.Supports.Operator, is[Operator](app)},
	} {
		if i.needed && !i.has {
			missing = append(missing, fmt.Sprintf("designs.%s (%s)", i.name, i.methods))
			first = cmp.Or(first, i.name)
		}
	}
	if len(missing) > 0 {
		value := fmt.Sprintf("%T{}", app)
		if reflect.TypeOf(app).Kind() == reflect.Pointer {
			value = fmt.Sprintf("(%T)(nil)", app)
		}
		return fmt.Errorf("%w %s: its app (%T) does not implement %s, which its capabilities need (var _ designs.%s = %s has the compiler check it)",
			ErrDesign, d.Name, app, strings.Join(missing, " and "), first, value)
	}
	return nil
}

// is reports whether app implements I.
func is[I any](app App) bool {
	_, ok := app.(I)
	return ok
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
	return Design{}, fmt.Errorf("designs: unknown design %q (see handoff-sim designs)", name)
}

// WithReceiver is the real handoff in front of a receiver of your own (an
// adapter in front of your CRM's API, or a client of a staging CRM): the
// design that verifies that receiver against the spec's receiver invariants.
// open opens it at a path of its own for every sequence, as OpenCRM says;
// a receiver that forgets keys after opts.Retention may set
// Supports.Retention on the design returned.
func WithReceiver(name, summary string, open func(ctx context.Context, path string, opts system.CRMOptions) (CRM, error)) Design {
	supports := Handoff.Supports
	supports.Retention = false
	return Design{Name: name, Summary: summary, Supports: supports, OwnReceiver: true, OpenApp: openApp, OpenCRM: open}
}
