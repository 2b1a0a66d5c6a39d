package sim

import (
	"fmt"
	"strings"

	"github.com/outboxlab/handoff/system"
)

// sentinels name, for each kind of answer an error of the system gives,
// the sentinel of package system that the error wraps, as a design's code
// writes it: what a failure names when a design returned another error.
var sentinels = map[AnswerKind]string{
	Invalid:       "system.ErrInvalidInput",
	Conflict:      "system.ErrKeyConflict",
	Transient:     "system.ErrTransient",
	Rejected:      "system.ErrRejected",
	DatabaseBusy:  "system.ErrBusy",
	DatabaseFull:  "system.ErrFull",
	CommitUnknown: "system.ErrCommitUnknown",
}

// wantSentinel says, when the system answered with an error that wraps
// none of system's sentinels where the model predicted one of them, which
// sentinel the error must wrap; "" otherwise.
func wantSentinel(got, want Answer) string {
	name, ok := sentinels[want.Kind]
	if got.Kind != Error || !ok {
		return ""
	}
	return fmt.Sprintf(": the error must wrap %s (errors.Is finds none of system's sentinels in it)", name)
}

// printable is text with every character that is not printable escaped
// line by line (see system.OneLine): a violation's detail quotes payloads
// and errors a design wrote, whose U+2028, say, would otherwise break the
// line it is printed on. The line breaks of a detail of several lines (a
// diff) stay.
func printable(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = system.OneLine(l)
	}
	return strings.Join(lines, "\n")
}
