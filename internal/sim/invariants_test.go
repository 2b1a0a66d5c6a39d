package sim

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/internal/violation"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// TestViolationKeepsEveryBrokenInvariant: a step that breaks several
// invariants reports the first in check order and keeps the others, so
// that a design documented by any of them is caught as documented.
func TestViolationKeepsEveryBrokenInvariant(t *testing.T) {
	const key = "harbor:create-followup:v1:case-1"
	payload := `{"case_id":"case-1","title":"Call back"}`
	approved := model.Observation{
		Approvals: []model.Approval{{Key: key, Payload: payload}},
		Outbox:    []model.Row{{Key: key, State: model.Sent, Attempts: 2, RemoteID: 2}},
	}
	twoTasks := approved
	twoTasks.Tasks = []model.Task{{ID: 1, Key: key, Payload: payload}, {ID: 2, Key: key, Payload: payload}}
	oneTask := approved
	oneTask.Tasks = twoTasks.Tasks[1:]
	tests := []struct {
		name      string
		obs       model.Observation
		predicted model.Observation
		want      *violation.Violation
	}{
		{"nothing broken", oneTask, oneTask, nil},
		{"only the model's", oneTask, approved, &violation.Violation{Invariant: 6}},
		{"a second task, which the model did not predict", twoTasks, oneTask, &violation.Violation{Invariant: 1, Also: []int{6}}},
	}
	for _, tt := range tests {
		s := model.New(3)
		s.Observation = tt.predicted
		got := checkInvariants(checkInput{obs: tt.obs, model: s, sends: map[string]int{key: 2}})
		switch {
		case (got == nil) != (tt.want == nil):
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		case got != nil && (got.Invariant != tt.want.Invariant || !slices.Equal(got.Also, tt.want.Also)):
			t.Errorf("%s: got invariant %d, also %v; want %d, also %v", tt.name, got.Invariant, got.Also, tt.want.Invariant, tt.want.Also)
		case got != nil && !got.Breaks(6):
			t.Errorf("%s: Breaks(6) is false for %+v", tt.name, *got)
		}
	}
}

// TestBackoffDrawnWithinTheCeiling: invariant 10 holds when every ceiling
// the system gave the jitter source is the model's for the attempt, and
// breaks on one a doubling too high or too low.
func TestBackoffDrawnWithinTheCeiling(t *testing.T) {
	m := model.New(5)
	m.BackoffBase, m.BackoffCap = 1_000, 8_000
	tests := []struct {
		attempt  int
		ceilings []time.Duration
		broken   bool
	}{
		{1, nil, false},
		{1, []time.Duration{time.Second}, false},
		{3, []time.Duration{4 * time.Second}, false},
		{5, []time.Duration{8 * time.Second}, false},
		{1, []time.Duration{2 * time.Second}, true},
		{3, []time.Duration{2 * time.Second}, true},
		{2, []time.Duration{2 * time.Second, 4 * time.Second}, true},
	}
	for _, tt := range tests {
		in := checkInput{model: m, backoffAfter: &attemptOf{"k", tt.attempt}, ceilings: tt.ceilings}
		if got := backoffAsComputed(in); (got != "") != tt.broken {
			t.Errorf("attempt %d, ceilings %v: %q, want broken %v", tt.attempt, tt.ceilings, got, tt.broken)
		}
	}
}

// TestNoLateClaim: invariant 11 holds for a claim that leads to a send
// before the row's retention deadline (first_claimed_at + retention −
// send timeout, as the row stood before the step), and breaks at it or
// after, whichever row of the outbox was claimed.
func TestNoLateClaim(t *testing.T) {
	m := model.New(3)
	m.Retention, m.SendTimeout = 60_000, 10_000
	before := model.Observation{Outbox: []model.Row{{Key: "k", State: model.Pending, FirstClaimedAt: 1_000}}}
	tests := []struct {
		now     int64
		key     string
		claimed bool // a row never claimed has no deadline
		broken  bool
	}{
		{50_999, "k", true, false},
		{51_000, "k", true, true},
		{90_000, "k", true, true},
		{90_000, "", true, false},      // no claim that leads to a send
		{90_000, "other", true, false}, // no such row before the step
		{90_000, "k", false, false},    // first claimed by this step
	}
	for _, tt := range tests {
		m.Now = tt.now
		b := before
		if !tt.claimed {
			b = model.Observation{Outbox: []model.Row{{Key: "k", State: model.Pending}}}
		}
		in := checkInput{model: m, before: b, claimedForSend: tt.key}
		if got := noLateClaim(in); (got != "") != tt.broken {
			t.Errorf("now %d, claim of %q (claimed before %v): %q, want broken %v", tt.now, tt.key, tt.claimed, got, tt.broken)
		}
	}
	// The claimed row is found wherever it stands in the outbox.
	m.Now = 90_000
	second := model.Observation{Outbox: []model.Row{{Key: "j", State: model.Pending}, {Key: "k", State: model.Pending, FirstClaimedAt: 1_000}}}
	if got := noLateClaim(checkInput{model: m, before: second, claimedForSend: "k"}); got == "" {
		t.Errorf("now 90000, claim of the outbox's second row, past its deadline: unbroken, want broken")
	}
}

// TestLateClaimCaughtAtTheClaim: invariant 11 judges every claim that
// leads to a send, a named worker's as the default worker's delivery: on
// a design that ignores the receiver's retention, the claim after the
// retention deadline breaks it at that very step, where the real design
// blocks the row and breaks nothing.
func TestLateClaimCaughtAtTheClaim(t *testing.T) {
	const start = "config retention=60000\n----\n\napprove case=case-1 title=\"Call back\"\n----\n\n" +
		"claim worker=A\n----\n\nsend worker=A fault=lost-reply\n----\n\nsettle worker=A\n----\n\ntick ms=50000\n----\n\n"
	for _, tt := range []struct {
		name, design, late string
		broken             bool
	}{
		{"the real design, a named worker", "handoff", "claim worker=A", false},
		{"the real design, a delivery", "handoff", "deliver", false},
		{"retention ignored, a named worker", "ignore-retention", "claim worker=A", true},
		{"retention ignored, a delivery", "ignore-retention", "deliver", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lastStepBreaks(t, "design name="+tt.design+"\n----\n\n"+start+tt.late+"\n----\n", Config{}, tt.broken, 11)
		})
	}
}

// TestSettledUnderFence: invariant 8 breaks when a settle the model
// predicts stale wrote, whatever fences the design shows, and when a
// final state was written under another fence than the row's, whichever
// row of the outbox it is.
func TestSettledUnderFence(t *testing.T) {
	row := model.Observation{Outbox: []model.Row{{Key: "k", State: model.Sent, Fence: 3}}}
	second := model.Observation{Outbox: []model.Row{{Key: "j", State: model.Pending, Fence: 1}, {Key: "k", State: model.Sent, Fence: 3}}}
	tests := []struct {
		name   string
		in     checkInput
		broken bool
	}{
		{"a stale settle that wrote", checkInput{settling: true, got: Answer{Kind: Sent, Key: "k"}, want: Answer{Kind: Stale, Key: "k"}}, true},
		{"a stale settle that wrote pending", checkInput{settling: true, got: Answer{Kind: Pending, Key: "k"}, want: Answer{Kind: Stale, Key: "k"}}, true},
		{"a stale settle that wrote nothing", checkInput{settling: true, got: Answer{Kind: Stale, Key: "k"}, want: Answer{Kind: Stale, Key: "k"}}, false},
		{"a settle refused by its database", checkInput{settling: true, got: Answer{Kind: DatabaseBusy, Key: "k"}, want: Answer{Kind: Stale, Key: "k"}}, false},
		{"a settle under the row's fence", checkInput{obs: row, settling: true, got: Answer{Kind: Sent}, want: Answer{Kind: Sent}, settled: &fenced{"k", 3}}, false},
		{"a settle under an older fence", checkInput{obs: row, settling: true, got: Answer{Kind: Sent}, want: Answer{Kind: Sent}, settled: &fenced{"k", 2}}, true},
		{"a settle of the second row under an older fence", checkInput{obs: second, settling: true, got: Answer{Kind: Sent}, want: Answer{Kind: Sent}, settled: &fenced{"k", 2}}, true},
		{"a settle of the second row under its fence", checkInput{obs: second, settling: true, got: Answer{Kind: Sent}, want: Answer{Kind: Sent}, settled: &fenced{"k", 3}}, false},
		{"not a settle", checkInput{got: Answer{Kind: Sent}, want: Answer{Kind: Stale}}, false},
	}
	for _, tt := range tests {
		if got := settledUnderFence(tt.in); (got != "") != tt.broken {
			t.Errorf("%s: %q, want broken %v", tt.name, got, tt.broken)
		}
	}
}

// TestFileInvariantsChecked: every invariant that files show is a row of
// the harness's table too, with filecheck's name, so that a step is
// checked for everything CheckFiles finds on real files.
func TestFileInvariantsChecked(t *testing.T) {
	names := InvariantNames()
	for _, inv := range filecheck.Invariants {
		if got, ok := names[inv.Number]; !ok || got != inv.Name {
			t.Errorf("invariant %d (%s) of filecheck.Invariants: the harness's table has %q; want it there, as onFiles(%d)", inv.Number, inv.Name, got, inv.Number)
		}
	}
}

// TestOperatorViewsComparedWithTheModel: invariant 6 compares what a
// person reads with the model's, entry for entry, not by count alone: a
// design whose stale list drops each row's last error, or whose audit
// log drops each entry's reason, breaks it at the step that reads them
// (stale, requeue), although every list is as long as the model's and
// every row is as the model predicts. The real design breaks nothing.
func TestOperatorViewsComparedWithTheModel(t *testing.T) {
	const scenario = "approve case=case-1 title=\"Call back\"\n----\n\n" +
		"deliver fault=offline\n----\n\ndeliver fault=offline\n----\n\ndeliver fault=offline\n----\n\n" + // blocked: its budget spent
		"stale older-than=0\n----\n\nrequeue case=case-1\n----\n"
	noErrors := func(rows []system.Row) []system.Row {
		for i := range rows {
			rows[i].LastError = ""
		}
		return rows
	}
	noReasons := func(log []system.AuditEntry) []system.AuditEntry {
		for i := range log {
			log[i].Reason = ""
		}
		return log
	}
	for _, tt := range []struct {
		name   string
		design designs.Design
		step   int    // the step that breaks invariant 6, from 0; -1 for none
		words  string // in the violation's detail
	}{
		{"the real design", designs.Handoff, -1, ""},
		{"a stale list without last errors", misreporting("stale-without-errors", noErrors, nil), 4, "the stale list differs from the model's"},
		{"an audit log without reasons", misreporting("audit-without-reasons", nil, noReasons), 5, "the audit log differs from the model's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := ParseScenario("views.txt", scenario)
			if err != nil {
				t.Fatal(err)
			}
			run, _, err := Replay(t.Context(), sc, Config{Dir: t.TempDir(), Design: tt.design})
			if err != nil {
				t.Fatal(err)
			}
			for i, out := range run.Outcomes {
				v := out.Violation
				switch {
				case i != tt.step && v != nil:
					t.Errorf("step %d (%s) broke invariant %d: %s", i+1, run.Steps[i].Directive, v.Invariant, v.Detail)
				case i == tt.step && (v == nil || v.Invariant != 6 || !strings.Contains(v.Detail, tt.words)):
					t.Errorf("step %d (%s): violation %+v, want invariant 6 saying %q", i+1, run.Steps[i].Directive, v, tt.words)
				}
			}
		})
	}
}

// misreporting is the real design, but what a person reads of it passes
// through stale (the stale list) and audit (the audit log), each nil for
// unchanged.
func misreporting(name string, stale func([]system.Row) []system.Row, audit func([]system.AuditEntry) []system.AuditEntry) designs.Design {
	d := designs.Handoff
	d.Name = name
	d.Supports = designs.Capabilities{Time: true, Operator: true}
	d.OpenApp = func(ctx context.Context, path string, opts system.Options) (designs.App, error) {
		app, err := designs.Handoff.OpenApp(ctx, path, opts)
		if err != nil {
			return nil, err
		}
		return misreported{app.(operatorApp), stale, audit}, nil
	}
	return d
}

// operatorApp is an App a person can repair rows through.
type operatorApp interface {
	designs.App
	designs.Operator
}

// misreported is an operatorApp whose stale list and audit log pass
// through stale and audit.
type misreported struct {
	operatorApp
	stale func([]system.Row) []system.Row
	audit func([]system.AuditEntry) []system.AuditEntry
}

func (m misreported) Stale(ctx context.Context, olderThan time.Duration) ([]system.Row, error) {
	rows, err := m.operatorApp.Stale(ctx, olderThan)
	if m.stale != nil {
		rows = m.stale(rows)
	}
	return rows, err
}

func (m misreported) Audit(ctx context.Context) ([]system.AuditEntry, error) {
	log, err := m.operatorApp.Audit(ctx)
	if m.audit != nil {
		log = m.audit(log)
	}
	return log, err
}

// TestFinalSettleJudgedByItsFence: invariant 8 catches a settle that
// wrote a final state, sent or blocked, and left the row under another
// fence than its claim's, on a design that shows fences; the real
// design's settles break nothing.
func TestFinalSettleJudgedByItsFence(t *testing.T) {
	for _, tt := range []struct {
		name   string
		send   string // the send step's fault
		design designs.Design
		broken bool
	}{
		{"the real design, sent", "", fenceMoving(designs.Handoff, false), false},
		{"the real design, blocked", " fault=refused", fenceMoving(designs.Handoff, false), false},
		{"a fence moved after sent", "", fenceMoving(designs.Handoff, true), true},
		{"a fence moved after blocked", " fault=refused", fenceMoving(designs.Handoff, true), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text := "approve case=case-1 title=\"Call back\"\n----\n\nclaim worker=A\n----\n\nsend worker=A" + tt.send + "\n----\n\nsettle worker=A\n----\n"
			lastStepBreaks(t, text, Config{Design: tt.design}, tt.broken, 8)
		})
	}
}

// fenceMoving is d with the capabilities of named workers and fences
// only, whose settle, when move is set, adds one to the row's fence
// after it wrote a final state.
func fenceMoving(d designs.Design, move bool) designs.Design {
	open := d.OpenApp
	d.Name = "fence-moving"
	d.Supports = designs.Capabilities{Time: true, Leases: true, Workers: true, Fences: true}
	d.OpenApp = func(ctx context.Context, path string, opts system.Options) (designs.App, error) {
		app, err := open(ctx, path, opts)
		if err != nil || !move {
			return app, err
		}
		return movedFence{app.(phasedApp)}, nil
	}
	return d
}

// phasedApp is an App whose phases named workers run, on an Outbox's
// database.
type phasedApp interface {
	designs.App
	designs.Phases
	DB() *sql.DB
	Query(string) string
}

// movedFence adds one to a row's fence after a settle that wrote sent or
// blocked.
type movedFence struct{ phasedApp }

func (m movedFence) Settle(ctx context.Context, c system.Claim, taskID int64, sendErr error) (system.Delivery, error) {
	d, err := m.phasedApp.Settle(ctx, c, taskID, sendErr)
	if err == nil && (d.Result == system.ResultSent || d.Result == system.ResultBlocked) {
		_, err = m.DB().ExecContext(ctx, m.Query(`UPDATE outbox SET fence = fence + 1 WHERE key = ?`), c.Key)
	}
	return d, err
}

// lastStepBreaks replays the scenario text under cfg (in a folder of the
// test's) and wants no step to break an invariant, but the last, when
// broken, to break invariant.
func lastStepBreaks(t *testing.T, text string, cfg Config, broken bool, invariant int) {
	t.Helper()
	sc, err := ParseScenario("scenario.txt", text)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dir = t.TempDir()
	run, _, err := Replay(t.Context(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, out := range run.Outcomes {
		v, last := out.Violation, i == len(run.Outcomes)-1
		switch {
		case (!last || !broken) && v != nil:
			t.Errorf("step %d (%s) broke invariant %d: %s", i+1, run.Steps[i].Directive, v.Invariant, v.Detail)
		case last && broken && (v == nil || v.Invariant != invariant):
			t.Errorf("the last step (%s): violation %+v, want invariant %d", run.Steps[i].Directive, v, invariant)
		}
	}
}
