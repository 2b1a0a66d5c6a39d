package system

import (
	"strings"
	"testing"
)

func TestRebind(t *testing.T) {
	for _, tt := range []struct{ sqlite, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`WHERE a = ? AND b = ?`, `WHERE a = $1 AND b = $2`},
		{`SET a = ?, b = ?, c = ?3, d = ?3 WHERE e = ?`, `SET a = $1, b = $2, c = $3, d = $3 WHERE e = $4`},
		{`VALUES (?1, ?2) WHERE x = ?1 AND y = ?10`, `VALUES ($1, $2) WHERE x = $1 AND y = $10`},
		{`SET a = ?2, b = ?`, `SET a = $2, b = $3`},
	} {
		if got := rebind(tt.sqlite); got != tt.want {
			t.Errorf("rebind(%q) = %q, want %q", tt.sqlite, got, tt.want)
		}
	}
}

// TestApplicationName: a worker's connections are named "handoff " and
// its name, cut to the 63 bytes PostgreSQL keeps, never inside a
// character.
func TestApplicationName(t *testing.T) {
	for _, tt := range []struct {
		worker, want string
	}{
		{"w1", "handoff w1"},
		{strings.Repeat("w", 55), "handoff " + strings.Repeat("w", 55)},
		{strings.Repeat("w", 56), "handoff " + strings.Repeat("w", 55)},
		{strings.Repeat("w", 54) + "é", "handoff " + strings.Repeat("w", 54)},
		{strings.Repeat("w", 53) + "é", "handoff " + strings.Repeat("w", 53) + "é"},
	} {
		if got := applicationName(tt.worker); got != tt.want {
			t.Errorf("applicationName(%q) = %q (%d bytes), want %q", tt.worker, got, len(got), tt.want)
		}
	}
}
