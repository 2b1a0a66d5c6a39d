package handoff

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// handWrittenWire are the marks of a PostgreSQL wire-protocol message
// written or taken apart by hand, each with the files allowed to carry
// it and why. Every message is built and decoded with pgproto3, whose
// encodings also give the type bytes a stream's reader compares.
var handWrittenWire = []struct {
	what    string
	pattern *regexp.Regexp
	allowed map[string]string // file (slash-separated, from the module's root): why
}{
	{
		what:    "a startup-phase code (protocol 3.0 or 3.2, SSLRequest, GSSENCRequest, CancelRequest)",
		pattern: regexp.MustCompile(`\b(196608|196610|80877102|80877103|80877104)\b`),
	},
	{
		what:    "a byte slice that opens with a message's type, as []byte{'X', 0, 0, 0, 4}",
		pattern: regexp.MustCompile(`\[\]byte\{\s*'[A-Za-z0-9]'`),
	},
	{
		what:    "a call whose first argument is a message's type, as message('Q', body)",
		pattern: regexp.MustCompile(`\w+\(\s*'[A-Za-z0-9]'\s*,`),
	},
	{
		what:    "a switch on a message's type byte, as case 'Z':",
		pattern: regexp.MustCompile(`case\s+'[A-Za-z0-9]'\s*[:,]`),
	},
	{
		what:    "a length written with binary.BigEndian, as a message's length prefix",
		pattern: regexp.MustCompile(`binary\.BigEndian\.(Append|Put)Uint(16|32)\([^\n]*len\(`),
	},
	{
		what:    "a message header's length read with binary.BigEndian",
		pattern: regexp.MustCompile(`binary\.BigEndian\.Uint32\([\w.]+\[1:\]\)`),
		allowed: map[string]string{
			"internal/sessions/keeper.go": "its scanner follows the messages passing through a connection piece by piece, by their headers, without decoding them",
		},
	},
}

// TestNoWireMessageByHand: no Go file of the module, tests aside, writes
// or takes apart a PostgreSQL wire-protocol message by hand, outside the
// few places handWrittenWire allows.
func TestNoWireMessageByHand(t *testing.T) {
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		name := filepath.ToSlash(path)
		for _, mark := range handWrittenWire {
			if _, ok := mark.allowed[name]; ok {
				continue
			}
			for _, at := range mark.pattern.FindAllIndex(src, -1) {
				line := 1 + strings.Count(string(src[:at[0]]), "\n")
				t.Errorf("%s:%d: %s (%q): build or decode it with pgproto3", name, line, mark.what, src[at[0]:at[1]])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("only %d Go files were read from the module's root: the walk missed the module", files)
	}
}
