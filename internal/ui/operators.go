package ui

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Operators says who holds each token that may act, so that the audit
// records who acted, never a name someone typed. Its tokens come from a
// file of one operator a line, NAME TOKEN (# starts a comment), or from
// one shared token, whose holder the audit names SharedName. A file is
// read again when it changes (its size or modification time), so a
// token is added, rotated or revoked without a restart; a session whose
// token is gone can act no more.
type Operators struct {
	path string // "" for a fixed set

	mu      sync.Mutex
	byToken map[string]string
	stamp   fileStamp
	broken  error // why the file's last version was refused: nobody may act
}

// SharedName is how the audit names the holder of a shared token: one
// token, no name, for a page with a single operator.
const SharedName = "holder of the shared token"

// MinTokenLength is the shortest token Operators takes: a short one is
// guessed.
const MinTokenLength = 16

// ErrOperators is a token file or token that cannot be used: its
// message says which line and why.
var ErrOperators = errors.New("ui: bad operators")

// fileStamp is what says a file changed.
type fileStamp struct {
	size int64
	mod  time.Time
}

// SharedToken is Operators of one token, held by SharedName.
func SharedToken(token string) (*Operators, error) {
	if err := checkToken(token); err != nil {
		return nil, err
	}
	return &Operators{byToken: map[string]string{token: SharedName}}, nil
}

// LoadOperators reads the operators of the file at path.
func LoadOperators(path string) (*Operators, error) {
	o := &Operators{path: path}
	if err := o.reload(); err != nil {
		return nil, err
	}
	return o, nil
}

// Name returns the operator who holds token, reading the file again
// first if it changed. A file whose new version is refused lets nobody
// act until it is fixed.
func (o *Operators) Name(token string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.path != "" {
		if st, err := stampOf(o.path); err != nil || st != o.stamp {
			o.broken = o.reloadLocked()
		}
	}
	if o.broken != nil || token == "" {
		return "", false
	}
	for t, name := range o.byToken {
		if equal(t, token) {
			return name, true
		}
	}
	return "", false
}

// Problem says why nobody may act, when the file's new version was
// refused; nil otherwise.
func (o *Operators) Problem() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.broken
}

// Count is how many operators may act.
func (o *Operators) Count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.byToken)
}

func (o *Operators) reload() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reloadLocked()
}

func (o *Operators) reloadLocked() error {
	st, err := stampOf(o.path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOperators, err)
	}
	b, err := os.ReadFile(o.path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOperators, err)
	}
	byToken, err := ParseOperators(o.path, string(b))
	if err != nil {
		return err
	}
	o.byToken, o.stamp = byToken, st
	return nil
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{size: fi.Size(), mod: fi.ModTime()}, nil
}

// ParseOperators reads a token file (name is how errors call it): one
// operator a line, NAME TOKEN, or a single line holding one shared
// token; blank lines and lines starting with # are skipped. A name is 1
// to 64 letters, digits, '.', '_', '-' or '@'; a token at least
// MinTokenLength characters; no token or name twice.
func ParseOperators(name, text string) (map[string]string, error) {
	byToken, names := map[string]string{}, map[string]bool{}
	shared := false
	sc := bufio.NewScanner(strings.NewReader(text))
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: %s:%d: %s", ErrOperators, name, line, fmt.Sprintf(format, args...))
		}
		var who, token string
		switch len(fields) {
		case 1:
			who, token, shared = SharedName, fields[0], true
		case 2:
			who, token = fields[0], fields[1]
			if !validName(who) {
				return nil, bad("the name %q: want 1 to 64 letters, digits, '.', '_', '-' or '@'", who)
			}
		default:
			return nil, bad("want NAME TOKEN, or one token alone; got %d words", len(fields))
		}
		if len(token) < MinTokenLength {
			whose := "the token"
			if who != SharedName {
				whose = who + "'s token"
			}
			return nil, bad("%s has %d characters, want at least %d", whose, len(token), MinTokenLength)
		}
		switch {
		case byToken[token] != "":
			return nil, bad("%s's token is %s's too: each operator needs a token of their own", who, byToken[token])
		case names[who] && who != SharedName:
			return nil, bad("%s has a token already", who)
		}
		byToken[token], names[who] = who, true
	}
	switch {
	case len(byToken) == 0:
		return nil, fmt.Errorf("%w: %s holds no token", ErrOperators, name)
	case shared && len(byToken) > 1:
		return nil, fmt.Errorf("%w: %s mixes a shared token (a line with a token alone) with other lines: give every operator a name, NAME TOKEN", ErrOperators, name)
	}
	return byToken, nil
}

// checkToken refuses a token too short to resist guessing.
func checkToken(token string) error {
	if len(token) < MinTokenLength {
		return fmt.Errorf("%w: %d characters, want at least %d", ErrOperators, len(token), MinTokenLength)
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@", r)) {
			return false
		}
	}
	return true
}
