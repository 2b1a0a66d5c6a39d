package cli

import (
	"io"
	"os"
)

// IsTerminal says whether w is a terminal: a person watches it, and a
// line can be rewritten in place.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
