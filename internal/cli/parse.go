package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/outboxlab/handoff/system"
)

// parse parses args with fs, the flag set of the command of the same name,
// and checks the numbers the command table bounds (see checkNumbers). It
// returns a helpRequest for -h or --help, and a usage error (printed once,
// by run) for every flag problem and every unexpected argument: the flag
// package's own output is discarded, so stderr is not written to.
func Parse(fs *flag.FlagSet, args []string, stderr io.Writer, positional bool) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if positional {
		args = flagsFirst(fs, args)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return helpRequest{fs}
		}
		if msg, ok := durationError(fs, err); ok {
			return fmt.Errorf("%w: %s", ErrUsage, msg)
		}
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if !positional && fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	if c, ok := Lookup(fs.Name()); ok {
		return c.checkNumbers(fs)
	}
	return nil
}

// flagsFirst returns args with the flags of fs (and their values) before
// the positional arguments, so that a flag may follow them, as in
// "replay FILE --quiet"; "--" still ends the flags.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(append(flags, a), append(rest, args[i+1:]...)...)
		case !strings.HasPrefix(a, "-") || a == "-":
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		f := fs.Lookup(name)
		if strings.Contains(name, "=") || f == nil {
			continue // a value given with =, or a flag Parse will refuse
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(flags, rest...)
}

// required returns a usage error naming the flags of fs in names that
// were not given.
func Required(fs *flag.FlagSet, names ...string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var missing []string
	for _, n := range names {
		if !set[n] {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s", ErrUsage, strings.Join(missing, ", "))
	}
	return nil
}

// operands parses args with fs, flags and operands in any order, and
// returns the operands.
func Operands(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	var found []string
	for {
		if err := Parse(fs, args, stderr, true); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return found, nil
		}
		found = append(found, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// badValue matches the flag package's error for a value it cannot parse.
var badValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([a-z][a-z-]*): `)

// durationError says what a duration looks like, when err is the flag
// package's error for a duration flag of fs given something else ("1d"):
// its own says only "parse error".
func durationError(fs *flag.FlagSet, err error) (string, bool) {
	m := badValue.FindStringSubmatch(err.Error())
	if m == nil {
		return "", false
	}
	f := fs.Lookup(m[2])
	if f == nil {
		return "", false
	}
	if g, ok := f.Value.(flag.Getter); !ok {
		return "", false
	} else if _, ok := g.Get().(time.Duration); !ok {
		return "", false
	}
	return fmt.Sprintf("--%s is %q, not a duration: write a number and a unit, h, m, s or ms, such as 30s, 90m, or 24h for a day", m[2], m[1]), true
}

// ExistingFolder refuses the path of flag name, unless it is empty or a
// folder that exists: a usage error, as each path check below is, for a
// command must not take a bad path for a failure of the run.
func ExistingFolder(name, path string) error {
	if path == "" {
		return nil
	}
	if err := MistypedURL(name, path); err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: --%s %s: %w", ErrUsage, name, path, PathCause(err))
	}
	if !info.IsDir() {
		return fmt.Errorf("%w: --%s %s: a file, not a folder", ErrUsage, name, path)
	}
	return nil
}

// NotAFile refuses the path of flag name, a folder to create if need be,
// when a file is there.
func NotAFile(name, path string) error {
	if err := MistypedURL(name, path); err != nil {
		return err
	}
	if info, err := os.Stat(path); err == nil && !info.IsDir() {
		return fmt.Errorf("%w: --%s %s: a file, not a folder", ErrUsage, name, path)
	}
	return nil
}

// NotAFolder refuses the path of flag name, a file to write, when a
// folder is there.
func NotAFolder(name, path string) error {
	if err := MistypedURL(name, path); err != nil {
		return err
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return fmt.Errorf("%w: --%s %s: a folder, not a file", ErrUsage, name, path)
	}
	return nil
}

// MistypedURL refuses, as a usage error, the value of flag name that
// starts as a URL with its colon or a slash missing (postgres//…): taken
// for a path, it would make or name a folder postgres.
func MistypedURL(name, value string) error {
	if system.MistypedURL(value) {
		return fmt.Errorf("%w: --%s %q looks like a mistyped URL (a colon and two slashes: postgres://…, http://…)", ErrUsage, name, system.Redact(value))
	}
	return nil
}

// PathCause is what a failed os.Stat says without the path, which the
// caller's message names already.
func PathCause(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}
