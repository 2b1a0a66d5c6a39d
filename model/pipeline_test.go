package model_test

import (
	"testing"

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

// TestPipeCrash: a pipelined worker that dies after recording the answer
// before (in its first call, case-1's) leaves the row it was about to
// send claimed and unsent; one that dies after claiming ahead leaves that
// row claimed too. When it starts again it releases them (or, with
// RestartKeepsLeases, lets them run out).
func TestPipeCrash(t *testing.T) {
	for _, tt := range []struct {
		crash  model.PipeCrash
		leased int // rows P holds until the restart releases them
	}{{model.PipeRecorded, 1}, {model.PipeClaimedAhead, 2}} {
		for _, keeps := range []bool{false, true} {
			s := opened(t, func(c *model.Config) { c.RestartKeepsLeases = keeps }, "case-2", "case-3")
			s, _ = s.PipeFlush("P", model.PipeStep{}) // nothing to flush yet
			s, r := s.PipeNext("P", model.PipeStep{Crash: tt.crash})
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
				t.Errorf("crash %v: %d rows leased to P, want %d", tt.crash, got, tt.leased)
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
