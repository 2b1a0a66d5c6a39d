package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// version prints the module version and the VCS revision the build
// recorded.
func version(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	fmt.Fprintln(stdout, versionLine(debug.ReadBuildInfo()))
	return nil
}

// versionLine says which build info describes: "handoff VERSION", then the
// VCS revision, its time and whether the work tree was modified, when the
// build recorded them. VERSION is "(devel)" when there is none.
func versionLine(info *debug.BuildInfo, ok bool) string {
	v := "(devel)"
	if ok && info.Main.Version != "" {
		v = info.Main.Version
	}
	if !ok {
		return "handoff " + v
	}
	setting := map[string]string{}
	for _, s := range info.Settings {
		setting[s.Key] = s.Value
	}
	var vcs []string
	if r := setting["vcs.revision"]; r != "" {
		vcs = append(vcs, "revision "+r)
	}
	if t := setting["vcs.time"]; t != "" {
		vcs = append(vcs, t)
	}
	if setting["vcs.modified"] == "true" {
		vcs = append(vcs, "modified")
	}
	if len(vcs) == 0 {
		return "handoff " + v
	}
	return fmt.Sprintf("handoff %s (%s)", v, strings.Join(vcs, ", "))
}
