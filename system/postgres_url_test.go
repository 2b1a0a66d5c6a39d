package system_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/outboxlab/handoff/system"
)

// TestSplitPostgres: the URL an outbox of another module gets splits into
// one to connect with, landing in the schema (search_path) without the
// handoff's own schema parameter, and the schema; a bad one is refused.
func TestSplitPostgres(t *testing.T) {
	tests := []struct {
		target, schema, searchPath string
		invalid                    bool
	}{
		{"postgres://u@h:5432/db?schema=crm_followups&sslmode=disable", "crm_followups", "crm_followups", false},
		{"postgresql://u@h/db", system.DefaultSchema, system.DefaultSchema, false},
		{"postgres://u@h/db?schema=Bad-Name", "", "", true},
		{"postgres://u@h/db?schema=a&schema=b", "", "", true},
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
