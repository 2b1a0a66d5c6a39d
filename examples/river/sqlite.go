package riveroutbox

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"modernc.org/sqlite"
)

// sqliteApp is the app on SQLite: River's SQLite driver on a database/sql
// handle whose connections the harness can cut.
type sqliteApp struct {
	db     *sql.DB
	client *river.Client[*sql.Tx]
}

func openSQLite(ctx context.Context, p designs.Process, maxAttempts int) (*sqliteApp, error) {
	db := sql.OpenDB(p.WrapSQLite(sqliteConnector{"file:" + p.Database() +
		"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)"}))
	db.SetMaxOpenConns(1) // SQLite writes one at a time; River's driver asks for one connection
	drv := riversqlite.New(db)
	a := &sqliteApp{db: db}
	err := migrate(ctx, drv, func(q string) error { return a.exec(ctx, q) })
	if err == nil {
		workers := river.NewWorkers()
		river.AddWorker(workers, &sender{r: p.Receiver(), app: a})
		a.client, err = river.NewClient(drv, config(workers, "", maxAttempts))
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return a, nil
}

// sqliteConnector connects to the SQLite file dsn names.
type sqliteConnector struct{ dsn string }

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) { return c.Driver().Open(c.dsn) }
func (c sqliteConnector) Driver() driver.Driver                        { return &sqlite.Driver{} }

func (a *sqliteApp) approve(ctx context.Context, ap system.Approval) error {
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	err = approve(ap,
		func(key string, held *string) error { return tx.QueryRowContext(ctx, sqlHeld, key).Scan(held) },
		func(q string, args ...any) error { _, err := tx.ExecContext(ctx, q, args...); return err },
		func() (int64, error) {
			res, err := a.client.InsertTx(ctx, tx, FollowupArgs{Key: ap.Key, Payload: ap.Payload}, nil)
			if err != nil {
				return 0, err
			}
			return res.Job.ID, nil
		})
	if err != nil {
		return err
	}
	return tx.Commit()
}

func (a *sqliteApp) query(ctx context.Context) (rows, error) {
	rs, err := a.db.QueryContext(ctx, sqlRead)
	if err != nil {
		return nil, err
	}
	return sqlRows{rs}, nil
}

// sqlRows is database/sql's rows as a read scans them.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

func (a *sqliteApp) exec(ctx context.Context, q string, args ...any) error {
	_, err := a.db.ExecContext(ctx, q, args...)
	return err
}

func (a *sqliteApp) start(ctx context.Context) error { return a.client.Start(ctx) }
func (a *sqliteApp) stop(ctx context.Context) error  { return a.client.StopAndCancel(ctx) }
func (a *sqliteApp) close()                          { a.db.Close() }
