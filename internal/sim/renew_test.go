package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
)

// TestRenewReplaysTheCorpus runs every scenario of the real design on one
// Env, renewed before each, and checks that each gives the outputs its
// file expects, as on new databases: nothing a scenario leaves (rows,
// task ids, idle handles with other options, leases) reaches the next.
// After the last, the files hold again what they held when new.
func TestRenewReplaysTheCorpus(t *testing.T) {
	t.Parallel()
	env, done, err := NewEnvIn(t.Context(), EnvOptions{Dir: t.TempDir(), Renewable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	fresh := dumpLane(t, env.lane)
	scenarios := corpusScenarios(t)
	ran := 0
	for _, sc := range scenarios {
		if sc.Design() != designs.Handoff.Name {
			continue
		}
		if err := env.Renew(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, c := range sc.Cases {
			out, err := env.Apply(t.Context(), c.Step)
			if errors.Is(err, ErrOtherBackend) {
				break // a scenario of PostgreSQL only
			}
			if err != nil {
				t.Fatalf("%s:%d: %v", sc.Name, c.Line, err)
			}
			if out.Output != c.Want {
				t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", sc.Name, c.Line, c.Text, out.Output, c.Want)
			}
		}
		ran++
	}
	if ran < 10 {
		t.Fatalf("ran %d scenarios of the real design, want the corpus's", ran)
	}
	if err := env.Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := dumpLane(t, env.lane); !slices.Equal(got, fresh) {
		t.Errorf("after renew the files hold\n%s\nwant what they held when new:\n%s", strings.Join(got, "\n"), strings.Join(fresh, "\n"))
	}
}

// dumpLane lists every row of every table of the lane's files, the
// sequences of integer keys included.
func dumpLane(t *testing.T, l *lane) []string {
	t.Helper()
	var lines []string
	for i, db := range l.conns {
		var tables []string
		rows, err := db.QueryContext(t.Context(), `SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				t.Fatal(err)
			}
			tables = append(tables, name)
		}
		rows.Close()
		for _, table := range tables {
			rows, err := db.QueryContext(t.Context(), "SELECT * FROM main."+backend.QuoteName(table))
			if err != nil {
				t.Fatal(err)
			}
			cols, _ := rows.Columns()
			n := 0
			for rows.Next() {
				values := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for j := range values {
					ptrs[j] = &values[j]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				lines = append(lines, fmt.Sprintf("%s %s %v", laneFiles[i], table, values))
				n++
			}
			rows.Close()
			lines = append(lines, fmt.Sprintf("%s %s: %d rows", laneFiles[i], table, n))
		}
	}
	return lines
}

// TestTransportOutlivesConfig: a config step after a transport step
// keeps the receiver on HTTP (the config's handles are carried again),
// and a renewed Env starts its next sequence in process.
func TestTransportOutlivesConfig(t *testing.T) {
	env, done, err := NewEnvIn(t.Context(), EnvOptions{Dir: t.TempDir(), Renewable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	overHTTP := func() bool { _, ok := env.crm.(*httpCRM); return ok }
	for _, step := range []Step{NewStep("transport", "name", "http"), NewStep("config", "retention", "60000")} {
		if _, err := env.Apply(t.Context(), step); err != nil {
			t.Fatal(err)
		}
		if !overHTTP() {
			t.Fatalf("after %s the receiver is %T, want it carried over HTTP", step.Directive, env.crm)
		}
	}
	if err := env.Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	if overHTTP() || env.cfg.Transport != InProcess {
		t.Errorf("a renewed Env runs over %s with a %T receiver, want in process", env.cfg.Transport, env.crm)
	}
}
