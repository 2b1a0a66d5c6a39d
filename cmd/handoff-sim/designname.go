package main

import (
	"fmt"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/cli"
)

// lookupDesign returns the design called name, or a usage error.
func lookupDesign(name string) (designs.Design, error) {
	d, err := designs.Lookup(name)
	if err != nil {
		return d, fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	return d, nil
}
