package riveroutbox

import (
	"context"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
)

// Variant is one way of running the River outbox under the harness: what
// it declares.
type Variant struct {
	Name, Summary string
	// Supports is what the variant declares to the harness. Without
	// Leases, a claim takes every job still running as stuck (the rescue
	// horizon is the claim's now): one worker has nothing running at its
	// claim, so a running job is one a crashed process left.
	Supports designs.Capabilities
}

// The variants.
var (
	// OneWorker is one River worker, no clock: what holds.
	OneWorker = Variant{Name: "river", Summary: "River: approval and job in one transaction, one worker"}
	// Workers is River as it runs by itself: several workers on the
	// virtual clock, River's rescuer as the lease, which a dead worker's
	// jobs wait out; River shows who last fetched a job and when, has no
	// fence, and fetches the job due first; the outbox keeps the time
	// budget before River's fetch.
	Workers = Variant{Name: "river-workers", Summary: "River with several workers, the rescuer as the lease",
		Supports: designs.Capabilities{Time: true, TimeBudget: true, Leases: true, Workers: true, Holders: true, DueFirst: true}}
)

// Design is the variant as the harness runs it, in front of the handoff's
// durable receiver.
func (v Variant) Design() designs.Design {
	return designs.Design{Name: v.Name, Summary: v.Summary, Supports: v.Supports,
		OpenApp: v.OpenApp,
		OpenCRM: func(ctx context.Context, path string, opts system.CRMOptions) (designs.CRM, error) {
			return system.OpenCRMWith(ctx, path, opts)
		},
	}
}

// OpenApp opens the outbox at path: a SQLite file, or a postgres:// URL
// whose schema exists.
func (v Variant) OpenApp(ctx context.Context, path string, opts system.Options) (designs.App, error) {
	return open(ctx, path, opts, v)
}

// The outbox is an App with phases.
var (
	_ designs.App    = (*Outbox)(nil)
	_ designs.Phases = (*Outbox)(nil)
)
