package sim

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/outboxlab/handoff/model"
)

// render prints an observation the way scenario files show it: one line
// per outbox row, per approval without a row, and per receiver task.
func render(o model.Observation) []string {
	var lines []string
	payloads := map[string]string{}
	for _, a := range o.Approvals {
		payloads[a.Key] = a.Payload
	}
	rows := map[string]bool{}
	for _, r := range o.Outbox {
		rows[r.Key] = true
		lines = append(lines, "outbox "+renderRow(r))
	}
	for _, a := range o.Approvals {
		if !rows[a.Key] {
			lines = append(lines, fmt.Sprintf("approval %s has no outbox row", a.Key))
		}
	}
	if len(o.Outbox) == 0 && len(o.Approvals) == 0 {
		lines = append(lines, "outbox empty")
	}
	for _, t := range o.Tasks {
		line := fmt.Sprintf("crm task %d %s", t.ID, t.Key)
		switch p, ok := payloads[t.Key]; {
		case !ok:
			line += " (no approval)"
		case p != t.Payload:
			line += " (other content)"
		}
		lines = append(lines, line)
	}
	if len(o.Tasks) == 0 {
		lines = append(lines, "crm empty")
	}
	return lines
}

// renderRow prints a row: key, state, attempts, then remote id and last
// error where there are any.
func renderRow(r model.Row) string {
	s := fmt.Sprintf("%s %s attempts=%d", r.Key, r.State, r.Attempts)
	if r.RemoteID != 0 || r.State == model.Sent {
		s += fmt.Sprintf(" remote=%d", r.RemoteID)
	}
	if r.LastError != "" {
		s += " last-error=" + r.LastError
	}
	return s
}

// facts lists every observable fact, payloads included, so that two
// observations can be compared line by line.
func facts(o model.Observation) []string {
	var fs []string
	for _, a := range o.Approvals {
		fs = append(fs, fmt.Sprintf("approval %s %s", a.Key, a.Payload))
	}
	for _, r := range o.Outbox {
		fs = append(fs, "outbox "+renderRow(r))
	}
	for _, t := range o.Tasks {
		fs = append(fs, fmt.Sprintf("crm task %d %s %s", t.ID, t.Key, t.Payload))
	}
	return fs
}

// visible writes every rune that is not graphic (U+2028, say) as <U+XXXX>,
// so that scenario text shows it instead of breaking a line. ASCII is left
// alone: JSON has already escaped its control characters.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 || unicode.IsGraphic(r) {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "<U+%04X>", r)
		}
	}
	return b.String()
}
