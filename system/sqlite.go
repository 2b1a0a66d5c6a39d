package system

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"modernc.org/sqlite" // the pure-Go driver, registered as "sqlite"
)

// Durability says how far a commit must reach before it returns.
type Durability int

const (
	// Durable syncs every commit to stable storage (synchronous=FULL): a
	// commit survives a power loss. The default.
	Durable Durability = iota

	// ProcessSafe hands every commit to the operating system without syncing
	// it (synchronous=OFF): a commit survives the process dying, not the
	// machine. The simulation uses it because its restarts model process
	// crashes, which lose nothing the operating system already holds.
	ProcessSafe
)

// Synchronous is the value of SQLite's synchronous pragma for d, or an
// ErrInvalidInput error for an unknown Durability.
func (d Durability) Synchronous() (string, error) {
	switch d {
	case Durable:
		return "FULL", nil
	case ProcessSafe:
		return "OFF", nil
	}
	return "", invalid("unknown durability %d", int(d))
}

// DefaultBusyTimeout is how long a write waits for another connection's
// write lock before it fails with ErrBusy, when the options give no
// BusyTimeout.
const DefaultBusyTimeout = 5 * time.Second

// header is what a database file says about itself.
type header struct {
	empty   bool  // the file is missing or has no bytes: a new database
	appID   int32 // SQLite's application_id field
	version int32 // the schema version (see kind.versionOf)
}

// sqliteMagic starts every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// CheckPath refuses, with an error that is both ErrInvalidInput and
// ErrBadPath, what SQLite would take for
// something other than a plain file: an in-memory database, a URI, a path
// with a query or fragment, a folder. Every open calls it first.
func CheckPath(path string) error {
	switch {
	case path == "":
		return badPath("database path is empty; give a plain file path")
	case MistypedURL(path):
		return badPath("%q looks like a mistyped URL: a PostgreSQL database is named postgres://HOST/DB (colon, two slashes); a file path gives a plain name", Redact(path))
	case strings.Contains(path, "://"):
		return badPath("%q is a URL, not a file path: only the app database may be in PostgreSQL, named postgres://… or postgresql://… (the CRM is a SQLite file)", Redact(path))
	case path == ":memory:":
		return badPath("database path %q is SQLite's in-memory database; give a plain file path", path)
	case strings.HasPrefix(strings.ToLower(path), "file:"):
		return badPath("database path %q is a URI; give a plain file path", path)
	case strings.ContainsAny(path, "?#"):
		return badPath("database path %q contains '?' or '#'; give a plain file path", path)
	case strings.ContainsRune(path, 0):
		return badPath("database path %q contains a NUL byte; give a plain file path", path)
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return badPath("database path %s is a folder; give a plain file path", path)
	}
	return nil
}

// readHeader reads what the database file at path says about itself
// without writing anything. A file that is not a SQLite database, or one
// that belongs to something else, is refused with ErrWrongDatabase; one
// that a newer handoff wrote, with ErrNewerSchema.
//
// The header bytes of the file are read directly when no -wal or -shm file
// is there; otherwise a writer may hold a newer header in its WAL, and
// SQLite reads it, read-only.
func readHeader(ctx context.Context, path string, k kind) (header, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return header{empty: true}, nil
	}
	if err != nil {
		return header{}, fmt.Errorf("system: opening %s: %w", path, err)
	}
	defer f.Close()
	b := make([]byte, 100)
	n, err := io.ReadFull(f, b)
	switch {
	case n == 0:
		return header{empty: true}, nil
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return header{}, fmt.Errorf("system: reading %s: %w", path, err)
	case n < len(b) || !bytes.HasPrefix(b, []byte(sqliteMagic)):
		return header{}, fmt.Errorf("%w: %s is not a SQLite database", ErrWrongDatabase, path)
	}
	appID, userVersion := int32(binary.BigEndian.Uint32(b[68:72])), int32(binary.BigEndian.Uint32(b[60:64]))
	var db *sql.DB
	if exists(path+"-wal") || exists(path+"-shm") || appID == 0 {
		if db, err = openReader(path); err != nil {
			return header{}, err
		}
		defer db.Close()
		if err := db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
			return header{}, driverError("reading "+path, err)
		}
		if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&userVersion); err != nil {
			return header{}, driverError("reading "+path, err)
		}
	}
	h := header{appID: appID, version: k.versionOf(appID, userVersion)}
	switch {
	case h.appID != 0 && h.appID != k.appID:
		return header{}, fmt.Errorf("%w: %s is not %s (its application id is %#x, want %#x)", ErrWrongDatabase, path, k.name, h.appID, k.appID)
	case h.appID == k.appID && h.version > k.version():
		return header{}, fmt.Errorf("%w: %s has schema version %d; this handoff knows up to %d", ErrNewerSchema, path, h.version, k.version())
	case h.appID == 0:
		var objects int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&objects); err != nil {
			return header{}, driverError("reading "+path, err)
		}
		if objects > 0 {
			return header{}, fmt.Errorf("%w: %s is a SQLite database of something else (%d schema objects and no handoff mark); it is not %s", ErrWrongDatabase, path, objects, k.name)
		}
	}
	return h, nil
}

// checkWritable refuses, before SQLite creates anything next to it, a
// database that this process could read but not write: the file, its
// folder (where the -wal and -shm files live) and any -wal or -shm file
// that is already there. SQLite would otherwise fail later, after leaving
// a -shm file with the database's read-only mode that breaks every
// command until it is removed by hand.
func checkWritable(path string) error {
	dir := filepath.Dir(path)
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: the folder %s does not exist", ErrInvalidInput, dir)
	case err != nil:
		return fmt.Errorf("system: %w", err)
	case !info.IsDir():
		return fmt.Errorf("%w: %s is not a folder", ErrInvalidInput, dir)
	}
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return fmt.Errorf("%w: cannot write in the folder %s (SQLite keeps its -wal and -shm files there): %v", ErrReadOnly, dir, err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("%w: cannot write %s: %v", ErrReadOnly, p, err)
		default:
			f.Close()
		}
	}
	return nil
}

// openDB opens the SQLite file at path for writing as a database of kind
// k, creating it when it is missing or empty and upgrading its schema when
// an older handoff wrote it, in one transaction. A file that is not a
// SQLite database, a SQLite database of something else (another
// application id, or tables without one), a read-only file and a path
// that is not a plain file are refused before anything is written. The
// database runs in WAL mode: a commit appends to the log and syncs once,
// and readers never block the single writer.
func openDB(ctx context.Context, path string, k kind, d Durability, busy time.Duration, now func() time.Time, wrap func(driver.Connector) driver.Connector) (*statements, error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	synchronous, err := d.Synchronous()
	if err != nil {
		return nil, err
	}
	var db *sql.DB
	var from int32
	q, err := hold(path, k, synchronous+processOf(wrap), func() error {
		h, err := readHeader(ctx, path, k)
		if err != nil {
			return err
		}
		if err := checkWritable(path); err != nil {
			return err
		}
		db, err = openWriter(path, synchronous, busy, wrap)
		if err != nil || !h.empty && h.version == k.version() {
			return err
		}
		if from, err = migrate(ctx, db, path, k, now()); err != nil {
			db.Close()
			return err
		}
		return nil
	}, func() (err error) {
		db, err = openWriter(path, synchronous, busy, wrap)
		return err
	})
	if err != nil {
		return nil, err
	}
	q.db, q.upgradedFrom = db, int(from)
	// The connection opens now, so that a handle that cannot work says
	// so here; its statements are prepared as they are first needed.
	if err := db.PingContext(ctx); err != nil {
		q.close()
		return nil, driverError("opening "+path, err)
	}
	return q, nil
}

// openWriter opens path for reading and writing: every transaction
// BEGIN IMMEDIATE, foreign keys on, the synchronous setting and the busy
// timeout given; wrap, unless nil, wraps its connector.
func openWriter(path, sync string, busy time.Duration, wrap func(driver.Connector) driver.Connector) (*sql.DB, error) {
	dsn := fmt.Sprintf("%s?_txlock=immediate&_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=synchronous(%s)&_pragma=cell_size_check(1)",
		path, busy.Milliseconds(), sync)
	var c driver.Connector = dsnConnector{dsn}
	if wrap != nil {
		c = wrap(c)
	}
	db := sql.OpenDB(c)
	// One connection: SQLite serialises writers anyway, and a single
	// connection keeps every statement of a transaction on it.
	db.SetMaxOpenConns(1)
	return db, nil
}

// ProcessConnector is a wrapped connector (Options.Harness.WrapSQLite)
// that says which process its connections belong to, when a harness runs
// several simulated processes in one: the handles of one process commit
// their writes together (group commit), and a batch may run on any of its
// handles' connections, so handles of different processes must not share
// a batch, or a crash of one would fail another's writes.
type ProcessConnector interface {
	driver.Connector
	Process() string
}

// processOf is the process wrap's connections belong to, as a suffix of
// a group's name: "" unless wrap says (ProcessConnector).
func processOf(wrap func(driver.Connector) driver.Connector) string {
	if wrap == nil {
		return ""
	}
	if pc, ok := wrap(dsnConnector{}).(ProcessConnector); ok {
		return "@" + pc.Process()
	}
	return ""
}

// dsnConnector connects to the SQLite database dsn names, as
// sql.Open("sqlite", dsn) does.
type dsnConnector struct{ dsn string }

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.Driver().Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return &sqlite.Driver{} }

// The handles this process holds on each database file, by absolute path.
// POSIX locks belong to a process and are all dropped by the first close
// of any descriptor of the file, so once this process holds a SQLite
// handle on a file it must never open and close a descriptor of that file
// (or of its -wal or -shm) again: another process could then find the
// database unlocked and reset the shared memory under the live handle
// (SQLite's "disk I/O error" 8714). The checks that read the files
// directly therefore run only for the first handle, under heldMu, and a
// later handle trusts them.
var (
	heldMu sync.Mutex
	held   = map[string]heldFile{}
)

// heldFile is how many handles of which kind this process holds on a
// file, and the groups that commit their writes together, by synchronous
// setting ("" for the read-only handles) and process (ProcessConnector).
type heldFile struct {
	kind   string
	n      int
	groups map[string]*group
}

// hold opens a handle on path as kind k with the given synchronous
// setting: with first, which may read the files directly, when this
// process holds no handle on it, otherwise with again. It returns the
// handle's statements, without a database yet: their group is that of
// the process's handles on path with the same setting, and their release
// gives the handle back when it closes.
func hold(path string, k kind, synchronous string, first, again func() error) (*statements, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("system: %w", err)
	}
	heldMu.Lock()
	defer heldMu.Unlock()
	f, open := held[abs]
	switch {
	case open && f.kind != k.name:
		return nil, fmt.Errorf("%w: %s is open as %s in this process, not %s", ErrWrongDatabase, path, f.kind, k.name)
	case open:
		err = again()
	default:
		err = first()
		f.groups = map[string]*group{}
	}
	if err != nil {
		return nil, err
	}
	g := f.groups[synchronous]
	if g == nil {
		g = &group{}
		f.groups[synchronous] = g
	}
	held[abs] = heldFile{kind: k.name, n: f.n + 1, groups: f.groups}
	return &statements{group: g, release: sync.OnceFunc(func() {
		heldMu.Lock()
		defer heldMu.Unlock()
		if f := held[abs]; f.n > 1 {
			f.n--
			held[abs] = f
		} else {
			delete(held, abs)
		}
	})}, nil
}

// openReadOnly opens the existing database at path, of kind k and at k's
// schema version, for reading only. It writes nothing and leaves nothing
// behind: see openReader.
func openReadOnly(ctx context.Context, path string, k kind) (*statements, error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	var db *sql.DB
	open := func() (err error) {
		if db, err = openReader(path); err != nil {
			return err
		}
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return driverError("opening "+path, err)
		}
		return nil
	}
	q, err := hold(path, k, "", func() error {
		h, err := readHeader(ctx, path, k)
		if err != nil {
			return err
		}
		switch {
		case h.empty:
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%w: %s does not exist", ErrNotFound, path)
			}
			return fmt.Errorf("%w: %s is empty, not %s", ErrWrongDatabase, path, k.name)
		case h.appID != k.appID:
			return fmt.Errorf("%w: %s is not %s (it has no handoff mark)", ErrWrongDatabase, path, k.name)
		case h.version < k.version():
			return fmt.Errorf("%w: %s has schema version %d, this handoff reads %d; opening it for writing upgrades it in place (handoff upgrade)", ErrOldSchema, path, h.version, k.version())
		}
		return open()
	}, open)
	if err != nil {
		return nil, err
	}
	q.db = db
	return q, nil
}

// openReader opens path read-only. When no -wal or -shm file is there, no
// process has the database open, and it is opened immutable: SQLite then
// creates neither file (a read-only WAL connection would create both and
// leave them, with the database's mode). Otherwise it joins the writer's
// WAL read-only, and the files it finds stay theirs.
func openReader(path string) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("system: %w", err)
	}
	uri := "file:" + strings.ReplaceAll(abs, "%", "%25") + "?mode=ro&_pragma=busy_timeout(5000)"
	if !exists(path+"-wal") && !exists(path+"-shm") {
		uri += "&immutable=1"
	}
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return nil, driverError("opening "+path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// integrityCheck runs SQLite's integrity_check on db and returns what it
// reports wrong, nothing when the file is sound.
func integrityCheck(ctx context.Context, db *sql.DB, path string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		if errors.Is(driverError("", err), ErrCorrupt) {
			return []string{err.Error()}, nil
		}
		return nil, driverError("checking "+path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, driverError("checking "+path, err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		if errors.Is(driverError("", err), ErrCorrupt) {
			return append(problems, err.Error()), nil
		}
		return nil, driverError("checking "+path, err)
	}
	return problems, nil
}
