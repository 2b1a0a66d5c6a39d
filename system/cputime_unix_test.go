//go:build unix

package system_test

import (
	"syscall"
	"time"
)

// processorTime is the processor time this process has used so far, user
// and system, and whether the platform tells it.
func processorTime() (time.Duration, bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
