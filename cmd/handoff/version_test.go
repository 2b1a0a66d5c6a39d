package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "version")
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "handoff ") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("version: got exit %d, stdout %q, stderr %q; want 0 and one line", code, stdout, stderr)
	}
	info := func(version string, settings ...string) *debug.BuildInfo {
		b := &debug.BuildInfo{}
		b.Main.Version = version
		for i := 0; i < len(settings); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return b
	}
	for _, tt := range []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{nil, false, "handoff (devel)"},
		{info(""), true, "handoff (devel)"},
		{info("(devel)"), true, "handoff (devel)"},
		{info("v1.2.0"), true, "handoff v1.2.0"},
		{info("v1.2.0", "vcs.modified", "true", "vcs.time", "2026-01-02T03:04:05Z", "vcs.revision", "abc123", "vcs", "git"), true,
			"handoff v1.2.0 (revision abc123, 2026-01-02T03:04:05Z, modified)"},
		{info("(devel)", "vcs.revision", "abc123", "vcs.modified", "false"), true, "handoff (devel) (revision abc123)"},
	} {
		if got := versionLine(tt.info, tt.ok); got != tt.want {
			t.Errorf("versionLine: got %q, want %q", got, tt.want)
		}
	}
}
