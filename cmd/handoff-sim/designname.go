package main

import (
	"fmt"

	"github.com/outboxlab/handoff/designs"
)

// lookupDesign returns the design called name, or a usage error.
func lookupDesign(name string) (designs.Design, error) {
	d, err := designs.Lookup(name)
	if err != nil {
		return d, fmt.Errorf("%w: %w", errUsage, err)
	}
	return d, nil
}
