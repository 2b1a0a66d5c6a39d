package model

import (
	"errors"
	"fmt"
)

// ScenarioStart is the fixed instant, in milliseconds since the Unix epoch,
// at which every scenario's virtual clock starts: 2026-01-01T00:00:00Z.
const ScenarioStart int64 = 1_767_225_600_000

// ErrInvalidConfig is returned by Config.Validate (and Open) for options
// that the spec refuses when the outbox opens.
var ErrInvalidConfig = errors.New("model: invalid options")

// Config is the options of production delivery. Durations are in
// milliseconds; MaxAge 0 means no time budget and Retention 0 means the
// receiver remembers keys forever. Start is the instant the virtual clock
// starts at; it must be after the epoch, since a time of 0 means unset.
type Config struct {
	MaxAttempts int
	Lease       int64
	SendTimeout int64
	BackoffBase int64
	BackoffCap  int64
	MaxAge      int64
	Retention   int64
	Start       int64
	// RestartKeepsLeases says that a worker starting again releases
	// nothing: the leases it held run out as a dead worker's would. The
	// spec's workers release theirs at once; a queue without a release by
	// owner (a visibility timeout, a rescue after a while) keeps them.
	RestartKeepsLeases bool
	// ClaimsDueFirst says that a claim takes the eligible row due first
	// (the earliest next attempt, then the oldest), as a queue ordered by
	// its scheduled time does, where the spec's take the oldest.
	ClaimsDueFirst bool
	// PipeOneCommit says that a pipelined worker records the last answer
	// and claims the row after in one write transaction, as the spec's
	// Pipeline does: a crash after the recording then comes after the
	// claim ahead too. Without it the two commit apart, and a crash after
	// the recording comes before the claim ahead.
	PipeOneCommit bool
}

// Defaults returns the spec's default options, starting at ScenarioStart.
func Defaults() Config {
	return Config{
		MaxAttempts: 3,
		Lease:       30_000,
		SendTimeout: 10_000,
		BackoffBase: 1_000,
		BackoffCap:  300_000,
		Start:       ScenarioStart,
	}
}

// Scenario returns the options a scenario starts with: the defaults with
// backoff off (BackoffBase 0).
func Scenario() Config {
	c := Defaults()
	c.BackoffBase = 0
	return c
}

// Validate returns an error wrapping ErrInvalidConfig when the spec refuses c:
// a negative duration, SendTimeout not shorter than Lease, or MaxAttempts
// below 1.
func (c Config) Validate() error {
	for _, d := range []struct {
		name string
		ms   int64
	}{{"lease", c.Lease}, {"send timeout", c.SendTimeout}, {"backoff base", c.BackoffBase},
		{"backoff cap", c.BackoffCap}, {"max age", c.MaxAge}, {"retention", c.Retention}} {
		if d.ms < 0 {
			return fmt.Errorf("%w: %s is %d ms, want 0 or more", ErrInvalidConfig, d.name, d.ms)
		}
	}
	if c.SendTimeout >= c.Lease {
		return fmt.Errorf("%w: send timeout %d ms is not shorter than the lease %d ms", ErrInvalidConfig, c.SendTimeout, c.Lease)
	}
	if c.MaxAttempts < 1 {
		return fmt.Errorf("%w: max attempts is %d, want 1 or more", ErrInvalidConfig, c.MaxAttempts)
	}
	return nil
}

// JitterCeiling returns the largest jitter a transient failure of the
// given attempt (counted from 1) may draw: min(cap, base·2^(attempt−1)).
// It is 0 while backoff is off (BackoffBase 0).
func (c Config) JitterCeiling(attempt int) int64 {
	ceiling := c.BackoffBase
	for n := 1; n < attempt && 0 < ceiling && ceiling < c.BackoffCap; n++ {
		if ceiling > c.BackoffCap/2 {
			return c.BackoffCap
		}
		ceiling *= 2
	}
	return min(ceiling, c.BackoffCap)
}

// NextAttemptAfter returns a transiently failed row's next_attempt_at when
// the failure is settled at now with the drawn jitter and the receiver's
// retry hint (0 when it gave none): now + max(jitter, retryAfter).
func NextAttemptAfter(now, jitter, retryAfter int64) int64 {
	return now + max(jitter, retryAfter)
}

// RetentionDeadline returns the instant from which r may no longer be
// claimed for a send nor requeued, first_claimed_at + R − SendTimeout; ok
// is false when the receiver keeps keys forever or r was never claimed.
func (c Config) RetentionDeadline(r Row) (at int64, ok bool) {
	if c.Retention == 0 || r.FirstClaimedAt == 0 {
		return 0, false
	}
	return r.FirstClaimedAt + c.Retention - c.SendTimeout, true
}

// AgeDeadline returns the instant from which r blocks with last error
// deadline instead of being sent, created_at + MaxAge; ok is false when
// there is no time budget.
func (c Config) AgeDeadline(r Row) (at int64, ok bool) {
	if c.MaxAge == 0 {
		return 0, false
	}
	return r.CreatedAt + c.MaxAge, true
}
