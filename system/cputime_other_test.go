//go:build !unix

package system_test

import "time"

// processorTime is the processor time this process has used so far: this
// platform does not tell it.
func processorTime() (time.Duration, bool) { return 0, false }
