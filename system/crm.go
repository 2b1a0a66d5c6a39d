package system

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
)

// The queries of the receiver.
const (
	sqlFindTask   = `SELECT t.id, t.payload, k.stored_at FROM keys k JOIN tasks t ON t.id = k.task_id WHERE k.key = ?`
	sqlInsertTask = `INSERT INTO tasks (key, payload) VALUES (?, ?) RETURNING id`
	sqlRemember   = `INSERT OR REPLACE INTO keys (key, task_id, stored_at) VALUES (?, ?, ?)`
	sqlTasks      = `SELECT id, key, payload FROM tasks ORDER BY id`
	sqlTask       = `SELECT id, key, payload FROM tasks WHERE id = ?`
	sqlTasksOfKey = `SELECT id, key, payload FROM tasks WHERE key = ? ORDER BY id`
	sqlIdentity   = `SELECT value FROM meta WHERE name = 'identity'`
)

// Task is one task at the receiver.
type Task struct {
	ID      int64
	Key     string
	Payload string
}

// CRM is the durable receiver: a CRM simulation in its own SQLite file that
// stores each action key with its task in one transaction, so that a
// replayed request finds the task its first copy created.
type CRM struct {
	db   *sql.DB
	q    *statements
	path string
	opts CRMOptions
}

// CRMOptions configure a CRM. The zero value is durable, remembers keys
// forever and reads the wall clock.
type CRMOptions struct {
	Durability Durability
	// Retention is how long the CRM remembers a key after it first stored
	// it; 0 means forever. The task stays; a create for a forgotten key
	// makes a new task.
	Retention time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// BusyTimeout is how long a create waits for another connection's
	// write lock before it fails; 0 means DefaultBusyTimeout. It counts
	// whole milliseconds: under one, a create that finds the lock taken
	// fails at once.
	BusyTimeout time.Duration
	// WrapSQLite, unless nil, wraps the connector of the handle's
	// connections to the file, as Options.Harness.WrapSQLite does an Outbox's.
	WrapSQLite func(driver.Connector) driver.Connector
}

// OpenCRM opens (creating if needed) the receiver database at path,
// upgrading a file an older handoff wrote. It refuses, changing nothing, a
// path that is not a plain file, a file that is not a handoff CRM database
// (ErrWrongDatabase) and a read-only one (ErrReadOnly).
func OpenCRM(ctx context.Context, path string, d Durability) (*CRM, error) {
	return OpenCRMWith(ctx, path, CRMOptions{Durability: d})
}

// OpenCRMWith is OpenCRM with options: a retention window and a clock.
func OpenCRMWith(ctx context.Context, path string, opts CRMOptions) (*CRM, error) {
	if opts.Retention < 0 {
		return nil, invalid("retention is %v, want 0 (forever) or more", opts.Retention)
	}
	if opts.BusyTimeout < 0 {
		return nil, invalid("busy timeout is %v, want 0 (the default) or more", opts.BusyTimeout)
	}
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	q, err := openDB(ctx, path, crmDatabase, opts.Durability, opts.BusyTimeout, opts.Now, opts.WrapSQLite)
	if err != nil {
		return nil, err
	}
	c := newCRM(q, path)
	c.opts = opts
	return c, nil
}

// DB is the receiver's database handle, for a caller that must set a
// pragma of the connection its creates write through (the simulation
// pins the file at its size to make it full). Its transactions are
// BEGIN IMMEDIATE.
func (c *CRM) DB() *sql.DB { return c.db }

// Retention implements Retainer: how long the CRM remembers a key.
func (c *CRM) Retention() time.Duration { return c.opts.Retention }

// OpenCRMReadOnly opens the existing receiver database at path for
// reading: it writes nothing, creates no file and leaves none behind.
// Only Tasks, Identity and Check work on it.
func OpenCRMReadOnly(ctx context.Context, path string) (*CRM, error) {
	q, err := openReadOnly(ctx, path, crmDatabase)
	if err != nil {
		return nil, err
	}
	return newCRM(q, path), nil
}

func newCRM(q *statements, path string) *CRM {
	return &CRM{db: q.db, q: q, path: path, opts: CRMOptions{Now: time.Now}}
}

// Identity is the CRM's identity, made when its file was created: an app
// database remembers it (Outbox.BindReceiver) to refuse another CRM file.
func (c *CRM) Identity(ctx context.Context) (string, error) {
	var id string
	err := c.q.row(ctx, nil, sqlIdentity).Scan(&id)
	return id, driverError("reading the identity of "+c.path, err)
}

// Check runs SQLite's integrity check on the receiver database and
// returns what it reports wrong; nothing when the file is sound.
func (c *CRM) Check(ctx context.Context) ([]string, error) {
	return integrityCheck(ctx, c.db, c.path)
}

// UpgradedFrom is the schema version the receiver database had when
// OpenCRM upgraded it in place to this handoff's, 0 when it made the file
// new or found it up to date (or another open in this process had
// upgraded it).
func (c *CRM) UpgradedFrom() int { return c.q.upgradedFrom }

// Close closes the database handle.
func (c *CRM) Close() error { return c.q.close() }

// CreateTask implements Receiver: it is Create, saying a replay through
// NoteReplay.
func (c *CRM) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	id, replayed, err := c.Create(ctx, key, payload)
	if err == nil && replayed {
		NoteReplay(ctx)
	}
	return id, err
}

// Create creates the task of key, in one transaction: an unknown key, or
// one the CRM has forgotten (stored longer than its retention ago), gets a
// new task with the next id; a known key with the same payload returns the
// existing id, replayed; a known key with another payload returns
// ErrKeyConflict and changes nothing. Concurrent creates commit together,
// each seeing the ones before it: a key created twice in one commit is a
// replay the second time. A receiver in front of the CRM (crm.Server)
// learns from replayed whether to answer as a replay.
func (c *CRM) Create(ctx context.Context, key, payload string) (id int64, replayed bool, err error) {
	if key == "" || payload == "" {
		return 0, false, invalid("task key and payload must not be empty")
	}
	err = c.q.write(ctx, "creating the task", []string{sqlFindTask, sqlInsertTask, sqlRemember}, func(ctx context.Context, tx *sql.Tx, q *statements) error {
		now := millis(c.opts.Now())
		var storedAt int64
		var held string
		err := q.queryRow(ctx, tx, sqlFindTask, []any{key}, &id, &held, &storedAt)
		remembered := err == nil && (c.opts.Retention == 0 || now < storedAt+c.opts.Retention.Milliseconds())
		switch {
		case remembered && held == payload:
			replayed = true
			return nil
		case remembered:
			return fmt.Errorf("%w: task %d already holds other content for %s", ErrKeyConflict, id, key)
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return driverError("looking up "+key, err)
		}
		if err := q.queryRow(ctx, tx, sqlInsertTask, []any{key, payload}, &id); err != nil {
			return driverError("inserting the task", err)
		}
		return driverError("remembering the key", q.exec(ctx, tx, sqlRemember, key, id, now))
	})
	if err != nil {
		return 0, false, err
	}
	return id, replayed, nil
}

// CommitStats counts the commits of this process's durable (or
// process-safe) handles on the CRM's file, and the creates they carried.
func (c *CRM) CommitStats() CommitStats { return c.q.group.stats() }

// Tasks reads every task in id order.
func (c *CRM) Tasks(ctx context.Context) ([]Task, error) {
	return c.tasks(ctx, "reading tasks", sqlTasks)
}

// TasksOfKey reads the tasks made for key, in id order: more than one
// once the CRM forgot the key and a create made it again.
func (c *CRM) TasksOfKey(ctx context.Context, key string) ([]Task, error) {
	return c.tasks(ctx, "reading the tasks of "+key, sqlTasksOfKey, key)
}

// Task reads the task with id; ErrNotFound when there is none.
func (c *CRM) Task(ctx context.Context, id int64) (Task, error) {
	tasks, err := c.tasks(ctx, fmt.Sprint("reading task ", id), sqlTask, id)
	if err != nil {
		return Task{}, err
	}
	if len(tasks) == 0 {
		return Task{}, fmt.Errorf("%w: no task %d", ErrNotFound, id)
	}
	return tasks[0], nil
}

// tasks reads the tasks query selects.
func (c *CRM) tasks(ctx context.Context, doing, query string, args ...any) ([]Task, error) {
	rows, err := c.q.query(ctx, nil, query, args...)
	if err != nil {
		return nil, driverError(doing, err)
	}
	defer rows.Close()
	var tasks []Task
	for rows.Next() {
		var t Task
		if err := rows.Scan(&t.ID, &t.Key, &t.Payload); err != nil {
			return nil, driverError(doing, err)
		}
		tasks = append(tasks, t)
	}
	return tasks, driverError(doing, rows.Err())
}
