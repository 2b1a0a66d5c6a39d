// Package designs holds the designs the harness can run: the handoff of
// package system, and (see Catalog) deliberately fragile variants that each
// take one shortcut real teams take. The harness must catch every fragile
// one; that is the evidence that it would catch the same mistake in the
// real thing.
package designs

import (
	"context"
	"fmt"

	"github.com/outboxlab/handoff/system"
)

// App is the application side of a design: approvals, outbox and worker.
type App interface {
	RecordApproval(ctx context.Context, caseID, title string) (string, error)
	DeliverOne(ctx context.Context, r system.Receiver) (system.Delivery, error)
	Snapshot(ctx context.Context) (system.Snapshot, error)
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
	// OpenApp opens the app database at path.
	OpenApp func(ctx context.Context, path string, opts system.Options) (App, error)
	// OpenCRM opens the receiver database at path.
	OpenCRM func(ctx context.Context, path string, d system.Durability) (CRM, error)
}

// Handoff is the real design: package system as it is.
var Handoff = Design{
	Name:    "handoff",
	Summary: "transactional outbox, stable key on every attempt, idempotent durable receiver",
	OpenApp: func(ctx context.Context, path string, opts system.Options) (App, error) {
		return system.Open(ctx, path, opts)
	},
	OpenCRM: func(ctx context.Context, path string, d system.Durability) (CRM, error) {
		return system.OpenCRM(ctx, path, d)
	},
}

// All is every design: Handoff first, then the fragile catalog.
func All() []Design {
	return []Design{Handoff}
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
