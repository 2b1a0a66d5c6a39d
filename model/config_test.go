package model_test

import (
	"errors"
	"math"
	"testing"

	"github.com/outboxlab/handoff/model"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*model.Config)
		ok     bool
	}{
		{"defaults", func(*model.Config) {}, true},
		{"backoff off, no cap, send timeout just shorter", func(c *model.Config) { c.BackoffBase, c.BackoffCap, c.SendTimeout = 0, 0, c.Lease-1 }, true},
		{"negative lease", func(c *model.Config) { c.Lease = -1 }, false},
		{"negative send timeout", func(c *model.Config) { c.SendTimeout = -1 }, false},
		{"negative backoff base", func(c *model.Config) { c.BackoffBase = -1 }, false},
		{"negative backoff cap", func(c *model.Config) { c.BackoffCap = -1 }, false},
		{"negative max age", func(c *model.Config) { c.MaxAge = -1 }, false},
		{"negative retention", func(c *model.Config) { c.Retention = -1 }, false},
		{"send timeout equals the lease", func(c *model.Config) { c.SendTimeout = c.Lease }, false},
		{"no attempts", func(c *model.Config) { c.MaxAttempts = 0 }, false},
	}
	for _, tt := range tests {
		c := model.Defaults()
		tt.change(&c)
		err := c.Validate()
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, model.ErrInvalidConfig) {
			t.Errorf("%s: got %v, want ok %v", tt.name, err, tt.ok)
		}
		if _, openErr := model.Open(c); (openErr == nil) != tt.ok {
			t.Errorf("%s: Open got %v, want ok %v", tt.name, openErr, tt.ok)
		}
	}
}

func TestDefaults(t *testing.T) {
	want := model.Config{MaxAttempts: 3, Lease: 30_000, SendTimeout: 10_000, BackoffBase: 1_000, BackoffCap: 300_000, Start: model.ScenarioStart}
	if got := model.Defaults(); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	want.BackoffBase = 0
	if got := model.Scenario(); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if s := model.New(5); s.Config.MaxAttempts != 5 || s.Now != model.ScenarioStart || s.BackoffBase != 0 {
		t.Errorf("New(5): got %+v, want 5 attempts from ScenarioStart with backoff off", s.Config)
	}
}

func TestJitterCeiling(t *testing.T) {
	tests := []struct {
		base, cap int64
		attempt   int
		want      int64
	}{
		{1_000, 300_000, 1, 1_000},
		{1_000, 300_000, 2, 2_000},
		{1_000, 300_000, 3, 4_000},
		{1_000, 300_000, 9, 256_000},
		{1_000, 300_000, 10, 300_000},
		{1_000, 300_000, 1_000, 300_000},
		{1_000, math.MaxInt64, 100, math.MaxInt64},
		{3, 5, 2, 5},
		{7, 5, 1, 5},
		{0, 300_000, 3, 0},
	}
	for _, tt := range tests {
		c := model.Config{BackoffBase: tt.base, BackoffCap: tt.cap}
		if got := c.JitterCeiling(tt.attempt); got != tt.want {
			t.Errorf("base %d cap %d attempt %d: got %d, want %d", tt.base, tt.cap, tt.attempt, got, tt.want)
		}
	}
}

func TestNextAttemptAfter(t *testing.T) {
	if got := model.NextAttemptAfter(100, 5, 40); got != 140 {
		t.Errorf("a retry hint larger than the jitter: got %d, want 140", got)
	}
	if got := model.NextAttemptAfter(100, 50, 40); got != 150 {
		t.Errorf("a jitter larger than the retry hint: got %d, want 150", got)
	}
}

func TestDeadlines(t *testing.T) {
	c := model.Config{SendTimeout: 10, Retention: 100, MaxAge: 1_000}
	r := model.Row{CreatedAt: 5, FirstClaimedAt: 50}
	if at, ok := c.RetentionDeadline(r); !ok || at != 140 {
		t.Errorf("RetentionDeadline: got %d, %v; want 140, true", at, ok)
	}
	if at, ok := c.AgeDeadline(r); !ok || at != 1_005 {
		t.Errorf("AgeDeadline: got %d, %v; want 1005, true", at, ok)
	}
	if _, ok := c.RetentionDeadline(model.Row{}); ok {
		t.Error("RetentionDeadline of a row never claimed: got ok, want none")
	}
	if _, ok := (model.Config{}).RetentionDeadline(r); ok {
		t.Error("RetentionDeadline with retention forever: got ok, want none")
	}
	if _, ok := (model.Config{}).AgeDeadline(r); ok {
		t.Error("AgeDeadline without a time budget: got ok, want none")
	}
}
