package riveroutbox

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
)

// Variant is one way of running the River outbox under the harness:
// what it declares, and what a worker does when it starts again.
type Variant struct {
	Name, Summary string
	// Supports is what the variant declares to the harness. Without
	// Leases, a claim takes every job still running as stuck (the rescue
	// horizon is the claim's now): one worker has nothing running at its
	// claim, so a running job is one a crashed process left.
	Supports designs.Capabilities
	// ReleaseOnRecover has a worker that starts again rescue at once the
	// jobs still running under its name; River itself leaves them to the
	// rescuer, after RescueStuckJobsAfter (the lease).
	ReleaseOnRecover bool
}

// The variants.
var (
	// OneWorker is one River worker, no clock: what holds.
	OneWorker = Variant{Name: "river", Summary: "River: approval and job in one transaction, one worker"}
	// Workers is River with its rescuer as the lease and several workers,
	// on the virtual clock, as River runs by itself.
	Workers = Variant{Name: "river-workers", Summary: "River with several workers, the rescuer as the lease",
		Supports: designs.Capabilities{Time: true, Leases: true, Workers: true}}
	// WorkersRelease is Workers with a restarted worker rescuing its own
	// jobs at once.
	WorkersRelease = Variant{Name: "river-workers-release", Summary: "River with several workers; a restarted worker rescues its own jobs",
		Supports: designs.Capabilities{Time: true, Leases: true, Workers: true}, ReleaseOnRecover: true}
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
// with schema=.
func (v Variant) OpenApp(ctx context.Context, path string, opts system.Options) (designs.App, error) {
	if system.IsPostgres(path) {
		s, err := openPostgres(ctx, path)
		if err != nil {
			return nil, err
		}
		return open[pgx.Tx](ctx, s, opts, v)
	}
	s, err := openSQLite(ctx, path)
	if err != nil {
		return nil, err
	}
	return open[*sql.Tx](ctx, s, opts, v)
}

// The outbox is an App with leases and phases.
var (
	_ designs.App    = (*Outbox[*sql.Tx])(nil)
	_ designs.Leaser = (*Outbox[*sql.Tx])(nil)
	_ designs.Phases = (*Outbox[pgx.Tx])(nil)
)
