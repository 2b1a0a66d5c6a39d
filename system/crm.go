package system

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// crmDatabaseID marks a receiver database: "CRM1" in its application_id.
const crmDatabaseID = 0x43524d31

const crmSchema = `
CREATE TABLE IF NOT EXISTS tasks (
	id      INTEGER PRIMARY KEY,
	key     TEXT NOT NULL UNIQUE,
	payload TEXT NOT NULL
) STRICT;
`

// The queries of the receiver.
const (
	sqlFindTask   = `SELECT id, payload FROM tasks WHERE key = ?`
	sqlInsertTask = `INSERT INTO tasks (key, payload) VALUES (?, ?) RETURNING id`
	sqlTasks      = `SELECT id, key, payload FROM tasks ORDER BY id`
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
	db *sql.DB
	q  *statements
}

// OpenCRM opens (creating if needed) the receiver database at path. It
// refuses a file that is another kind of SQLite database with
// ErrWrongDatabase.
func OpenCRM(ctx context.Context, path string, d Durability) (*CRM, error) {
	db, err := openDB(ctx, path, crmDatabaseID, crmSchema, d)
	if err != nil {
		return nil, err
	}
	q, err := prepareAll(ctx, db, sqlFindTask, sqlInsertTask, sqlTasks)
	if err != nil {
		return nil, err
	}
	return &CRM{db: db, q: q}, nil
}

// Close closes the database handle.
func (c *CRM) Close() error { return c.q.close() }

// CreateTask implements Receiver. In one transaction: an unknown key gets a
// new task with the next id; a known key with the same payload returns the
// existing id (a replay); a known key with another payload returns
// ErrKeyConflict and changes nothing.
func (c *CRM) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	if key == "" || payload == "" {
		return 0, invalid("task key and payload must not be empty")
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, driverError("beginning the task", err)
	}
	defer tx.Rollback()
	var id int64
	var held string
	err = c.q.queryRow(ctx, tx, sqlFindTask, []any{key}, &id, &held)
	switch {
	case err == nil && held == payload:
		return id, nil
	case err == nil:
		return 0, fmt.Errorf("%w: task %d already holds other content for %s", ErrKeyConflict, id, key)
	case !errors.Is(err, sql.ErrNoRows):
		return 0, driverError("looking up "+key, err)
	}
	if err := c.q.queryRow(ctx, tx, sqlInsertTask, []any{key, payload}, &id); err != nil {
		return 0, driverError("inserting the task", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, driverError("committing the task", err)
	}
	return id, nil
}

// Tasks reads every task in id order.
func (c *CRM) Tasks(ctx context.Context) ([]Task, error) {
	rows, err := c.q.prepared[sqlTasks].QueryContext(ctx)
	if err != nil {
		return nil, driverError("reading tasks", err)
	}
	defer rows.Close()
	var tasks []Task
	for rows.Next() {
		var t Task
		if err := rows.Scan(&t.ID, &t.Key, &t.Payload); err != nil {
			return nil, driverError("reading tasks", err)
		}
		tasks = append(tasks, t)
	}
	return tasks, driverError("reading tasks", rows.Err())
}
