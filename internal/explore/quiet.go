package explore

import (
	"context"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// CheckQuietly is Check with rapid's own output kept back, for a test
// that prints the failure it records itself: rapid prints a failure
// twice (its account, then the failing run's output again with every
// draw logged), each line attributed to the harness's files. It returns
// whether the check failed and rapid's account of it. checks, when
// above 0, is how many checks rapid runs instead of -rapid.checks (and,
// as rapid does with -rapid.checks, a fifth of them under -short, but at
// least one).
func CheckQuietly(tb testing.TB, checks int, prop func(*rapid.T)) (failed bool, account string) {
	tb.Helper()
	return CheckQuietlySeeded(tb, checks, 0, prop)
}

// CheckQuietlySeeded is CheckQuietly from rapid's seed seed, whatever
// -rapid.seed says; 0 means -rapid.seed. A test that bounds what a
// search finds (its minimal schedule's length) runs from a fixed seed,
// as the fragile catalog's lengths are measured.
func CheckQuietlySeeded(tb testing.TB, checks int, seed uint64, prop func(*rapid.T)) (failed bool, account string) {
	tb.Helper()
	q := &quietTB{exploreTB: exploreTB{name: tb.Name()}, ctx: tb.Context()}
	rapidFlags.checkAsGiven(q, checks, seed, prop)
	if !q.failed {
		return false, ""
	}
	if len(q.messages) == 0 {
		return true, "rapid failed the check without a message"
	}
	return true, strings.Join(q.messages, "\n")
}

// quietTB is an exploreTB named after a test, with the test's context:
// rapid names its fail file after the test, and gives the property the
// context.
type quietTB struct {
	exploreTB
	ctx context.Context
}

func (q *quietTB) Context() context.Context { return q.ctx }
