package main

import (
	"strings"
	"testing"

	"github.com/outboxlab/handoff/faults"
)

func TestDeliverFaultHelpListsEveryFault(t *testing.T) {
	t.Parallel()
	_, help, _ := runCLI(t, "help", "deliver")
	for _, k := range faults.DeliveryKinds {
		if !strings.Contains(help, string(k)) {
			t.Errorf("help deliver does not mention --fault %s:\n%s", k, help)
		}
	}
	if !strings.Contains(help, string(faults.ForeignTask)+" only in scenarios") {
		t.Errorf("help deliver does not say foreign-task is for scenarios only:\n%s", help)
	}
}
