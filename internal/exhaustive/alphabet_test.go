package exhaustive

import (
	"slices"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/model"
)

// TestAlphabetSteps: the steps of the default alphabet fit the design and
// the state: a config only first, a named worker's next phase only, its
// crash only while it holds a claim, a person's repair only of a row that
// needs one, and a design's capabilities only.
func TestAlphabetSteps(t *testing.T) {
	twoWrites, err := designs.Lookup("two-writes")
	if err != nil {
		t.Fatal(err)
	}
	empty := model.New(3)
	backoff := empty
	backoff.BackoffBase, backoff.BackoffCap = 1000, 8000
	heard := backoff
	heard.Claims = map[string]model.Claim{"A": {Key: model.KeyPrefix + "case-1", Attempt: 2, Heard: model.ResultTransient}}
	blocked := empty
	blocked.Outbox = []model.Row{{Key: model.KeyPrefix + "case-2", State: model.Blocked}}
	lapsed := empty // a lease that ends at this very instant is over
	lapsed.Outbox = []model.Row{{Key: model.KeyPrefix + "case-1", State: model.Pending, LeaseOwner: "A", LeaseUntil: empty.Now}}
	leased := lapsed
	leased.Outbox = []model.Row{{Key: model.KeyPrefix + "case-1", State: model.Pending, LeaseOwner: "A", LeaseUntil: empty.Now + 1}}
	for _, tt := range []struct {
		name       string
		design     designs.Design
		state      model.State
		first      bool
		want, not  []string
		wantLength int // 0: any
	}{
		{"first step of the real design", designs.Handoff, empty, true,
			[]string{"config retention=60000", `approve case=case-2 title="Rappeler le client"`, `approve case=case-1 title="Call back" fault=app-full`,
				"deliver fault=crm-full", "restart", "converge", "tick ms=30000", "claim worker=A", "claim worker=B", "pipe worker=P slow=10001", "flush worker=P", "stale older-than=0"},
			[]string{"deliver fault=commit-lost", "crash worker=A", "send worker=A", "requeue case=case-1"}, 0},
		{"a later step", designs.Handoff, empty, false, []string{"deliver"}, []string{"config retention=60000"}, 0},
		{"a worker that heard a transient failure, with backoff", designs.Handoff, heard, false,
			[]string{"settle worker=A jitter=2000", "settle worker=A jitter=2000 fault=app-busy", "crash worker=A", "claim worker=B", "tick ms=8000"},
			[]string{"claim worker=A", "send worker=A", "crash worker=B"}, 0},
		{"a blocked row", designs.Handoff, blocked, false, []string{"requeue case=case-2", "reconcile case=case-2 absent=true"}, []string{"requeue case=case-1"}, 0},
		{"a pending row whose lease ended just now", designs.Handoff, lapsed, false, []string{"reconcile case=case-1 absent=true"}, nil, 0},
		{"a pending row under a live lease", designs.Handoff, leased, false, nil, []string{"reconcile case=case-1 absent=true"}, 0},
		{"a design of one worker without a clock", twoWrites, empty, true,
			[]string{`approve case=case-1 title="Call back" fault=crash-between-inserts`, "deliver fault=lost-reply"},
			[]string{"config retention=60000", "tick ms=30000", "claim worker=A", "deliver fault=app-busy", "stale older-than=0"},
			// 2 cases × (2 titles + a crash), deliver and its 6 faults, restart, converge.
			2*3 + 7 + 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range DefaultAlphabet().Steps(tt.design, tt.state, tt.first) {
				got = append(got, s.String())
				if err := sim.Supported(tt.design, s); err != nil {
					t.Errorf("%s: %v", s, err)
				}
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("no %q in %q", w, got)
				}
			}
			for _, n := range tt.not {
				if slices.Contains(got, n) {
					t.Errorf("%q in %q", n, got)
				}
			}
			if tt.wantLength > 0 && len(got) != tt.wantLength {
				t.Errorf("%d steps, want %d: %q", len(got), tt.wantLength, got)
			}
		})
	}
}

// TestBoundaries: the ticks are the lease, the backoff cap, just past the
// retention and just past the time budget, those the options set, each
// once, shortest first.
func TestBoundaries(t *testing.T) {
	for _, tt := range []struct {
		name                                    string
		lease, base, ceiling, retention, maxAge int64
		want                                    []int64
	}{
		{"the defaults of a scenario", 30000, 0, 300000, 0, 0, []int64{30000}},
		{"backoff", 30000, 1000, 8000, 0, 0, []int64{8000, 30000}},
		{"a retention", 30000, 0, 300000, 60000, 0, []int64{30000, 61000}},
		{"a time budget", 30000, 0, 300000, 0, 90000, []int64{30000, 95000}},
		{"a cap as long as the lease", 30000, 1000, 30000, 0, 0, []int64{30000}},
	} {
		m := model.New(3)
		m.Lease, m.BackoffBase, m.BackoffCap, m.Retention, m.MaxAge = tt.lease, tt.base, tt.ceiling, tt.retention, tt.maxAge
		if got := boundaries(m); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestLetters: the summary of an alphabet names what the design runs of
// it: a pipelined worker alone brings its calls and crashes but no
// phases, and a design without a clock no tick and no worker.
func TestLetters(t *testing.T) {
	twoWrites, err := designs.Lookup("two-writes")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		alphabet  Alphabet
		design    designs.Design
		want, not []string
	}{
		{"the default", Alphabet{}, designs.Handoff, alphabetDirectives, nil},
		{"a pipelined worker alone", Alphabet{Cases: defaultCases, Workers: []string{Pipelined}}, designs.Handoff,
			[]string{"approve", "deliver", "tick", "crash", "pipe", "flush", "requeue"}, []string{"claim", "send", "settle"}},
		{"phased workers alone", Alphabet{Cases: defaultCases, Workers: []string{"A"}}, designs.Handoff,
			[]string{"claim", "send", "settle", "crash"}, []string{"pipe", "flush"}},
		{"no clock", Alphabet{}, twoWrites, []string{"approve", "deliver", "restart", Converge}, []string{"tick", "claim", "crash", "pipe", "requeue"}},
	} {
		l := tt.alphabet.Letters(tt.design)
		for _, d := range tt.want {
			if !slices.Contains(l.Directives, d) {
				t.Errorf("%s: no %s in %v", tt.name, d, l.Directives)
			}
		}
		for _, d := range tt.not {
			if slices.Contains(l.Directives, d) {
				t.Errorf("%s: %s in %v", tt.name, d, l.Directives)
			}
		}
	}
}
