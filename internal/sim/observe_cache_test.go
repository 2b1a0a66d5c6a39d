package sim

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// TestObservationCacheMissesNoChange tries to make the observation's
// cache miss a change: after every step of every scenario of the real
// design's corpus (every directive and fault it has, crashes, restarts,
// a person's repairs, time, both transports), on one renewable Env per
// backend, the observation the step made, which reads the app database
// and the receiver's only when a commit changed them (their wal-index's
// header on SQLite, the server's write-ahead log on PostgreSQL: see
// lane.appChanged, lane.crmChanged), must equal one read afresh.
func TestObservationCacheMissesNoChange(t *testing.T) {
	t.Parallel()
	for _, b := range []backend.Backend{backend.SQLite, backend.Postgres} {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			opts := EnvOptions{Dir: t.TempDir(), Renewable: true, Backend: b}
			if b == backend.Postgres {
				opts.PostgresURL = pgtest.Server(t)
			}
			env, done, err := NewEnvIn(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer done()
			switch {
			case env.lane == nil:
				t.Fatal("a renewable Env has no lane: the cache is not under test")
			case env.lane.crmIndex == nil, b == backend.SQLite && env.lane.appIndex == nil:
				t.Fatal("a file of the Env has no wal-index: the cache is not under test")
			}
			steps := 0
			for _, sc := range corpusScenarios(t) {
				if sc.Design() != designs.Handoff.Name {
					continue
				}
				if err := env.Renew(t.Context()); err != nil {
					t.Fatal(err)
				}
				for _, c := range sc.Cases {
					out, err := env.Apply(t.Context(), c.Step)
					if errors.Is(err, ErrOtherBackend) {
						break
					}
					if err != nil {
						t.Fatalf("%s:%d: %v", sc.Name, c.Line, err)
					}
					steps++
					if diff := cmp.Diff(freshObservation(t, env), out.Observed); diff != "" {
						t.Fatalf("%s:%d %s: the observation missed a change (-read afresh +observed):\n%s", sc.Name, c.Line, c.Text, diff)
					}
				}
			}
			if steps < 100 {
				t.Fatalf("checked %d steps, want the corpus's", steps)
			}
		})
	}
}

// freshObservation reads everything observable of env's system, both
// databases whatever their wal-index or data version says.
func freshObservation(t *testing.T, e *Env) model.Observation {
	t.Helper()
	snap, err := e.app.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	obs := shown(e.cfg.Design, filecheck.Observation(snap, nil))
	tasks, err := e.crm.Tasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	obs.Tasks = filecheck.Observation(system.Snapshot{}, tasks).Tasks
	return obs
}
