package lanes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/internal/explore"
	"github.com/outboxlab/handoff/internal/notrun"
)

// allowed returns the processors each thread of process pid may run on,
// as /proc says them ("0-1", "3"), one entry per distinct set.
func allowed(t *testing.T, pid int) []string {
	t.Helper()
	statuses, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	var sets []string
	for _, st := range statuses {
		b, err := os.ReadFile(st)
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if set, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok && !slices.Contains(sets, strings.TrimSpace(set)) {
				sets = append(sets, strings.TrimSpace(set))
			}
		}
	}
	slices.Sort(sets)
	return sets
}

// TestLanesKeepToTheirProcessors explores with one lane per processor
// this process may run on, and with one more, and checks where the lanes'
// threads may run: each lane on a processor of its own in the first case,
// anywhere in the second; explore's own threads (this process's) anywhere
// in both.
func TestLanesKeepToTheirProcessors(t *testing.T) {
	s, err := affinity()
	if err != nil {
		t.Fatal(err)
	}
	var cpus []string
	for _, c := range s.processors() {
		cpus = append(cpus, strconv.Itoa(c))
	}
	if len(cpus) < 2 {
		notrun.Skip(t, fmt.Sprintf("the lanes' affinity test did not run: this process may run on %v only, and lanes keep to processors when there are two or more", cpus))
	}
	all := allowed(t, os.Getpid())
	for _, tt := range []struct {
		lanes  int
		pinned bool
	}{
		{len(cpus), true},
		{len(cpus) + 1, false},
	} {
		ctx, stop := context.WithCancel(t.Context())
		cfg := config(t, 100000, tt.lanes)
		cfg.Seed, cfg.Steps = 9, explore.DefaultSteps
		done := make(chan error, 1)
		go func() {
			_, err := Run(ctx, os.Args[0], cfg)
			done <- err
		}()
		want := slices.Repeat([]string{strings.Join(all, " ")}, tt.lanes)
		if tt.pinned {
			want = slices.Sorted(slices.Values(cpus))
		}
		// While explore starts a lane, the thread that starts it keeps to
		// the lane's processor: what the sets are is read again until they
		// are as wanted, or a minute has passed.
		var got, coordinator []string
		for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(10 * time.Millisecond) {
			got = nil
			for _, lane := range children(t, os.Getpid()) {
				got = append(got, strings.Join(allowed(t, lane), " "))
			}
			slices.Sort(got)
			if coordinator = allowed(t, os.Getpid()); slices.Equal(got, want) && slices.Equal(coordinator, all) {
				break
			}
		}
		if !slices.Equal(got, want) || !slices.Equal(coordinator, all) {
			t.Errorf("%d lanes on %d processors: the lanes' threads may run on %q, explore's on %q; want %q and %q",
				tt.lanes, len(cpus), got, coordinator, want, all)
		}
		stop()
		if err := <-done; err != nil {
			t.Errorf("%d lanes, stopped: %v", tt.lanes, err)
		}
	}
}
