package main

import (
	"bytes"
	"encoding/gob"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/lanes"
)

// TestLaneCommandRefused runs the lane command as a person might, and as
// a newer explore might: each is a usage error that says what the command
// is for, and help does not list it.
func TestLaneCommandRefused(t *testing.T) {
	// The first message of a run, its fields by name as gob sends them.
	type laneStart struct {
		Protocol, Design string
		Checks, Steps    int
		Seed             uint64
	}
	var older bytes.Buffer
	if err := gob.NewEncoder(&older).Encode(laneStart{Protocol: "handoff explore-lane 0", Design: "handoff", Checks: 1, Steps: 1, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		args  []string
		stdin io.Reader
	}{
		{"arguments", []string{"--checks", "3"}, strings.NewReader("")},
		{"no run on its input", nil, strings.NewReader("")},
		{"text on its input", nil, strings.NewReader("explore please\n")},
		{"another protocol", nil, &older},
	} {
		cmd := exec.Command(os.Args[0], append([]string{lanes.Command}, tt.args...)...)
		cmd.Stdin = tt.stdin
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || stdout.Len() > 0 ||
			!strings.Contains(stderr.String(), "explore-lane runs one lane of handoff-sim explore --parallel N") {
			t.Errorf("%s: got %v, stdout %q, stderr %q; want exit status 2 and what the command is for", tt.name, err, stdout.String(), stderr.String())
		}
	}
	if _, stdout, _ := runCLI(t, "help"); strings.Contains(stdout, lanes.Command) {
		t.Errorf("help lists %s:\n%s", lanes.Command, stdout)
	}
}

// TestLaneCommandUnknownDesign runs the lane command with a run of a
// design it does not know, as an older executable under a newer explore
// would: a usage error that names the design.
func TestLaneCommandUnknownDesign(t *testing.T) {
	var run bytes.Buffer
	if err := gob.NewEncoder(&run).Encode(struct {
		Protocol, Design string
		Checks, Steps    int
		Seed             uint64
	}{"handoff explore-lane 1", "no-such-design", 1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], lanes.Command)
	cmd.Stdin = &run
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if want := "handoff-sim explore-lane: unknown design \"no-such-design\" (see handoff-sim designs)\n"; !errors.As(err, &exit) || exit.ExitCode() != 2 || stdout.Len() > 0 || stderr.String() != want {
		t.Errorf("got %v, stdout %q, stderr %q; want exit status 2 and %q", err, stdout.String(), stderr.String(), want)
	}
}
