package outbox

import (
	"testing"
	"testing/synctest"
	"time"
)

// virtualClock is a Clock that runs f in a synctest bubble whose fake
// clock has been moved to now: time.Now in f, goqite's included, reads
// now exactly, whatever the wall clock says. The bubble starts at
// midnight UTC 2000-01-01 and a time.Sleep in it returns at once with
// the clock moved on by the sleep, so the harness's virtual clock, which
// starts at 2026-01-01, is always ahead of it.
func virtualClock(t *testing.T) Clock {
	return func(now time.Time, f func()) {
		synctest.Test(t, func(*testing.T) {
			time.Sleep(time.Until(now))
			f()
		})
	}
}

// TestVirtualClock checks that goqite's clock is the one given: a Clock
// that ran f at another instant would let the harness check nothing of
// time.
func TestVirtualClock(t *testing.T) {
	clock := virtualClock(t)
	for _, want := range []time.Time{time.UnixMilli(1_767_225_600_000).UTC(), time.Date(2031, 5, 6, 7, 8, 9, 123e6, time.UTC)} {
		var got time.Time
		clock(want, func() { got = time.Now() })
		if !got.Equal(want) {
			t.Errorf("time.Now in the clock read %v, want %v", got, want)
		}
	}
}
