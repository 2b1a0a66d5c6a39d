//go:build unix

package main

import (
	"errors"
	"syscall"
)

// processGone reports whether no process with id pid runs on this host:
// signal 0 checks without signalling, and only "no such process" says it
// is gone (a process of another user answers "not permitted").
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
