package sim

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/internal/textdiff"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/model"
)

// stale asks what needs a person: every blocked row, and every pending
// row created more than older-than ago, oldest first, with its age.
//
//	stale older-than=60000
func (e *Env) stale(ctx context.Context, s Step) (stepResult, error) {
	v, _ := s.Arg("older-than")
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return stepResult{}, fmt.Errorf("%w: stale older-than=%q, want a whole number of milliseconds, 0 or more", ErrScenario, v)
	}
	rows, err := e.operator().Stale(ctx, time.Duration(ms)*time.Millisecond)
	if err != nil {
		return stepResult{}, fmt.Errorf("handoff: stale: %w", err)
	}
	var got []model.StaleRow
	for _, r := range rows {
		got = append(got, model.StaleRow{Key: r.Key, State: string(r.State), Age: e.now - filecheck.Millis(r.CreatedAt), Attempts: r.Attempts, LastError: r.LastError})
	}
	want, _ := e.model.Stale(ms)
	r := stepResult{line: fmt.Sprintf("stale: %s a person", words.Agree(len(got), "row", "needs", "need")),
		got: Answer{Kind: Listed, N: int64(len(got))}, want: Answer{Kind: Listed, N: int64(len(want))}}
	for _, row := range got {
		r.line += fmt.Sprintf("\n  %s %s, %d ms old, %s", row.Key, row.State, row.Age, words.HowMany(row.Attempts, "attempt"))
	}
	if !sameList(want, got) {
		r.auditDiff = "the stale list differs from the model's (-model +system):\n" + textdiff.Values(want, got, diffContext)
	}
	return r, nil
}
