package report

import (
	"strings"
	"testing"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/sim"
)

// TestFaultsShown: the diagram knows how to show every fault where it
// took effect.
func TestFaultsShown(t *testing.T) {
	for _, k := range faults.StepMode.Kinds() {
		f, ok := faultShown[k]
		if !ok || f.marked == (f.how != "") || f.marked && f.label == "" {
			t.Errorf("fault %s: %+v, want a row of faultShown with a mark's lane and label, or how its events show it", k, f)
		}
	}
}

// TestStory lays out the forty steps of testdata/three-workers.txt and
// checks what the diagram draws: a lane per actor, every step in order,
// each fault where it took effect, the leases and how they end, the
// restart.
func TestStory(t *testing.T) {
	in := replayed(t, "internal/report/testdata/three-workers.txt")
	st := tell(in.Run, nil)
	var names []string
	for _, l := range st.lanes {
		names = append(names, l.label)
	}
	if got, want := strings.Join(names, ", "), "person, app + outbox, worker (default), worker A, worker B, worker C, network, receiver (CRM), clock"; got != want {
		t.Errorf("lanes: got %s, want %s", got, want)
	}
	if len(st.steps) != 40 || st.steps[0].number != 1 || st.steps[39].number != 40 {
		t.Fatalf("got %d steps, numbered from %d; want 40 from 1", len(st.steps), st.steps[0].number)
	}
	if st.divergence != -1 || st.violation != -1 {
		t.Errorf("divergence at %d, violation at %d; the real design keeps to the model", st.divergence, st.violation)
	}
	drawn := func(i int) string {
		var labels []string
		for _, e := range st.steps[i].events {
			labels = append(labels, e.label)
		}
		return strings.Join(labels, " | ")
	}
	for i, want := range map[int]string{
		1:  "approve case-1: approved",
		5:  "claim case-1 · attempt 1 · fence 1",
		8:  "send case-1 · attempt 1 | reply lost",
		10: "send case-3 · attempt 1",
		13: "crashed: its lease stays",
		14: "+30000 ms",
		19: "send case-3 · attempt 2 | throttled: retry after 2000 ms",
		22: "send case-4 · attempt 1 | refused",
		24: "requeue case-4: done harbor:create-followup:v1:case-4",
		30: "send case-4 · attempt 1 | the same request again | task 4",
		34: "claim case-5 · attempt 1 | send case-5 · attempt 1 | task 5 | crash after the reply; restarted",
		35: "every process restarts",
	} {
		if got := drawn(i); got != want {
			t.Errorf("step %d (%s): got %q, want %q", i+1, st.steps[i].text, got, want)
		}
	}
	if e := st.steps[10].events[0]; !e.lost || st.lanes[e.to].kind != networkLane {
		t.Errorf("the offline request: %+v, want it lost at the network", e)
	}
	if !st.steps[35].restart {
		t.Error("the restart draws no break")
	}
	var leases []string
	for _, l := range st.leases {
		leases = append(leases, st.lanes[l.lane].label+" "+short(l.key)+" fence "+itoa(int(l.fence))+" "+l.end)
	}
	// C's lease on case-3 runs out after its crash; the others are
	// released by their settles.
	if got := strings.Join(leases, "; "); !strings.Contains(got, "worker C case-3 fence 1 ran out") || !strings.Contains(got, "worker A case-1 fence 1 released") {
		t.Errorf("leases: %s", got)
	}
}

// TestDivergenceAndViolation: no-fencing's counterexample diverges from
// the model, and breaks invariant 6, at its last step, which the page
// marks and shows side by side.
func TestDivergenceAndViolation(t *testing.T) {
	in := replayed(t, "corpus/fragile/no-fencing.txt")
	st := tell(in.Run, nil)
	last := len(st.steps) - 1
	if st.divergence != last || st.violation != last || !st.steps[last].diverged || !st.steps[last].violated {
		t.Fatalf("divergence %d, violation %d, want both %d", st.divergence, st.violation, last)
	}
	page := diverged(st)
	for _, want := range []string{"step 6", "settle worker=B", `<b class="differs">stale harbor:create-followup:v1:case-1</b>`, `<b class="differs">sent harbor:create-followup:v1:case-1</b>`, `<td class="differs">sent</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the divergence lacks %q:\n%s", want, page)
		}
	}
}

// TestEscaped: what a design or a scenario wrote reaches the page
// escaped: markup as text, a line separator as \u2028.
func TestEscaped(t *testing.T) {
	sc, err := sim.ParseScenario("x.txt", "approve case=c-1 title=\"</script><b>\u2028x\"\n----\n")
	if err != nil {
		t.Fatal(err)
	}
	run, _, err := sim.Replay(t.Context(), sc, sim.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Write(&b, Input{Run: run, Scenario: sc}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "</script><b>") || strings.Contains(page, "\u2028") || !strings.Contains(page, `&lt;/script&gt;&lt;b&gt;`) {
		t.Errorf("the page shows the title unescaped")
	}
}
