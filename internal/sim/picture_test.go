package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
)

// TestPicture replays no-fencing's counterexample and checks what a
// report draws of its steps: the model's answer and observation beside
// the system's, the fault that took effect, the clock and the requests.
func TestPicture(t *testing.T) {
	sc := corpus(t)["corpus/fragile/no-fencing.txt"]
	run, _, err := Replay(t.Context(), sc, Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if run.Design != "no-fencing" || len(run.Outcomes) != len(sc.Cases) {
		t.Fatalf("got design %s and %d outcomes, want no-fencing and %d", run.Design, len(run.Outcomes), len(sc.Cases))
	}
	for i, c := range sc.Cases {
		if run.Outcomes[i].Output != c.Want {
			t.Errorf("line %d: the run's output differs from the file's", c.Line)
		}
	}
	pic := func(directive string) Picture {
		for i, s := range run.Steps {
			if s.String() == directive {
				return run.Outcomes[i].Picture
			}
		}
		t.Fatalf("no step %q", directive)
		return Picture{}
	}
	if p := pic("send worker=B"); p.Requests != 1 || p.Fired != "" || p.Now != model.ScenarioStart {
		t.Errorf("send: %+v, want one request, no fault, at the start", p)
	}
	if p := pic("tick ms=30000"); p.Now != model.ScenarioStart+30_000 || p.Requests != 0 {
		t.Errorf("tick: %+v, want 30 s later and no request", p)
	}
	if p := pic("deliver fault=offline"); p.Fired != faults.Offline || p.Requests != 1 {
		t.Errorf("deliver: %+v, want the offline fault and one request", p)
	}
	last := run.Outcomes[len(run.Outcomes)-1]
	if last.Picture.Want.Kind != Stale || last.Answer.Kind != Sent || sameObservation(last.Picture.Predicted, last.Observed) {
		t.Errorf("settle: answered %v, predicted %v; want sent against stale, and observations that differ", last.Answer, last.Picture.Want)
	}
	if p := pic("claim worker=B"); !sameObservation(p.Predicted, run.Outcomes[2].Observed) {
		t.Errorf("claim: the model's observation %+v differs from the system's", p.Predicted)
	}
}

// TestPictureBackoffs: a settle of a transient failure with backoff on
// names the attempt and the ceiling it drew within, and Stats counts the
// attempts and the backoff.
func TestPictureBackoffs(t *testing.T) {
	sc, err := ParseScenario("b.txt", "config backoff-base=1000\n----\n\napprove case=a title=b\n----\n\n"+
		"claim worker=A\n----\n\nsend worker=A fault=offline\n----\n\nsettle worker=A jitter=700\n----\n")
	if err != nil {
		t.Fatal(err)
	}
	stats := NewStats()
	run, _, err := Replay(t.Context(), sc, Config{Dir: t.TempDir(), Stats: stats})
	if err != nil {
		t.Fatal(err)
	}
	p := run.Outcomes[len(run.Outcomes)-1].Picture
	if p.BackoffAfter != 1 || len(p.Ceilings) != 1 || p.Ceilings[0] != 1000 {
		t.Errorf("settle: backoff after %d within %v, want after attempt 1 within [1000]", p.BackoffAfter, p.Ceilings)
	}
	if stats.Attempts[1] != 1 || len(stats.Attempts) != 1 || stats.Backoffs[BackoffCeiling{1, time.Second}] != 1 || len(stats.Backoffs) != 1 {
		t.Errorf("stats: attempts %v, backoffs %v; want one first attempt and one backoff after it within 1s", stats.Attempts, stats.Backoffs)
	}
}

// TestFailureNamesTheSentinel: an error that wraps none of system's
// sentinels, where the model predicts one, is named in the user's terms.
func TestFailureNamesTheSentinel(t *testing.T) {
	tests := []struct {
		got, want Answer
		says      string
	}{
		{Answer{Kind: Error}, Answer{Kind: Conflict}, ": the error must wrap system.ErrKeyConflict (errors.Is finds none of system's sentinels in it)"},
		{Answer{Kind: Error}, Answer{Kind: Invalid}, ": the error must wrap system.ErrInvalidInput"},
		{Answer{Kind: Error, Key: "k"}, Answer{Kind: Transient, Key: "k"}, ": the error must wrap system.ErrTransient"},
		{Answer{Kind: Error}, Answer{Kind: DatabaseBusy}, ": the error must wrap system.ErrBusy"},
		{Answer{Kind: Approved, Key: "k"}, Answer{Kind: Conflict}, ""}, // no error: nothing to wrap
		{Answer{Kind: Error}, Answer{Kind: Approved, Key: "k"}, ""},    // the model predicts no error
	}
	for _, tt := range tests {
		detail := matchesModel(checkInput{got: tt.got, want: tt.want})
		if tt.says == "" && strings.Contains(detail, "must wrap") || !strings.Contains(detail, tt.says) {
			t.Errorf("got %v, want %v: %q, want it to say %q", tt.got, tt.want, detail, tt.says)
		}
	}
}

// TestViolationDetailIsPrintable: a detail quoting what a design wrote
// (a payload, an error) shows a line separator escaped, on its line, and
// keeps the line breaks of a detail of several lines.
func TestViolationDetailIsPrintable(t *testing.T) {
	obs := model.Observation{Approvals: []model.Approval{{Key: "k", Payload: "a\u2028b"}}, Outbox: []model.Row{{Key: "k", State: model.Pending}}}
	v := checkInvariants(checkInput{obs: obs, model: model.New(3), got: Answer{Kind: Approved}, want: Answer{Kind: Approved}})
	if v == nil || v.Invariant != 6 {
		t.Fatalf("got %v, want invariant 6", v)
	}
	if strings.ContainsAny(v.Detail, "\u2028\n") || !strings.Contains(v.Detail, `a\u2028b`) {
		t.Errorf("got %q, want U+2028 escaped on one line", v.Detail)
	}
	if got := printable("one\u2029\ntwo"); got != `one\u2029`+"\ntwo" {
		t.Errorf("printable: got %q", got)
	}
}
