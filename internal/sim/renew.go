package sim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// handleKey says what an app handle was opened as: the worker that claims
// through it and the options it holds.
type handleKey struct {
	worker string
	config model.Config
}

// handleKey is the key of the named worker's handle under the model's
// options.
func (e *Env) handleKey(worker string) handleKey { return handleKey{worker, e.model.Config} }

// idleHandles are open handles that no step uses: those a config step set
// aside, and, between the sequences of an exploration, those no crash
// closed. A handle is taken from them only where a step would open one for
// a worker that has not started yet (a new sequence, a config step, a
// named worker's first step): never for a restart, which opens every
// handle again from its file. Each worker has two idle handles at most,
// one of the default options (every sequence starts with them) and the
// last of others, so that the connections an Env holds to a PostgreSQL
// server stay within its budget (see backend.PostgresConnections)
// however many options a run draws.
type idleHandles struct {
	apps map[idleSlot]idleApp
	crms map[int64]designs.CRM // by the receiver's retention in milliseconds
}

// idleSlot is where a worker's idle handle is kept: apart for the
// default options, or in the one place for all others.
type idleSlot struct {
	worker   string
	defaults bool
}

// slotOf is the slot of a handle opened as k.
func slotOf(k handleKey) idleSlot { return idleSlot{k.worker, k.config == model.Defaults()} }

// idleApp is an idle app handle and what it was opened as.
type idleApp struct {
	key handleKey
	app designs.App
}

// keepApp sets app aside as k, closing the handle it displaces, if any.
func (h *idleHandles) keepApp(k handleKey, app designs.App) error {
	if h.apps == nil {
		h.apps = map[idleSlot]idleApp{}
	}
	var err error
	if old, ok := h.apps[slotOf(k)]; ok {
		err = old.app.Close()
	}
	h.apps[slotOf(k)] = idleApp{k, app}
	return err
}

// takeApp takes the idle handle kept as k, if there is one. An idle
// handle in k's slot opened with other options is closed: the worker
// opens one of k's now, which takes its place when it is set aside.
func (h *idleHandles) takeApp(k handleKey) (designs.App, bool, error) {
	idle, ok := h.apps[slotOf(k)]
	if !ok {
		return nil, false, nil
	}
	delete(h.apps, slotOf(k))
	if idle.key != k {
		return nil, false, idle.app.Close()
	}
	return idle.app, true, nil
}

// keepCRM sets crm aside for retention, closing the handle it displaces.
func (h *idleHandles) keepCRM(retention int64, crm designs.CRM) error {
	if h.crms == nil {
		h.crms = map[int64]designs.CRM{}
	}
	var err error
	if old, ok := h.crms[retention]; ok {
		err = old.Close()
	}
	h.crms[retention] = crm
	return err
}

// takeCRM takes the idle receiver handle kept for retention, if there is
// one.
func (h *idleHandles) takeCRM(retention int64) (designs.CRM, bool) {
	crm, ok := h.crms[retention]
	delete(h.crms, retention)
	return crm, ok
}

// close closes every idle handle.
func (h *idleHandles) close() error {
	var err error
	for k, idle := range h.apps {
		err = errors.Join(err, idle.app.Close())
		delete(h.apps, k)
	}
	for k, crm := range h.crms {
		err = errors.Join(err, crm.Close())
		delete(h.crms, k)
	}
	return err
}

// park sets every handle of the Env aside, open and idle: the default
// worker's, the CRM's (its server stopped, if it was carried over HTTP)
// and the named workers', under the model's options, with which they were
// opened.
func (e *Env) park() error {
	var err error
	for name, w := range e.workers {
		err = errors.Join(err, e.idle.keepApp(e.handleKey(name), w.app))
		delete(e.workers, name)
	}
	if e.app != nil {
		err = errors.Join(err, e.idle.keepApp(e.handleKey(model.DefaultWorker), e.app))
		// A receiver carried over HTTP is kept without its server, which
		// stops: resume carries it again.
		crm, cerr := carry(e.crm, InProcess)
		switch h, carried := e.crm.(*httpCRM); {
		case cerr == nil:
			cerr = e.idle.keepCRM(e.model.Retention, crm)
		case carried:
			cerr = errors.Join(cerr, h.CRM.Close()) // its server did not stop cleanly: nothing is kept
		}
		err = errors.Join(err, cerr)
	}
	e.app, e.crm = nil, nil
	return err
}

// resume gives the default worker and the CRM handles for the model's
// options: idle ones where there are, otherwise opened from their files;
// the CRM carried over the Env's transport.
func (e *Env) resume(ctx context.Context) error {
	app, ok, err := e.idle.takeApp(e.handleKey(model.DefaultWorker))
	if err != nil {
		return fmt.Errorf("handoff: closing an idle handle: %w", err)
	}
	if !ok {
		if app, err = e.openApp(ctx); err != nil {
			return err
		}
	}
	crm, ok := e.idle.takeCRM(e.model.Retention)
	if !ok {
		var err error
		if crm, err = e.openCRM(ctx); err != nil {
			app.Close()
			return err
		}
	}
	return e.attach(app, crm)
}

// Renew readies the Env for a new sequence on the same files, so that an
// exploration does not open and close two databases, and their workers',
// for every sequence (that cost more than the sequence's steps): every
// handle that no crash closed stays open, idle (see idleHandles), the
// files are emptied back to what new databases hold, and the model, the
// clock and everything the harness observed start afresh.
func (e *Env) Renew(ctx context.Context) error {
	if e.lane == nil {
		return errors.New("handoff: renewing an Env that NewEnvIn did not make renewable")
	}
	if err := e.park(); err != nil {
		return fmt.Errorf("handoff: renewing: %w", err)
	}
	if err := e.lane.reset(ctx); err != nil {
		return err
	}
	e.begin()
	e.cfg.Transport = InProcess // a sequence's transport step, if any, says otherwise
	return e.resume(ctx)
}

// lane is what a renewable Env holds beside its handles, from its first
// sequence to its last: a connection of its own on each file, which
// empties the file between sequences, and a handle of the design on each,
// which no step uses. Like another process holding the files open, those
// keep two costs out of every restart that the simulation does not test:
// the checks the system makes of a file it does not hold yet (which read
// the file directly), and SQLite's checkpoint when the last connection
// closes. A restart still closes every handle of the Env and opens it
// again from its file. On PostgreSQL the app database's connection is one
// to the server, which empties the Env's schema (see pgSchema.emptier).
type lane struct {
	conns  []*sql.DB
	resets [][]*sql.Stmt // for each of conns, the statements that empty its file
	held   []io.Closer
	// version, for an app database that is not a file in WAL mode, asks
	// its data_version, which SQLite changes whenever another connection
	// commits a change to the file (on PostgreSQL, the end of the
	// write-ahead log); seen is the value last read, known whether it was
	// read since the files were last emptied.
	version *sql.Stmt
	seen    int64
	known   bool
	// appIndex and crmIndex, for a file in WAL mode, tell a commit to it
	// for the cost of a system call (see walIndex).
	appIndex, crmIndex *walIndex
	// onServer says that conns[0] is a connection to PostgreSQL, where
	// emptying frees no pages of a file to give back.
	onServer bool
}

// laneFiles are the files of an Env, the app database first.
var laneFiles = []string{appFile, crmFile}

// openLane opens the lane of e, whose files are new: it notes what they
// hold, to empty them back to it.
func openLane(ctx context.Context, e *Env) (_ *lane, err error) {
	l := &lane{}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	app, err := e.openDesignApp(ctx, e.systemOptions("lane", nil))
	if err != nil {
		return nil, fmt.Errorf("handoff: opening the lane's app database: %w", err)
	}
	l.held = append(l.held, app)
	crm, err := e.cfg.Design.OpenCRM(ctx, filepath.Join(e.cfg.Dir, crmFile), system.CRMOptions{Durability: e.cfg.Durability})
	if err != nil {
		return nil, fmt.Errorf("handoff: opening the lane's receiver database: %w", err)
	}
	l.held = append(l.held, crm)
	for _, name := range laneFiles {
		open := func(ctx context.Context) (*sql.DB, []*sql.Stmt, error) {
			return backend.FileEmptier(ctx, filepath.Join(e.cfg.Dir, name))
		}
		if name == appFile && e.schema != nil {
			open = func(ctx context.Context) (*sql.DB, []*sql.Stmt, error) {
				return e.schema.Emptier(ctx, e.cfg.ConnectWait)
			}
		}
		db, reset, err := open(ctx)
		if err != nil {
			return nil, fmt.Errorf("handoff: noting what %s holds: %w", name, err)
		}
		l.conns = append(l.conns, db)
		l.resets = append(l.resets, reset)
	}
	version := "PRAGMA data_version"
	if e.schema != nil {
		version, l.onServer = backend.SQLWALPosition, true
	} else if l.appIndex, err = laneWALIndex(e.cfg.Dir, appFile); err != nil {
		return nil, err
	}
	if l.appIndex == nil {
		if l.version, err = l.conns[0].PrepareContext(ctx, version); err != nil {
			return nil, fmt.Errorf("handoff: preparing to ask app.db's data version: %w", err)
		}
	}
	// A receiver of the design's own may keep its tasks elsewhere than in
	// the file's commits (in memory, say): it is read after every step.
	if !e.cfg.Design.OwnReceiver {
		if l.crmIndex, err = laneWALIndex(e.cfg.Dir, crmFile); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// laneWALIndex opens the wal-index of the lane's file name in dir, or
// returns nil when the file is not in WAL mode.
func laneWALIndex(dir, name string) (*walIndex, error) {
	w, err := openWALIndex(filepath.Join(dir, name))
	switch {
	case errors.Is(err, errNoWALIndex):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("handoff: opening the wal-index of %s: %w", name, err)
	}
	return w, nil
}

// appChanged reports whether a commit may have changed the app database
// since the last call (and since the files were emptied): the header of
// a SQLite file's wal-index (see walIndex), or in another journal mode
// its data_version, says so exactly; on PostgreSQL, the end of the
// server's write-ahead log (see backend.SQLWALPosition) says when no
// commit did. Without a lane, it may have.
func (l *lane) appChanged(ctx context.Context) (bool, error) {
	if l == nil {
		return true, nil
	}
	if l.appIndex != nil {
		return l.appIndex.changed()
	}
	var v int64
	if err := l.version.QueryRowContext(ctx).Scan(&v); err != nil {
		return false, fmt.Errorf("handoff: reading the data version of app.db: %w", err)
	}
	changed := !l.known || v != l.seen
	l.seen, l.known = v, true
	return changed, nil
}

// walIndexOf is the wal-index of the lane's file name, or nil.
func (l *lane) walIndexOf(name string) *walIndex {
	switch {
	case l == nil:
		return nil
	case name == appFile:
		return l.appIndex
	case name == crmFile:
		return l.crmIndex
	}
	return nil
}

// crmChanged reports whether a commit may have changed the receiver's
// database since the last call (and since the files were emptied), as
// its wal-index's header says; in another journal mode, for a receiver
// of the design's own, or without a lane, it may have.
func (l *lane) crmChanged() (bool, error) {
	if l == nil || l.crmIndex == nil {
		return true, nil
	}
	return l.crmIndex.changed()
}

// reset empties every file back to what it held when the lane opened, one
// transaction each, and gives the pages it frees back (see openLane); on
// PostgreSQL it empties the schema.
func (l *lane) reset(ctx context.Context) error {
	for i, db := range l.conns {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("handoff: emptying %s: %w", laneFiles[i], err)
		}
		for _, st := range l.resets[i] {
			if _, err := tx.StmtContext(ctx, st).ExecContext(ctx); err != nil {
				tx.Rollback()
				return fmt.Errorf("handoff: emptying %s: %w", laneFiles[i], err)
			}
		}
		if file := i > 0 || !l.onServer; file {
			if _, err := tx.ExecContext(ctx, "PRAGMA incremental_vacuum"); err != nil {
				tx.Rollback()
				return fmt.Errorf("handoff: giving the pages of %s back: %w", laneFiles[i], err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("handoff: emptying %s: %w", laneFiles[i], err)
		}
	}
	return l.forget()
}

// forget makes the next appChanged and crmChanged report a change: the
// lane's own commits leave its data_version as it was, an observation
// that failed left the Env without what they said changed, and a step
// that ended in an error left the Env's last observation behind. It
// fails if a file's wal-index is no longer the one the lane reads (see
// walIndex.forget).
func (l *lane) forget() error {
	if l == nil {
		return nil
	}
	l.known = false
	var err error
	for _, w := range []*walIndex{l.appIndex, l.crmIndex} {
		if w != nil {
			err = errors.Join(err, w.forget())
		}
	}
	return err
}

// close closes the lane's connections and handles; a nil lane has none.
func (l *lane) close() error {
	if l == nil {
		return nil
	}
	var err error
	if l.version != nil {
		err = l.version.Close()
	}
	for _, stmts := range l.resets {
		for _, st := range stmts {
			err = errors.Join(err, st.Close())
		}
	}
	for _, db := range l.conns {
		err = errors.Join(err, db.Close())
	}
	for _, h := range l.held {
		err = errors.Join(err, h.Close())
	}
	for _, w := range []*walIndex{l.appIndex, l.crmIndex} {
		if w != nil {
			err = errors.Join(err, w.close()) // after the connections: see walIndex.close
		}
	}
	return err
}
