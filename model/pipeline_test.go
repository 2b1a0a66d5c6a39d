package model_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/model"
)

// TestPipeNext follows a pipelined worker over four rows: its first
// call sends two rows and returns the first; while it sends, it records
// the answer before and, after a fast answer, claims the row after; a
// slow answer stops the claiming ahead in the call after; Flush records
// what is left.
func TestPipeNext(t *testing.T) {
	s := opened(t, same, "case-2", "case-3", "case-4")
	fast := model.PipeStep{}
	s, r := s.PipeNext("P", fast)
	if r.Result != model.ResultSent || r.Key != key {
		t.Fatalf("first call: %+v; want %s sent", r, key)
	}
	if got := s.Outbox[2]; got.LeaseOwner != "P" || got.Attempts != 1 {
		t.Errorf("case-3 after the first call: %+v, want claimed ahead by P", got)
	}
	slow := model.PipeStep{Slow: s.SendTimeout/2 + 1}
	s, r = s.PipeNext("P", slow)
	if r.Result != model.ResultSent || r.Key != key2 || s.Outbox[3].LeaseOwner != "P" {
		t.Fatalf("second call: %+v, case-4 %+v; want %s sent, case-3 sent slowly and case-4 claimed ahead", r, s.Outbox[3], key2)
	}
	if p := s.Pipes["P"]; p.Fast {
		t.Error("a slow answer leaves the worker claiming ahead")
	}
	s, r = s.PipeNext("P", fast)
	if r.Result != model.ResultSent || s.Pipes["P"].Ahead != nil {
		t.Fatalf("third call: %+v, %+v; want case-3 sent, case-4 sent, nothing claimed ahead after the slow answer", r, s.Pipes["P"])
	}
	s, r = s.PipeFlush("P", fast)
	if r.Result != model.ResultSent || !r.Flushed {
		t.Fatalf("flush: %+v, want case-4 sent", r)
	}
	if s, r = s.PipeFlush("P", fast); r.Flushed {
		t.Errorf("a second flush: %+v, want nothing left", r)
	}
	for _, row := range s.Outbox {
		if row.State != model.Sent || row.LeaseOwner != "" {
			t.Errorf("after the flush: %+v, want every row sent and unleased", row)
		}
	}
	if _, r = s.PipeNext("P", fast); r.Result != model.Idle {
		t.Errorf("a call with nothing left: %+v, want idle", r)
	}
}

// TestPipeFastUpToHalf: an answer within half the send timeout, to the
// millisecond, is fast, and has the row after claimed ahead in the same
// call; a millisecond more is slow, and claims nothing ahead.
func TestPipeFastUpToHalf(t *testing.T) {
	for _, tt := range []struct {
		over  int64 // milliseconds past half the send timeout
		ahead bool
	}{{0, true}, {1, false}} {
		s := opened(t, same, "case-2", "case-3")
		s, r := s.PipeNext("P", model.PipeStep{Slow: s.SendTimeout/2 + tt.over})
		if r.Result != model.ResultSent || r.Key != key {
			t.Fatalf("%d ms past half: %+v; want %s sent", tt.over, r, key)
		}
		if got := s.Outbox[2].LeaseOwner == "P"; got != tt.ahead || s.Pipes["P"].Fast != tt.ahead {
			t.Errorf("%d ms past half: case-3 claimed ahead %v, fast %v; want %v", tt.over, got, s.Pipes["P"].Fast, tt.ahead)
		}
	}
}

// TestPipeFastOnlyBeforeTheSendDeadline: an answer within half the send
// timeout is fast only when it also came before its claim's send
// deadline (the claim's time plus the send timeout), as the Pipeline's
// own clock judges it: a row claimed ahead, sent six seconds later and
// answered in four, ends at its deadline to the millisecond and is slow;
// answered a millisecond sooner, it is fast.
func TestPipeFastOnlyBeforeTheSendDeadline(t *testing.T) {
	for _, tt := range []struct {
		took int64 // how long the answer took, in ms
		fast bool
	}{{3_999, true}, {4_000, false}} {
		s := opened(t, same, "case-2", "case-3", "case-4")
		s, r := s.PipeNext("P", model.PipeStep{})
		if r.Result != model.ResultSent || s.Outbox[2].LeaseOwner != "P" {
			t.Fatalf("first call: %+v, case-3 %+v; want %s sent and case-3 claimed ahead", r, s.Outbox[2], key)
		}
		claimedAt := s.Now
		s, _ = s.Tick(s.SendTimeout - 4_000) // case-3 is sent 6 s after its claim
		s, r = s.PipeNext("P", model.PipeStep{Slow: tt.took})
		if r.Result != model.ResultSent || r.Key != key2 {
			t.Fatalf("answered in %d ms: %+v; want %s sent", tt.took, r, key2)
		}
		if got := s.Pipes["P"].Fast; got != tt.fast {
			t.Errorf("case-3 answered in %d ms, at %d ms of its %d ms send deadline: fast %v, want %v",
				tt.took, s.Now-claimedAt, s.SendTimeout, got, tt.fast)
		}
	}
}

// TestPipeCrash: a pipelined worker that dies after recording the answer
// before (in its first call, case-1's) leaves the row it was about to
// send claimed and unsent, and, with PipeOneCommit when that answer came
// fast, the row it claimed ahead in the recording's commit; one that dies
// after claiming ahead leaves that row claimed too. When it starts again
// it releases them (or, with RestartKeepsLeases, lets them run out).
func TestPipeCrash(t *testing.T) {
	for _, tt := range []struct {
		crash     model.PipeCrash
		oneCommit bool
		slow      bool // case-1's answer is slow: nothing is claimed ahead
		leased    int  // rows P holds until the restart releases them
	}{
		{model.PipeRecorded, false, false, 1},
		{model.PipeRecorded, true, false, 2},
		{model.PipeRecorded, true, true, 1},
		{model.PipeClaimedAhead, false, false, 2},
		{model.PipeClaimedAhead, true, false, 2},
	} {
		for _, keeps := range []bool{false, true} {
			s := opened(t, func(c *model.Config) { c.RestartKeepsLeases, c.PipeOneCommit = keeps, tt.oneCommit }, "case-2", "case-3")
			s, _ = s.PipeFlush("P", model.PipeStep{}) // nothing to flush yet
			step := model.PipeStep{Crash: tt.crash}
			if tt.slow {
				step.Slow = s.SendTimeout/2 + 1
			}
			s, r := s.PipeNext("P", step)
			if r.Result != model.ResultCrashed {
				t.Fatalf("crash %v: %+v, want crashed", tt.crash, r)
			}
			leased := func(s model.State) int {
				n := 0
				for _, row := range s.Outbox {
					if row.LeaseOwner == "P" {
						n++
					}
				}
				return n
			}
			if got := leased(s); got != tt.leased {
				t.Errorf("crash %v, one commit %v, slow %v: %d rows leased to P, want %d", tt.crash, tt.oneCommit, tt.slow, got, tt.leased)
			}
			s, _ = s.Restart("P")
			if got, want := leased(s), map[bool]int{false: 0, true: tt.leased}[keeps]; got != want {
				t.Errorf("crash %v, keeps leases %v: after the restart %d rows leased to P, want %d", tt.crash, keeps, got, want)
			}
			if len(s.Tasks) != 1 {
				t.Errorf("crash %v: the receiver holds %d tasks, want case-1's alone: the next send never left", tt.crash, len(s.Tasks))
			}
		}
	}
}

// TestPipeBusy: under a busy app database a pipelined worker's call
// makes its reads and none of its writes. A worker whose last claim found
// nothing due reads when the next row is due and answers Idle while
// nothing is, refused nothing; once a row is due, or for a worker that
// was not idle, the claim is refused: nothing changes but that the worker
// is no longer idle.
func TestPipeBusy(t *testing.T) {
	busy := model.PipeStep{App: model.RefusedBusy}
	idle := func(t *testing.T, cases ...string) model.State { // case-1 sent by P, whose last claim found nothing
		s, r := opened(t, same).PipeNext("P", model.PipeStep{})
		if r.Result != model.ResultSent || !s.Pipes["P"].Idle {
			t.Fatalf("first call: %+v, %+v; want %s sent and P idle", r, s.Pipes["P"], key)
		}
		for _, id := range cases {
			s, _, _ = s.Approve(id, "t", false)
		}
		return s
	}
	for _, tt := range []struct {
		name     string
		before   model.State
		want     model.PipeResult
		idleNext bool // the worker is idle after the call
	}{
		{"idle, nothing pending", idle(t), model.PipeResult{Result: model.Idle}, true},
		{"idle, a row due", idle(t, "case-2"), model.PipeResult{Result: model.ResultBusy}, false},
		{"never idle, a row due", opened(t, same), model.PipeResult{Result: model.ResultBusy}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, r := tt.before.PipeNext("P", busy)
			if r != tt.want {
				t.Errorf("call: %+v, want %+v", r, tt.want)
			}
			if diff := cmp.Diff(tt.before.Outbox, s.Outbox); diff != "" {
				t.Errorf("the call wrote (-before +after):\n%s", diff)
			}
			if got := s.Pipes["P"].Idle; got != tt.idleNext {
				t.Errorf("idle after the call: %t, want %t", got, tt.idleNext)
			}
		})
	}
}

// TestPipeBusyRecording: under a busy app database a worker that holds an
// unrecorded answer (case-2's) and a row claimed ahead (case-3) sends
// case-3, but the recording of case-2's answer is refused (case-2 keeps
// its lease, its answer dropped) and so is the claim ahead, which the
// call after returns once it recorded case-3's answer.
func TestPipeBusyRecording(t *testing.T) {
	s, _ := opened(t, same, "case-2", "case-3").PipeNext("P", model.PipeStep{})
	s, r := s.PipeNext("P", model.PipeStep{App: model.RefusedBusy})
	if want := (model.PipeResult{Result: model.ResultBusy, Key: key2}); r != want {
		t.Fatalf("busy call: %+v, want %+v", r, want)
	}
	if row := s.Outbox[1]; row.State != model.Pending || row.LeaseOwner != "P" {
		t.Errorf("case-2 after its refused recording: %+v, want pending and leased to P", row)
	}
	if len(s.Tasks) != 3 {
		t.Errorf("the receiver holds %d tasks, want 3: case-3 was sent", len(s.Tasks))
	}
	for _, want := range []model.PipeResult{{Result: model.ResultSent, Key: model.KeyPrefix + "case-3"}, {Result: model.ResultBusy}} {
		if s, r = s.PipeNext("P", model.PipeStep{}); r != want {
			t.Errorf("call after: %+v, want %+v", r, want)
		}
	}
}
