package designs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/outboxlab/handoff/system"
)

// plainCRM is a receiver table without a unique key, as a receiver written
// without idempotency in mind has it.
type plainCRM struct {
	db *sql.DB
}

func openPlainCRM(ctx context.Context, path string, d system.Durability) (*plainCRM, error) {
	sync, err := d.Synchronous()
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", path+"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=synchronous("+sync+")")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	// WAL mode is set on the connection, not in the name: the driver runs
	// a name's pragmas in the order of their names, and a new file's switch
	// to WAL, a commit, would run before synchronous took effect, syncing
	// the file three times and its folder once.
	if _, err := db.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		db.Close()
		return nil, err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS tasks (
		id INTEGER PRIMARY KEY, key TEXT NOT NULL, payload TEXT NOT NULL) STRICT`); err != nil {
		db.Close()
		return nil, err
	}
	return &plainCRM{db: db}, nil
}

func (c *plainCRM) Close() error { return c.db.Close() }

func (c *plainCRM) Tasks(ctx context.Context) ([]system.Task, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT id, key, payload FROM tasks ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var tasks []system.Task
	for rows.Next() {
		var t system.Task
		if err := rows.Scan(&t.ID, &t.Key, &t.Payload); err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return tasks, rows.Err()
}

func (c *plainCRM) insert(ctx context.Context, key, payload string) (int64, error) {
	var id int64
	err := c.db.QueryRowContext(ctx, `INSERT INTO tasks (key, payload) VALUES (?, ?) RETURNING id`, key, payload).Scan(&id)
	return id, err
}

// nonIdempotent creates a task for every request, whatever its key.
type nonIdempotent struct{ *plainCRM }

func (c nonIdempotent) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	return c.insert(ctx, key, payload)
}

// checkThenCreate looks the key up in one transaction and inserts in
// another. It implements faults.Window: a duplicate request can arrive
// between the two.
type checkThenCreate struct{ *plainCRM }

func (c checkThenCreate) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	return c.CreateTaskWindow(ctx, key, payload, func() {})
}

func (c checkThenCreate) CreateTaskWindow(ctx context.Context, key, payload string, between func()) (int64, error) {
	var id int64
	var held string
	err := c.db.QueryRowContext(ctx, `SELECT id, payload FROM tasks WHERE key = ? ORDER BY id LIMIT 1`, key).Scan(&id, &held)
	switch {
	case err == nil && held == payload:
		return id, nil
	case err == nil:
		return 0, fmt.Errorf("%w: %s", system.ErrKeyConflict, key)
	case !errors.Is(err, sql.ErrNoRows):
		return 0, err
	}
	between()
	return c.insert(ctx, key, payload)
}

// ignoresPayload is the real receiver answering every known key with its
// task, whatever the payload.
type ignoresPayload struct{ *system.CRM }

func (c ignoresPayload) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	id, err := c.CRM.CreateTask(ctx, key, payload)
	if !errors.Is(err, system.ErrKeyConflict) {
		return id, err
	}
	tasks, err := c.Tasks(ctx)
	if err != nil {
		return 0, err
	}
	for _, t := range tasks {
		if t.Key == key {
			return t.ID, nil // the shortcut: a known key is a replay
		}
	}
	return 0, fmt.Errorf("designs: no task holds %s", key)
}
