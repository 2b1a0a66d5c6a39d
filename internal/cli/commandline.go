package cli

import (
	"path/filepath"
	"slices"
	"strings"
)

// InvokedAs is how a command line a person copies runs this program
// again: as it was started (its name from the PATH, or the path given to
// it), or go run with the program's folder (from the module's folder) when
// go run or go test built it, in a go-build folder that is gone once it ends.
func InvokedAs(arg0 string) string {
	if slices.ContainsFunc(strings.Split(filepath.ToSlash(arg0), "/"), func(dir string) bool { return strings.HasPrefix(dir, "go-build") }) {
		return "go run " + program.dir
	}
	return ShellWord(arg0)
}

// ShellWord is s as one word of a shell's command line: as it is when it
// holds nothing a shell reads otherwise, single-quoted when it does (a
// URL's ? and &, say, which would match files and start a job).
func ShellWord(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
