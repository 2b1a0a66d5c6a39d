package ui_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/internal/bulk"
	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/internal/ui"
	"github.com/outboxlab/handoff/system"
)

// BenchmarkPage100k is the time to answer each view of the page over an
// outbox of 100,000 rows (90,000 sent, 9,000 pending, 1,000 blocked),
// 100 rows a page, rendering included, without the network.
func BenchmarkPage100k(b *testing.B) {
	for _, be := range []struct {
		name string
		app  func(testing.TB) string
	}{
		{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "app.db") }},
		{"postgres", pgtest.URL},
	} {
		b.Run(be.name, func(b *testing.B) {
			app, err := system.Open(b.Context(), be.app(b), system.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer app.Close()
			if err := bulk.Fill(b.Context(), app, 100_000, bulk.DefaultMix, time.Now().Add(-2*time.Hour)); err != nil {
				b.Fatal(err)
			}
			ops, err := ui.SharedToken(token)
			if err != nil {
				b.Fatal(err)
			}
			h, err := ui.New(ui.Config{App: app, AppShown: "app", Operators: ops})
			if err != nil {
				b.Fatal(err)
			}
			for _, view := range []struct{ name, path string }{
				{"outbox", "/"},
				{"pending", "/?state=pending"},
				{"blocked", "/?state=blocked"},
				{"sent-last-page", "/?state=sent&after=99800"},
				{"stale", "/stale?older-than=1h"},
				{"row", "/row?key=" + system.KeyPrefix + "bulk-50000"},
			} {
				b.Run(view.name, func(b *testing.B) {
					for b.Loop() {
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, view.path, nil))
						if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "bulk-") {
							b.Fatalf("GET %s: %d", view.path, rec.Code)
						}
					}
				})
			}
		})
	}
}
