package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A worker's name says which process it runs in, HOST:PID and then what
// the process calls it (work's workers HOST:PID:1 …, deliver's
// HOST:PID:deliver), so that two runs of a command never share a name,
// and a process that starts can tell a holder of leases that is gone (its
// process no longer runs on this host) from one that may still be
// sending, and release the leases of the first kind only.

// processPrefix is this process's HOST:PID.
func processPrefix() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// processOf returns the host and process id a worker's name says it runs
// in, HOST:PID:…; ok is false for a name of another form (a stable name
// given with work --worker).
func processOf(worker string) (host string, pid int, ok bool) {
	parts := strings.SplitN(worker, ":", 3)
	if len(parts) < 3 || parts[0] == "" {
		return "", 0, false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 || strconv.Itoa(pid) != parts[1] {
		return "", 0, false
	}
	return parts[0], pid, true
}

// workerGone reports whether the worker named worker is gone for good: its
// name says it ran in a process of this host (HOST:PID:…) other than this
// one, and no process with that id runs here. Any doubt (another host, a
// name of another form, a process that may be another user's) says it is
// not, so that its leases run out rather than being taken from a live
// worker.
func workerGone(worker string) bool {
	host, pid, ok := processOf(worker)
	if !ok || pid == os.Getpid() {
		return false
	}
	self, err := os.Hostname()
	if err != nil || self == "" {
		self = "localhost"
	}
	return host == self && processGone(pid)
}
