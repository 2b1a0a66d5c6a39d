//go:build !linux

package lanes

import "os/exec"

// laneCPUs returns nil: lanes keep to no processor but on Linux.
func laneCPUs(int) []int { return nil }

// startOn starts cmd.
func startOn(cmd *exec.Cmd, _ int) error { return cmd.Start() }
