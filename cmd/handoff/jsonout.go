package main

import (
	"time"

	"github.com/outboxlab/handoff/internal/cli"
)

// jsonProblem is one thing wrong with the files, in the JSON of check and
// inspect.
type jsonProblem struct {
	Where string `json:"where"`
	What  string `json:"what"`
}

// optional is a pointer to v, or nil for v's zero value: JSON null (see
// cli.Optional).
func optional[T comparable](v T) *T { return cli.Optional(v) }

// stamp is t in RFC 3339 with milliseconds, or nil when unknown.
func stamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	return &s
}
