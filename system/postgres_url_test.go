package system_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/system"
)

// TestSplitPostgres: the URL an outbox of another module gets splits into
// one to connect with, landing in the schema (search_path) without the
// handoff's own schema parameter, and the schema; a bad one is refused.
func TestSplitPostgres(t *testing.T) {
	t.Parallel()
	tests := []struct {
		target, schema, searchPath string
		invalid                    bool
	}{
		{"postgres://u@h:5432/db?schema=crm_followups&sslmode=disable", "crm_followups", "crm_followups", false},
		{"postgresql://u@h/db", system.DefaultSchema, system.DefaultSchema, false},
		{"postgres://u@h/db?schema=Bad-Name", "", "", true},
		{"postgres://u@h/db?schema=a&schema=b", "", "", true},
		{"postgres://u@h/db?schema=full", "", "", true},
		{"postgres://u@h/db?schema=user", "", "", true},
		{"postgres://u@h/db?schema=full_outbox", "full_outbox", "full_outbox", false},
		// PostgreSQL keeps 63 bytes of a name and cuts a longer one.
		{"postgres://u@h/db?schema=" + strings.Repeat("s", 63), strings.Repeat("s", 63), strings.Repeat("s", 63), false},
		{"postgres://u@h/db?schema=" + strings.Repeat("s", 64), "", "", true},
	}
	for _, tt := range tests {
		connect, schema, err := system.SplitPostgres(tt.target)
		if tt.invalid {
			if !errors.Is(err, system.ErrInvalidInput) {
				t.Errorf("%s: got %v, want ErrInvalidInput", tt.target, err)
			}
			continue
		}
		u, perr := url.Parse(connect)
		if err != nil || perr != nil || schema != tt.schema || u.Query().Has("schema") || u.Query().Get("search_path") != tt.searchPath {
			t.Errorf("%s: got %q, %q, %v; want schema %s, search_path %s and no schema parameter", tt.target, connect, schema, err, tt.schema, tt.searchPath)
		}
	}
}

// TestReservedSchemaNamesAreTheServers: every word the server's grammar
// reserves from naming a schema is refused as a schema parameter, with a
// message that says so, before anything connects.
func TestReservedSchemaNamesAreTheServers(t *testing.T) {
	t.Parallel()
	rows, err := pgtest.Conn(t).Query(t.Context(), `SELECT word FROM pg_get_keywords() WHERE catcode IN ('R', 'T')`)
	if err != nil {
		t.Fatal(err)
	}
	words, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(words) < 50 {
		t.Fatalf("the server lists %d reserved words", len(words))
	}
	for _, w := range words {
		_, _, err := system.SplitPostgres("postgres://u@h/db?schema=" + w)
		if !errors.Is(err, system.ErrInvalidInput) || !strings.Contains(err.Error(), "reserves") {
			t.Errorf("schema %s, which the server reserves: got %v, want ErrInvalidInput saying so", w, err)
		}
	}
}

// TestMistypedURL: a URL missing its colon or a slash is told from a
// path, which may hold postgres or a colon elsewhere, and from a URL.
func TestMistypedURL(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"postgres//u@h/db":      true,
		"postgres:/u@h/db":      true,
		"postgresql//h/db":      true,
		"POSTGRES:/h":           true,
		"http:/127.0.0.1:8080":  true,
		"https//crm.example":    true,
		"postgres:/":            true,
		"postgres://u@h/db":     false,
		"postgres:///db":        false,
		"http://127.0.0.1:8080": false,
		"postgres.db":           false,
		"postgres/app.db":       false,
		"data/postgres//x":      false,
		"app.db":                false,
	} {
		if got := system.MistypedURL(s); got != want {
			t.Errorf("MistypedURL(%q) = %v, want %v", s, got, want)
		}
	}
	err := system.CheckPath("postgres//u@h/db")
	if !errors.Is(err, system.ErrInvalidInput) || !strings.Contains(err.Error(), "looks like a mistyped URL") {
		t.Errorf("CheckPath(postgres//u@h/db): %v, want ErrInvalidInput saying it looks like a mistyped URL", err)
	}
}
