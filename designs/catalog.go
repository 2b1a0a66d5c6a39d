package designs

import (
	"context"

	"github.com/outboxlab/handoff/system"
)

// What a fragile design does to the work.
const (
	DuplicateTask       = "duplicate task"
	LostWork            = "lost work"
	ReplacedInstruction = "silently replaced instruction"
)

// openApp opens the real outbox; openCRM the real receiver.
func openApp(ctx context.Context, path string, opts system.Options) (App, error) {
	o, err := system.Open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return outbox{o}, nil
}

// outbox is package system's outbox as a design's App. Its claims and
// requeues take the receiver's retention from the options it was opened
// with, as the harness gives every design; a worker of the handoff's own
// asks its receiver (see system.Retainer).
type outbox struct{ *system.Outbox }

// ClaimNext claims the next eligible row (see system.Outbox.ClaimNext).
func (o outbox) ClaimNext(ctx context.Context) (system.Claim, system.Delivery, error) {
	return o.Outbox.ClaimNext(ctx, o.Options().Retention)
}

// Pipeline returns a pipelined worker that delivers to r (see
// system.Outbox.Pipeline).
func (o outbox) Pipeline(r system.Receiver) (Pipe, error) {
	p, err := o.Outbox.Pipeline(r)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Requeue makes a blocked row pending again (see system.Outbox.Requeue).
func (o outbox) Requeue(ctx context.Context, key, actor, reason string) error {
	return o.Outbox.Requeue(ctx, key, o.Options().Retention, actor, reason)
}

func openCRM(ctx context.Context, path string, opts system.CRMOptions) (CRM, error) {
	return system.OpenCRMWith(ctx, path, opts)
}

// wrapApp opens the real outbox and hands it to wrap.
func wrapApp(wrap func(*system.Outbox, system.Options) App) func(context.Context, string, system.Options) (App, error) {
	return func(ctx context.Context, path string, opts system.Options) (App, error) {
		o, err := system.Open(ctx, path, opts)
		if err != nil {
			return nil, err
		}
		return wrap(o, opts), nil
	}
}

// openNaive opens the real outbox behind a naiveWorker with w's flags.
// Each handle gets a worker of its own: handles open at once (the lanes
// of an exploration) share none.
func openNaive(flags naiveWorker) func(context.Context, string, system.Options) (App, error) {
	return wrapApp(func(o *system.Outbox, opts system.Options) App {
		w := flags
		w.Outbox, w.opts = o, opts
		return w
	})
}

// Fragile is the catalog of fragile designs, each the real handoff with
// exactly one shortcut that real teams take.
var Fragile = []Design{
	{
		Name:    "two-writes",
		Summary: "approval and outbox row in two transactions",
		Doc: "The approval is committed, then the outbox row in a second transaction: it is the obvious " +
			"code when the approval already exists as a table and the outbox is added later. A crash between " +
			"the two leaves an approved action that nothing will ever deliver or flag (lost work). Invariant 2 " +
			"catches it in one step: an approval with no outbox row.",
		Failure: LostWork, Invariant: 2, MinimalSteps: 1,
		OpenApp: wrapApp(func(o *system.Outbox, opts system.Options) App { return twoWrites{o, opts} }),
		OpenCRM: openCRM,
	},
	{
		Name:    "fresh-key-per-attempt",
		Summary: "every attempt sends a newly made key",
		Doc: "Every attempt sends a new idempotency key (here the key plus the attempt number, so that runs " +
			"stay deterministic): it looks right because each request is unique. After a lost reply the retry " +
			"makes a second task (duplicate task). Invariant 3 catches it at the first send, in two steps: the " +
			"task the row names carries a key that no approval has, so nobody could reconcile it by key.",
		Failure: DuplicateTask, Invariant: 3, MinimalSteps: 2,
		OpenApp: wrapApp(func(o *system.Outbox, _ system.Options) App { return freshKey{o} }),
		OpenCRM: openCRM,
	},
	{
		Name:    "non-idempotent-receiver",
		Summary: "the receiver ignores the key and always creates a task",
		Doc: "The receiver creates a task for every request and stores the key only as data: fine until " +
			"anything is retried. A request delivered twice makes two tasks (duplicate task). Invariant 1 " +
			"catches it in two steps: an approval and a delivery whose request arrives twice.",
		Failure: DuplicateTask, Invariant: 1, MinimalSteps: 2, OwnReceiver: true,
		OpenApp: openApp,
		OpenCRM: func(ctx context.Context, path string, opts system.CRMOptions) (CRM, error) {
			c, err := openPlainCRM(ctx, path, opts.Durability)
			if err != nil {
				return nil, err
			}
			return nonIdempotent{c}, nil
		},
	},
	{
		Name:    "timeout-means-sent",
		Summary: "a transient failure is recorded as sent",
		Doc: "The sender treats a timeout as success, because the CRM usually did create the task. When it did " +
			"not (offline), the row says sent and no task exists (lost work). Invariant 3 catches it in two " +
			"steps: a sent row whose remote id names no task.",
		Failure: LostWork, Invariant: 3, MinimalSteps: 2,
		OpenApp: wrapApp(func(o *system.Outbox, _ system.Options) App { return timeoutMeansSent{o} }),
		OpenCRM: openCRM,
	},
	{
		Name:    "drop-on-error",
		Summary: "a transient failure discards the action",
		Doc: "A failed send is logged and the row deleted, so that a poisoned message cannot block the queue. " +
			"The action is gone and nobody is told (lost work). Invariant 2 catches it in two steps: an " +
			"approval with no outbox row.",
		Failure: LostWork, Invariant: 2, MinimalSteps: 2,
		OpenApp: wrapApp(func(o *system.Outbox, _ system.Options) App { return dropOnError{o} }),
		OpenCRM: openCRM,
	},
	{
		Name:    "count-after-send",
		Summary: "the attempt is counted only with the answer",
		Doc: "The worker counts an attempt when it records the answer, one write instead of two. A crash after " +
			"the reply is never counted: the receiver sees more sends than the attempts say, and a worker that " +
			"keeps crashing never runs out of budget. Invariant 4 catches it in two steps.",
		Failure: DuplicateTask, Invariant: 4, MinimalSteps: 2,
		OpenApp: openNaive(naiveWorker{countAfterSend: true}),
		OpenCRM: openCRM,
	},
	{
		Name:    "transaction-across-send",
		Summary: "one local transaction from the claim, across the send, to the record",
		Doc: "The claim, the send and the record share one transaction, which looks atomic. A crash after the " +
			"reply rolls the attempt back although the receiver acted, and the write lock is held for the whole " +
			"network call. Invariant 4 catches it in two steps: a send the attempts do not cover.",
		Failure: DuplicateTask, Invariant: 4, MinimalSteps: 2,
		OpenApp: openNaive(naiveWorker{txAcrossSend: true}),
		OpenCRM: openCRM,
	},
	{
		Name:    "overwrite-on-reapproval",
		Summary: "approving a case again replaces its payload",
		Doc: "Approving a case again upserts the new title, because the newest instruction should win. The " +
			"approved instruction is silently replaced, and a row already sent no longer matches its task " +
			"(silently replaced instruction). Invariant 6 catches it in two steps: the second approval is " +
			"accepted where the spec refuses it.",
		Failure: ReplacedInstruction, Invariant: 6, MinimalSteps: 2,
		OpenApp: wrapApp(func(o *system.Outbox, opts system.Options) App { return overwrite{o, opts} }),
		OpenCRM: openCRM,
	},
	{
		Name:    "receiver-ignores-payload",
		Summary: "the receiver answers a reused key with its task, whatever the payload",
		Doc: "The receiver treats every known key as a replay without comparing the content, the cheapest " +
			"idempotency check. When another system already put other content under the key, the request is " +
			"answered with that task: the row says sent, and the task says something else (silently replaced " +
			"instruction). Invariant 3 catches it in two steps: a sent row naming a task with other content.",
		Failure: ReplacedInstruction, Invariant: 3, MinimalSteps: 2, OwnReceiver: true,
		OpenApp: openApp,
		OpenCRM: func(ctx context.Context, path string, opts system.CRMOptions) (CRM, error) {
			c, err := system.OpenCRMWith(ctx, path, opts)
			if err != nil {
				return nil, err
			}
			return ignoresPayload{c}, nil
		},
	},
	{
		Name:    "sent-before-send",
		Summary: "the row is marked sent before the request goes out",
		Doc: "The row is marked sent (with a placeholder id) before the request, so that no other worker " +
			"picks it up. A crash before the send leaves a sent row and no task (lost work). Invariant 3 " +
			"catches it in two steps.",
		Failure: LostWork, Invariant: 3, MinimalSteps: 2,
		OpenApp: openNaive(naiveWorker{sentBeforeSend: true}),
		OpenCRM: openCRM,
	},
	{
		Name:    "no-budget",
		Summary: "the worker retries without an attempt budget",
		Doc: "The worker retries a failing row forever, because the CRM will surely come back. A row that " +
			"cannot succeed is never blocked for a person, and every retry of a lost reply is one more request. " +
			"Invariant 6 catches it in four steps: the third failed attempt leaves the row pending where the spec " +
			"blocks it.",
		Failure: LostWork, Invariant: 6, MinimalSteps: 4,
		OpenApp: openNoBudget,
		OpenCRM: openCRM,
	},
	{
		Name:    "check-then-create",
		Summary: "the receiver looks the key up and inserts in separate transactions",
		Doc: "The receiver checks for the key, then inserts in a second transaction, with no unique " +
			"constraint: correct one request at a time. A duplicate request arriving between the lookup and the " +
			"insert makes a second task (duplicate task). Invariant 1 catches it in two steps.",
		Failure: DuplicateTask, Invariant: 1, MinimalSteps: 2, OwnReceiver: true,
		OpenApp: openApp,
		OpenCRM: func(ctx context.Context, path string, opts system.CRMOptions) (CRM, error) {
			c, err := openPlainCRM(ctx, path, opts.Durability)
			if err != nil {
				return nil, err
			}
			return checkThenCreate{c}, nil
		},
	},
	{
		Name:    "no-fencing",
		Summary: "a settle writes whatever happened since its claim",
		Doc: "The settle checks that the row is still pending, not that it still carries the claim's fence: " +
			"a worker paused past its lease (a long GC, a stopped process) settles over the worker that claimed " +
			"the row after it, and what that worker recorded, or is about to, is overwritten. Invariant 8 " +
			"catches it in six steps: a worker's settle after its lease ran out and another delivery claimed " +
			"the row writes where the spec says stale.",
		Failure: LostWork, Invariant: 8, MinimalSteps: 6, MostSteps: 9, Supports: phased,
		OpenApp: wrapApp(func(o *system.Outbox, _ system.Options) App { return noFencing{outbox{o}} }),
		OpenCRM: openCRM,
	},
	{
		Name:    "no-lease",
		Summary: "a claim ignores other workers' leases",
		Doc: "The claim takes the oldest pending row whoever holds it: fine with one worker. With two, both " +
			"claim the same row, both send it, and the attempt budget is spent twice as fast. Invariant 6 " +
			"catches it in three steps: a delivery claims the row a worker holds a live lease on.",
		Failure: DuplicateTask, Invariant: 6, MinimalSteps: 3, Supports: phased,
		OpenApp: wrapApp(func(o *system.Outbox, _ system.Options) App { return leaseClaims{outbox{o}, noLease} }),
		OpenCRM: openCRM,
	},
	{
		Name:    "lease-never-expires",
		Summary: "a lease holds until its worker settles, however long",
		Doc: "The claim skips every leased row, expired or not, to be safe from double sends. A worker that " +
			"dies holding a lease and never comes back leaves its row pending for good: lost work that no " +
			"worker will ever pick up. Invariant 7 catches it in three steps: after a worker's claim, the " +
			"worker that converges once the lease ran out goes idle with the row still pending.",
		Failure: LostWork, Invariant: 7, MinimalSteps: 3, Supports: phased,
		OpenApp: wrapApp(func(o *system.Outbox, _ system.Options) App { return leaseClaims{outbox{o}, leaseForever} }),
		OpenCRM: openCRM,
	},
	{
		Name:    "watermark-settle",
		Summary: "a settle marks sent every older row still in flight, as a stream commits its offset",
		Doc: "The workers settle as a stream consumer commits its offset: an answer that brought a task marks " +
			"sent, in the same write, every older row a worker still holds a live lease on, to save them a " +
			"commit each when their answers come. A row whose send has not answered, or never will, is marked " +
			"sent all the same: when that send fails, or its worker dies, nothing retries it (lost work). " +
			"Invariant 3 catches it in four steps: a worker claims the older of two rows, and a delivery of " +
			"the newer marks it sent while the receiver has no task for it.",
		Failure: LostWork, Invariant: 3, MinimalSteps: 4, Supports: phased,
		OpenApp: wrapApp(func(o *system.Outbox, _ system.Options) App { return watermarkSettle{outbox{o}} }),
		OpenCRM: openCRM,
	},
	{
		Name:    "eager-pipeline",
		Summary: "a pipelined worker claims ahead on every send, whatever the receiver's speed",
		Doc: "A worker pipelines its deliveries, as handoff work does, but claims the next row while it sends " +
			"every row, so that it never waits for a claim. When the receiver turns slow, the row claimed ahead " +
			"waits out the slow answer; a send that starts past its claim's window is refused with nothing sent, " +
			"and the row's attempts run out without the receiver ever seeing it (lost work). Invariant 6 catches " +
			"it in two steps: on its first send the worker claims ahead, where the spec's Pipeline waits for a " +
			"fast answer first (a crash after that claim shows the row it holds); or, in three, it claims ahead " +
			"after a slow answer.",
		Failure: LostWork, Invariant: 6, MinimalSteps: 2, MostSteps: 3, Supports: Everything,
		OpenApp: wrapApp(func(o *system.Outbox, _ system.Options) App { return eagerOutbox{outbox{o}} }),
		OpenCRM: openCRM,
	},
	{
		Name:    "ignore-retention",
		Summary: "retries go on past the receiver's memory of keys",
		Doc: "The worker retries with the same key as long as the budget allows, trusting the receiver to " +
			"recognise it. A receiver that forgets keys after its retention window takes a late retry for a new " +
			"request and creates a second task (duplicate task). Invariant 6 catches it in five steps: a " +
			"claim past first_claimed_at + retention − send timeout sends where the spec blocks the row. When " +
			"the receiver has already forgotten the key at that step, the second task breaks invariant 1 " +
			"there too, and invariant 1 is reported.",
		Failure: DuplicateTask, Invariant: 6, OrInvariant: 1, MinimalSteps: 5, Supports: phased,
		OpenApp: wrapApp(func(o *system.Outbox, _ system.Options) App { return ignoreRetention{outbox{o}} }),
		OpenCRM: openCRM,
	},
	{
		Name:    "requeue-fresh-key",
		Summary: "a person's requeue sends the action under a new key",
		Doc: "Requeueing a blocked action records it again under a new key, so that nothing the receiver " +
			"holds can get in the way. If the first attempts did create a task, the requeued one creates a " +
			"second (duplicate task), and no key links the two. Invariant 6 catches it in three steps: the " +
			"requeue makes a second approval and outbox row where the spec starts the same row afresh.",
		Failure: DuplicateTask, Invariant: 6, MinimalSteps: 3, MostSteps: 6, Supports: phased,
		OpenApp: wrapApp(func(o *system.Outbox, _ system.Options) App { return freshKeyRequeue{outbox{o}} }),
		OpenCRM: openCRM,
	},
	{
		Name:    "unfenced-operator",
		Summary: "a person's requeue leaves the fence where it was",
		Doc: "The requeue resets the row but does not move its fence: a worker whose claim is older than the " +
			"person's decision still finds its fence and settles over it, blocking or marking sent a row the " +
			"person just started afresh. Invariant 6 catches it in three steps: the requeued row keeps the " +
			"fence the spec moves on.",
		Failure: LostWork, Invariant: 6, MinimalSteps: 3, MostSteps: 6, Supports: phased,
		OpenApp: wrapApp(func(o *system.Outbox, _ system.Options) App { return unfencedOperator{outbox{o}} }),
		OpenCRM: openCRM,
	},
}

// phased is what the fragile designs of many workers support: every
// capability but pipelined workers, whose Pipeline is the real one
// (their shortcut is in the phases).
var phased = func() Capabilities {
	c := Everything
	c.Pipeline = false
	return c
}()

// The real outbox has every capability's interface.
var _ interface {
	App
	Leaser
	Phases
	Pipeliner
	Operator
} = outbox{}
