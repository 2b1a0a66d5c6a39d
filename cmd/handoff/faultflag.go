package main

import (
	"fmt"
	"strings"

	"github.com/outboxlab/handoff/faults"
)

// scenarioOnly names the delivery faults that deliver refuses on real
// files, and says why.
var scenarioOnly = map[faults.Kind]string{
	faults.ForeignTask: "it would write a task with foreign content into the CRM file, where it stays and blocks the row as a conflict",
}

// deliverFaults returns the delivery faults deliver injects on real files:
// faults.DeliveryKinds, in its order, without the scenario-only ones.
func deliverFaults() []faults.Kind {
	var kinds []faults.Kind
	for _, k := range faults.DeliveryKinds {
		if _, ok := scenarioOnly[k]; !ok {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// deliverFaultHelp returns the help of deliver's --fault flag, made from
// faults.DeliveryKinds.
func deliverFaultHelp() string {
	var names, only []string
	for _, k := range deliverFaults() {
		names = append(names, string(k))
	}
	for _, k := range faults.DeliveryKinds {
		if _, ok := scenarioOnly[k]; ok {
			only = append(only, string(k))
		}
	}
	return fmt.Sprintf("inject one fault: %s (%s only in scenarios and explore)", strings.Join(names, ", "), strings.Join(only, ", "))
}

// parseDeliverFault returns the fault deliver is asked to inject, or an
// error saying why it cannot: an unknown name, or a scenario-only fault.
func parseDeliverFault(s string) (faults.Kind, error) {
	if why, ok := scenarioOnly[faults.Kind(s)]; ok {
		return "", fmt.Errorf("fault %s exists only in scenarios and explore, not on real files: %s", s, why)
	}
	return faults.ParseKind(s, deliverFaults()...)
}
