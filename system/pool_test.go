package system_test

import (
	"testing"
	"time"

	"github.com/outboxlab/handoff/system"
)

// TestIdleWait: an idle worker sleeps until the next row is eligible,
// within bounds: never a busy poll, never so long that it misses new work.
func TestIdleWait(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		next time.Time
		want time.Duration
	}{
		{time.Time{}, system.MaxIdleWait},
		{now.Add(200 * time.Millisecond), 200 * time.Millisecond},
		{now.Add(time.Hour), system.MaxIdleWait},
		{now, system.MinIdleWait},
		{now.Add(-time.Second), system.MinIdleWait},
	} {
		if got := system.IdleWait(tt.next, now); got != tt.want {
			t.Errorf("IdleWait(%v): got %v, want %v", tt.next, got, tt.want)
		}
	}
}
