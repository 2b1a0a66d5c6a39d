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
// connection closed: a walIndex reads one wal-index only, and holds for
// as long as another connection keeps the file open. The lane's own
// connection on each file does for as long as the lane lives; forget,
// between two sequences, checks that the wal-index is still the file's.
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

// forget makes the next call to changed report a change. It fails if the
// file's wal-index is no longer the one w reads: every connection closed
// the file meanwhile, and commits since may have gone unseen.
func (w *walIndex) forget() error {
	w.known = false
	now, err := os.Stat(w.path)
	if err != nil {
		return fmt.Errorf("handoff: the wal-index %s is gone: every connection closed its file, and commits may have gone unseen: %w", w.path, err)
	}
	if !os.SameFile(w.held, now) {
		return fmt.Errorf("handoff: the wal-index %s was made anew: every connection closed its file, and commits may have gone unseen", w.path)
	}
	return nil
}

// close closes w's file. The process's POSIX locks on the wal-index go
// with it, SQLite's own included: close only what no connection of the
// process uses any more (the lane closes its wal-indexes after its
// connections).
func (w *walIndex) close() error { return w.f.Close() }
