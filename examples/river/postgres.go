package riveroutbox

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// maxConns is the most connections a boot holds to the server.
const maxConns = 4

// pgApp is the app on PostgreSQL: River's pgx driver on a pool whose
// connections the harness dials, and can cut.
type pgApp struct {
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
}

func openPostgres(ctx context.Context, p designs.Process, maxAttempts int) (*pgApp, error) {
	connect, schema, err := system.SplitPostgres(p.Database())
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(connect)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.DialFunc = p.Dial
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	drv := riverpgxv5.New(pool)
	a := &pgApp{pool: pool}
	err = migrate(ctx, drv, func(q string) error { return a.exec(ctx, q) })
	if err == nil {
		workers := river.NewWorkers()
		river.AddWorker(workers, &sender{r: p.Receiver(), app: a})
		a.client, err = river.NewClient(drv, config(workers, schema, maxAttempts))
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	return a, nil
}

func (a *pgApp) approve(ctx context.Context, ap system.Approval) error {
	tx, err := a.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	err = approve(ap,
		func(key string, held *string) error { return tx.QueryRow(ctx, sqlHeld, key).Scan(held) },
		func(q string, args ...any) error { _, err := tx.Exec(ctx, q, args...); return err },
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
	return tx.Commit(ctx)
}

func (a *pgApp) query(ctx context.Context) (rows, error) {
	rs, err := a.pool.Query(ctx, sqlReadText)
	if err != nil {
		return nil, err
	}
	return pgRows{rs}, nil
}

// pgRows is pgx's rows as a read scans them.
type pgRows struct{ pgx.Rows }

func (a *pgApp) exec(ctx context.Context, q string, args ...any) error {
	_, err := a.pool.Exec(ctx, q, args...)
	return err
}

func (a *pgApp) start(ctx context.Context) error { return a.client.Start(ctx) }
func (a *pgApp) stop(ctx context.Context) error  { return a.client.StopAndCancel(ctx) }
func (a *pgApp) close()                          { a.pool.Close() }
