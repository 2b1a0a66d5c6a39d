package outbox

import (
	"context"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
)

// Compile-time checks that App implements every interface its
// capabilities ask for.
var (
	_ designs.App       = (*App)(nil)
	_ designs.Leaser    = (*App)(nil)
	_ designs.Phases    = (*App)(nil)
	_ designs.Operator  = (*App)(nil)
	_ designs.Pipeliner = (*App)(nil)
)

// Supports is what the goqite outbox declares: goqite's timeouts on the
// clock, the app's time budget, leases (goqite's visibility timeout,
// with an owner and a fence of the app's own, released when a worker
// starts again), several workers, pipelined ones too, a person's repairs
// and a receiver's retention. goqite receives the oldest visible message,
// as the spec's claim takes the oldest eligible row: no DueFirst.
var Supports = designs.Everything

// Design is variant v of the goqite outbox as the harness runs it, named
// name, in front of the handoff's durable receiver, on clock (see Clock;
// the harness's clock is virtual).
func Design(name string, v Variant, clock Clock) designs.Design {
	return designs.Design{
		Name:     name,
		Summary:  "goqite queue: approval and message in one transaction, visibility timeout as lease",
		Supports: Supports,
		OpenApp: func(ctx context.Context, path string, opts system.Options) (designs.App, error) {
			return Open(ctx, path, opts, v, clock)
		},
		OpenCRM: func(ctx context.Context, path string, opts system.CRMOptions) (designs.CRM, error) {
			return system.OpenCRMWith(ctx, path, opts)
		},
	}
}
