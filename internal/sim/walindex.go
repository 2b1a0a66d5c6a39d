package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// walIndexHeaderSize is the size of the first copy of a wal-index
// header: the first 48 bytes of a SQLite file's FILE-shm
// (https://www.sqlite.org/walformat.html, "The WAL-Index Header").
const walIndexHeaderSize = 48

// walIndex says whether any connection committed to a SQLite file in WAL
// mode since it last looked, by reading the header of the file's
// wal-index: every commit that changes the file writes it anew (its
// iChange counter goes up, with the WAL's size and checksum), which is
// how SQLite itself tells a connection that its cache is out of date, and
// what PRAGMA data_version reports. Reading 48 bytes costs a system
// call, against a statement and a read transaction for the pragma.
type walIndex struct {
	path  string // FILE-shm
	f     *os.File
	held  fs.FileInfo // f's, to tell whether path is still f
	last  [walIndexHeaderSize]byte
	known bool // last was read since forget
}

// errNoWALIndex is why openWALIndex returns no walIndex: the file is
// not in WAL mode, or no connection has it open.
var errNoWALIndex = errors.New("no wal-index")

// openWALIndex opens the wal-index of the SQLite file at path, which a
// connection in WAL mode holds open: it is there as long as one does.
func openWALIndex(path string) (*walIndex, error) {
	f, err := os.Open(path + "-shm")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoWALIndex
	}
	if err != nil {
		return nil, err
	}
	held, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &walIndex{path: path + "-shm", f: f, held: held}, nil
}

// changed reports whether a commit may have changed the file since the
// last call (and since forget). A wal-index that is no longer the file
// at its path (SQLite removes it when the last connection closes, and
// makes a new one at the next open) is opened again, and counts as a
// change.
func (w *walIndex) changed() (bool, error) {
	if err := w.reopenIfReplaced(); err != nil {
		return false, err
	}
	var hdr [walIndexHeaderSize]byte
	if _, err := w.f.ReadAt(hdr[:], 0); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("handoff: reading the wal-index %s: %w", w.path, err)
	}
	changed := !w.known || !bytes.Equal(hdr[:], w.last[:])
	w.last, w.known = hdr, true
	return changed, nil
}

// reopenIfReplaced opens the file at w.path again if it is not the one
// w holds, and forgets what w saw; while there is none, every call
// counts as a change.
func (w *walIndex) reopenIfReplaced() error {
	now, err := os.Stat(w.path)
	if err == nil && os.SameFile(w.held, now) {
		return nil
	}
	w.known = false
	if err != nil {
		return nil
	}
	f, err := os.Open(w.path)
	if err != nil {
		return nil
	}
	held, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("handoff: reading the wal-index %s: %w", w.path, err)
	}
	w.f.Close()
	w.f, w.held = f, held
	return nil
}

// forget makes the next call to changed report a change.
func (w *walIndex) forget() { w.known = false }

func (w *walIndex) close() error { return w.f.Close() }
