package lanes

import (
	"context"
	"encoding/gob"
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/explore"
	"github.com/outboxlab/handoff/internal/sim"
)

// Lane is the lane command, run in a process Run started: it runs
// the lanes' share of the run explore sends it, taking each sequence's
// index from explore (so that the lanes together run the run's
// sequences, whatever their number), until explore has none left for it,
// or closes its standard input (an interrupt, or a lane that failed), or
// ctx is done. It sends its counts as it runs, and its report at the end.
// An error that is ErrRefused says it ran nothing.
func Lane(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	f, isFile := stdin.(*os.File)
	if len(args) > 0 || isFile && isTerminal(f) {
		return errNotALane
	}
	if isFile {
		stdin = pollable(f)
	}
	in := gob.NewDecoder(stdin)
	var start laneStart
	if err := in.Decode(&start); err != nil || start.Protocol != laneProtocol {
		return errNotALane
	}
	design, err := designs.Lookup(start.Design)
	if err != nil {
		return refusal{err}
	}
	// One lane is one goroutine at a time: a second processor makes it no
	// faster, and two lanes' processes with two processors each run fewer
	// steps together than with one each.
	runtime.GOMAXPROCS(1)
	out := &laneWriter{enc: gob.NewEncoder(stdout)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A lane has one request on its way at most: with room for its grant,
	// the reader is always back at its input, and hears explore close it
	// even while the lane shrinks a failure and asks for nothing.
	grants := make(chan laneGrant, 1)
	go func() {
		defer close(grants)
		defer cancel()
		for {
			var g laneGrant
			if in.Decode(&g) != nil {
				return
			}
			grants <- g
		}
	}()
	seqs := &remoteSequencer{out: out, grants: grants}
	cfg := explore.Config{Design: design, Checks: start.Checks, Steps: start.Steps, Seed: start.Seed, Shard: start.Shard, Shards: start.Shards,
		NoSwarm: start.NoSwarm, Transport: start.Transport, Backend: start.Backend, PostgresURL: start.PostgresURL, ConnectWait: start.ConnectWait, Dir: start.Dir,
		Sequencer: seqs, Progress: func(st *sim.Stats, _ time.Duration) { out.send(laneMessage{Counts: countsOf(st)}) }}
	r, err := explore.Run(ctx, cfg)
	report := &laneReport{Stats: r.Stats, Interrupted: r.Interrupted, Failure: r.Failure, FirstAt: r.FirstAt, FailureSeed: r.FailureSeed, Problem: r.Problem}
	if err != nil {
		report = &laneReport{Err: err.Error(), Environment: errors.Is(err, backend.ErrEnvironment)}
	}
	return out.send(laneMessage{Report: report})
}

// isTerminal says whether f is a terminal: a person at the keyboard.
func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// pollable returns f, a pipe, read through the runtime's poller, as
// exec leaves a pipe to the process it starts in blocking mode. A read
// in blocking mode keeps its processor in the system call: the lane's
// goroutine, made ready by the grant the read before delivered, would
// wait for the runtime to take the processor back, at every sequence. f
// itself if it cannot be made so.
func pollable(f *os.File) *os.File {
	if err := syscall.SetNonblock(int(f.Fd()), true); err != nil {
		return f
	}
	return os.NewFile(f.Fd(), f.Name())
}

// countsOf returns the counters of st.
func countsOf(st *sim.Stats) *laneCounts {
	return &laneCounts{st.Sequences.Load(), st.ShrinkRuns.Load(), st.Steps.Load()}
}

// laneWriter sends a lane's messages, one at a time: the lane's goroutine
// and its progress calls share it.
type laneWriter struct {
	mu  sync.Mutex
	enc *gob.Encoder
}

func (w *laneWriter) send(m laneMessage) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.Encode(m)
}

// remoteSequencer is a lane's explore.Sequencer: explore's, over the
// lane's standard input and output, a grant of indexes at a time. It
// asks for the next grant as it returns the last index it holds, so that
// the answer comes while the lane runs that sequence: on a busy machine,
// explore's process may wait milliseconds for a processor to answer on.
// The indexes a lane holds but does not run (it failed, or it was
// stopped) are above every index it ran: every index below a failing one
// is still run.
type remoteSequencer struct {
	out    *laneWriter
	grants <-chan laneGrant // closed when explore closes the lane's input
	held   []int64          // granted, not yet returned
	asked  bool             // a request is on its way
}

func (s *remoteSequencer) Next() (int64, bool) {
	if len(s.held) == 0 {
		if !s.asked && s.out.send(laneMessage{Next: true}) != nil {
			return 0, false
		}
		g, ok := <-s.grants
		if s.held, s.asked = g.Indexes, false; !ok || len(s.held) == 0 {
			return 0, false
		}
	}
	m := s.held[0]
	if s.held = s.held[1:]; len(s.held) == 0 {
		s.asked = s.out.send(laneMessage{Next: true}) == nil
	}
	return m, true
}

// Fail tells explore; if it cannot be told, the lane's input is closed
// too, and Next stops the lane.
func (s *remoteSequencer) Fail(m int64) { _ = s.out.send(laneMessage{Failed: true, Index: m}) }
