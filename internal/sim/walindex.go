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
//
// SQLite keeps a file's wal-index while any connection holds the file
// open, and makes a new one when the file is next opened after its last
// connection closed; forget looks for a new one. The lane holds a
// connection of its own on each file for as long as it lives, so that
// between two forgets (a sequence's steps) the wal-index stays the same.
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
// last call (and since forget).
func (w *walIndex) changed() (bool, error) {
	hdr, err := w.header()
	if err != nil {
		return false, err
	}
	changed := !w.known || !bytes.Equal(hdr[:], w.last[:])
	w.last, w.known = hdr, true
	return changed, nil
}

// header is the wal-index's header as it is now: two readings differ if
// a commit changed the file between them.
func (w *walIndex) header() ([walIndexHeaderSize]byte, error) {
	var hdr [walIndexHeaderSize]byte
	if _, err := w.f.ReadAt(hdr[:], 0); err != nil && !errors.Is(err, io.EOF) {
		return hdr, fmt.Errorf("handoff: reading the wal-index %s: %w", w.path, err)
	}
	return hdr, nil
}

// reopenIfReplaced opens the file at w.path again if it is not the one
// w holds.
func (w *walIndex) reopenIfReplaced() error {
	now, err := os.Stat(w.path)
	if err == nil && os.SameFile(w.held, now) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("handoff: reading the wal-index %s: %w", w.path, err)
	}
	f, err := os.Open(w.path)
	if err != nil {
		return fmt.Errorf("handoff: opening the wal-index %s again: %w", w.path, err)
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

// forget makes the next call to changed report a change, and reads from
// then on the file's wal-index as it is now, a new one if SQLite made
// one since.
func (w *walIndex) forget() error {
	w.known = false
	return w.reopenIfReplaced()
}

func (w *walIndex) close() error { return w.f.Close() }
