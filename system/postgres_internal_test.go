package system

import "testing"

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
