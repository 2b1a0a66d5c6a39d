package designs_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/system"
)

// oddTitle holds what a database may mangle: NUL (which PostgreSQL's TEXT
// cannot hold), a backslash (which bytea's text syntax reads as an escape),
// and white space to trim.
const oddTitle = " Call\x00back \\x00 \\\\ é "

// TestTitlesOnEveryBackend: every design, on SQLite and on PostgreSQL,
// records approvals whose titles hold NUL and backslashes, approves one
// again with another title (which a design may overwrite), and requeues
// a blocked one (which a design may copy under a fresh key), and every
// approval reads back with the title it was given, trimmed.
func TestTitlesOnEveryBackend(t *testing.T) {
	t.Parallel()
	backends := []struct {
		name string
		app  func(testing.TB) string
	}{
		{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "app.db") }},
		{"postgres", pgtest.URL},
	}
	for _, b := range backends {
		for _, d := range designs.All() {
			t.Run(b.name+"/"+d.Name, func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				app, err := d.OpenApp(ctx, b.app(t), system.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer app.Close()
				want := map[string]string{}
				for _, title := range []string{oddTitle, oddTitle + "\x00"} {
					a, err := system.NewApproval("case-1", title)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := app.RecordApproval(ctx, a.CaseID, title); err == nil {
						want[a.Key] = a.Title
					} else if len(want) == 0 || !errors.Is(err, system.ErrKeyConflict) {
						t.Fatalf("approving %q: %v", title, err)
					}
				}
				a, err := system.NewApproval("case-2", oddTitle)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := app.RecordApproval(ctx, a.CaseID, oddTitle); err != nil {
					t.Fatalf("approving %q: %v", oddTitle, err)
				}
				want[a.Key] = a.Title
				if op, ok := app.(designs.Operator); ok {
					raw, ok := app.(interface {
						DB() *sql.DB
						Query(string) string
					})
					if !ok {
						t.Fatalf("%T has no DB", app)
					}
					if _, err := raw.DB().ExecContext(ctx, raw.Query(`UPDATE outbox SET state = 'blocked', last_error = 'rejected' WHERE key = ?`), a.Key); err != nil {
						t.Fatal(err)
					}
					if err := op.Requeue(ctx, a.Key, "tester", "retry"); err != nil {
						t.Fatalf("requeueing %s: %v", a.Key, err)
					}
				}
				s, err := app.Snapshot(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, got := range s.Approvals {
					w, ok := want[got.Key]
					if !ok {
						w = a.Title // a copy a design made of case-2's approval
					}
					if got.Title != w {
						t.Errorf("%s reads back with title %q, want %q", got.Key, got.Title, w)
					}
				}
				if len(s.Approvals) < len(want) {
					t.Errorf("%d approvals, want at least %d: %+v", len(s.Approvals), len(want), s.Approvals)
				}
			})
		}
	}
}
