package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/internal/cli"

	"github.com/outboxlab/handoff/system"
)

// workFlagDefaults are the options work runs with when no flag says
// otherwise, read from its flags.
func workFlagDefaults(t *testing.T) system.Options {
	t.Helper()
	c, _ := cli.Lookup("work")
	fs, err := c.FlagSet(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	duration := func(name string) time.Duration {
		d, err := time.ParseDuration(fs.Lookup(name).DefValue)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	attempts, err := strconv.Atoi(fs.Lookup("max-attempts").DefValue)
	if err != nil {
		t.Fatal(err)
	}
	return system.Options{MaxAttempts: attempts, Lease: duration("lease"), SendTimeout: duration("send-timeout"),
		BackoffBase: duration("backoff-base"), BackoffCap: duration("backoff-cap"), MaxAge: duration("max-age")}
}

// downReceiver is a CRM that refuses every connection while down says
// so, as a receiver that is restarting does.
type downReceiver struct {
	crm  *system.CRM
	down func() bool
}

func (r downReceiver) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	if r.down() {
		return 0, fmt.Errorf("%w: connection refused", system.ErrTransient)
	}
	return r.crm.CreateTask(ctx, key, payload)
}

// deliverAll delivers every row of app to r with one worker on the
// virtual clock *now, moving the clock to when the next row is due
// whenever none is, until nothing is pending; each send takes sendTime.
// It returns, for every row that blocked, how long after its first claim.
func deliverAll(t *testing.T, app *system.Outbox, r system.Receiver, now *time.Time, sendTime time.Duration) map[string]time.Duration {
	t.Helper()
	blocked := map[string]time.Duration{}
	for {
		d, err := app.DeliverOne(t.Context(), r)
		if err != nil {
			t.Fatal(err)
		}
		switch d.Result {
		case system.Idle:
			if d.NextEligible.IsZero() {
				return blocked
			}
			*now = d.NextEligible
			continue
		case system.ResultBlocked:
			row, err := app.Row(t.Context(), d.Key)
			if err != nil {
				t.Fatal(err)
			}
			blocked[d.Key] = now.Sub(row.FirstClaimedAt)
		}
		*now = now.Add(sendTime)
	}
}

// TestWorkDefaultsRideOutARestart: under work's defaults, a receiver
// stopped for 60 s of a virtual clock, while rows wait, blocks none of
// them; one gone for good blocks every row, and each within the bound
// work's help states, which the worst jitter reaches. (100 rows; 25
// with -short.)
func TestWorkDefaultsRideOutARestart(t *testing.T) {
	t.Parallel()
	defaults := workFlagDefaults(t)
	backoff, total := defaults.RetryBound()
	if help := workDefaultsHelp(); !strings.Contains(help, "up to "+shortDuration(backoff)+" of backoff") || !strings.Contains(help, "within "+shortDuration(total)) {
		t.Errorf("work's help does not state what its defaults add up to (%v of backoff, %v in all):\n%s", backoff, total, help)
	}
	rows := 100
	if testing.Short() {
		rows = 25
	}
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name        string
		outage      time.Duration // 0: the receiver never comes back
		jitter      func(ceiling time.Duration) time.Duration
		attempts    int // 0: work's default
		wantBlocked int // -1: some, not all
	}{
		{"a restart of 60s", time.Minute, nil, 0, 0},
		{"a restart of 60s, sends taking their whole timeout", time.Minute, nil, 0, 0},
		{"gone for good", 0, nil, 0, rows},
		{"gone for good, every jitter at its ceiling", 0, func(c time.Duration) time.Duration { return c }, 0, rows},
		// What the defaults are for: the contract's 3 attempts do not
		// ride out the same restart.
		{"a restart of 60s with the contract's 3 attempts", time.Minute, nil, system.DefaultMaxAttempts, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			now := start
			opts := defaults
			opts.Harness.Now = func() time.Time { return now }
			opts.Durability = system.ProcessSafe
			opts.Harness.Jitter = tt.jitter
			if tt.attempts != 0 {
				opts.MaxAttempts = tt.attempts
			}
			if opts.Harness.Jitter == nil {
				random := rand.New(rand.NewPCG(1, uint64(len(tt.name))))
				opts.Harness.Jitter = func(c time.Duration) time.Duration { return time.Duration(random.Int64N(int64(c) + 1)) }
			}
			app, err := system.Open(t.Context(), filepath.Join(dir, "app.db"), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			crm, err := system.OpenCRM(t.Context(), filepath.Join(dir, "crm.db"), system.ProcessSafe)
			if err != nil {
				t.Fatal(err)
			}
			defer crm.Close()
			for i := range rows {
				if _, err := app.RecordApproval(t.Context(), fmt.Sprint("case-", i), "Call back"); err != nil {
					t.Fatal(err)
				}
			}
			sendTime := 5 * time.Millisecond
			if strings.Contains(tt.name, "whole timeout") {
				sendTime = opts.SendTimeout
			}
			r := downReceiver{crm, func() bool { return tt.outage == 0 || now.Before(start.Add(tt.outage)) }}
			blocked := deliverAll(t, app, r, &now, sendTime)
			switch {
			case tt.wantBlocked < 0 && len(blocked) == 0:
				t.Errorf("no row blocked, want some")
			case tt.wantBlocked >= 0 && len(blocked) != tt.wantBlocked:
				t.Errorf("%d rows blocked, want %d", len(blocked), tt.wantBlocked)
			}
			longest := time.Duration(0)
			for key, after := range blocked {
				longest = max(longest, after)
				if after > backoff && tt.attempts == 0 {
					t.Errorf("%s blocked %v after its first attempt, more than the %v of backoff the help states", key, after, backoff)
				}
			}
			if tt.jitter != nil && longest != backoff {
				t.Errorf("with every jitter at its ceiling the rows blocked after %v, want exactly the bound, %v", longest, backoff)
			}
			g, err := app.Gauges(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if g.Pending != 0 || g.Sent+g.Blocked != rows {
				t.Errorf("the outbox ended %+v", g)
			}
			t.Logf("%d sent, %d blocked, the last row done %v after the outage began", g.Sent, g.Blocked, now.Sub(start))
		})
	}
}
