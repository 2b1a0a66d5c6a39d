package system

import (
	"context"
	"sync/atomic"
)

// replayNote is where a receiver says, through the context of one send,
// that the task it answers existed already.
type replayNote struct{ replayed atomic.Bool }

type replayKey struct{}

// NoteReplay tells the outbox whose send ctx belongs to that the task
// the receiver answers existed already: the receiver replayed the key,
// and the task was an earlier attempt's, whose answer was lost. A
// receiver that knows calls it before it returns the task id (CRM does,
// and crm.Sender on Idempotent-Replayed); the row's history then says
// the send was a replay. Outside a send it does nothing.
func NoteReplay(ctx context.Context) {
	if n, ok := ctx.Value(replayKey{}).(*replayNote); ok {
		n.replayed.Store(true)
	}
}

// withReplayNote returns ctx carrying n, for a receiver's NoteReplay.
func withReplayNote(ctx context.Context, n *replayNote) context.Context {
	if n == nil {
		return ctx
	}
	return context.WithValue(ctx, replayKey{}, n)
}
