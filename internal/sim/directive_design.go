package sim

import (
	"context"
	"fmt"

	"github.com/outboxlab/handoff/designs"
)

// design switches the Env to another design of the catalog, or names the
// design it runs already (a design from outside the catalog, say); only
// the first step may.
//
//	design name=two-writes
func (e *Env) design(ctx context.Context, s Step) (stepResult, error) {
	if e.applied > 0 {
		return stepResult{}, fmt.Errorf("%w: design must be the first step", ErrScenario)
	}
	name, _ := s.Arg("name")
	d, err := e.cfg.Design, error(nil)
	if name != d.Name {
		d, err = designs.Lookup(name)
	}
	if err == nil {
		err = CheckTransport(d, e.cfg.Transport)
	}
	if err != nil {
		return stepResult{}, fmt.Errorf("%w: %v", ErrScenario, err)
	}
	if d.Name != e.cfg.Design.Name {
		if err := e.switchDesign(ctx, d); err != nil {
			return stepResult{}, err
		}
	}
	return stepResult{line: fmt.Sprintf("design %s: %s", d.Name, d.Summary), got: Answer{Kind: Designed}, want: Answer{Kind: Designed}}, nil
}

// switchDesign closes the databases, removes their files and opens d's.
func (e *Env) switchDesign(ctx context.Context, d designs.Design) error {
	if err := e.closeDatabases(); err != nil {
		return err
	}
	if err := e.removeDatabases(); err != nil {
		return fmt.Errorf("handoff: switching design: %w", err)
	}
	if e.schema != nil {
		if err := e.schema.Make(ctx); err != nil {
			return err
		}
	}
	e.cfg.Design = d
	e.model.RestartKeepsLeases = keepsLeases(d)
	e.model.ClaimsDueFirst = d.Supports.DueFirst
	e.model.PipeOneCommit = d.Supports.PipelineOneCommit
	return e.open(ctx)
}
