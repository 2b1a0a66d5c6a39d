package main

import (
	"strings"
	"testing"
)

func TestTopLevelHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || stderr != "" {
			t.Errorf("%v: got exit %d, stderr %q; want 0 and none", args, code, stderr)
		}
		for _, c := range commands {
			if !strings.Contains(stdout, "\n  "+c.name+" ") || !strings.Contains(stdout, c.summary) {
				t.Errorf("%v does not list %s:\n%s", args, c.name, stdout)
			}
		}
	}
	_, help, _ := runCLI(t, "help")
	if code, stdout, stderr := runCLI(t); code != 2 || stdout != "" || stderr != help {
		t.Errorf("no arguments: got exit %d, stdout %q, stderr\n%s\nwant 2 and the list of commands on stderr", code, stdout, stderr)
	}
}
