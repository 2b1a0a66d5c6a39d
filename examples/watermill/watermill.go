// Package watermilloutbox is an outbox on Watermill's SQL Pub/Sub
// (github.com/ThreeDotsLabs/watermill-sql), as a Watermill user deploys
// it, for the handoff's running mode (handoff.VerifyRunning): the app
// publishes a message in the transaction of its approval (a Publisher on
// the *sql.Tx), and Watermill's own Router runs a handler on a
// Subscriber of that topic (its poll loop, the consumer group's offset
// row locked in a transaction for the whole handler, the ack that moves
// the offset in that transaction), behind Watermill's Retry and
// PoisonQueue middleware. The handler sends the message's action key and
// payload to the receiver and records the outcome beside the approval.
// Nothing of Watermill's runtime is copied here.
package watermilloutbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
)

// The deployment's settings.
const (
	// topic is where approvals are published; poisonTopic where the
	// PoisonQueue middleware puts a message whose retries ran out.
	topic, poisonTopic = "followups", "followups_poison"
	// consumerGroup is the subscribers' group: every replica reads the
	// topic as one consumer, in order.
	consumerGroup = "followups"
	// maxRetries is the Retry middleware's: a message is handled at most
	// 1 + maxRetries times before it goes to the poison topic.
	maxRetries = 9
	// sendTimeout bounds one send: a receiver that does not answer costs
	// the handler this long, not its ack deadline.
	sendTimeout = 2 * time.Second
	// ackDeadline bounds one handling of a message, its retries
	// included (the subscriber then stops waiting and delivers it again):
	// ten sends of sendTimeout and the Retry middleware's backoffs (1 s,
	// doubling, at most a minute: about 4 minutes) fit in it.
	ackDeadline = 5 * time.Minute
	// lockTimeout is every session's lock_timeout: a replica whose
	// subscriber finds the consumer group's offset row locked by another
	// replica's (held for that replica's whole handling) gives up the
	// wait at once, backs off and polls again, as it does after any
	// error. In the bubble a wait on the server holds virtual time, so
	// every millisecond of it is a millisecond of real time per poll.
	lockTimeout = "1ms"
	// maxConns is the most connections a boot holds to the server: the
	// subscriber's transaction, the poison topic's publisher, the
	// approvals and the reads.
	maxConns = 4
)

// Design is watermill-sql v4.1.2's Subscriber under Watermill v1.5.0's
// Router, PostgreSQL's default schema and offsets adapters (one consumer
// group, in order), Watermill's defaults (a poll every second, a nacked
// message resent after a second) but an ack deadline of five minutes;
// the Retry middleware with nine retries (1 s, doubling, at most a
// minute apart) inside the PoisonQueue middleware.
var Design = designs.Running{
	Name:    "watermill",
	Summary: "watermill-sql v4.1.2's Subscriber under Watermill's Router, Retry (9 retries) and PoisonQueue, PostgreSQL's default adapters",
	// The Retry middleware retries a failed handling in memory, with its
	// count; after 1 + maxRetries failures PoisonQueue publishes the
	// message to the poison topic and the subscriber acks it. No count is
	// written: H4 bounds the failures the receiver answers.
	Budget: maxRetries + 1,
	Counts: designs.CountsErrors,
	// The subscriber reads the consumer group's offset row FOR UPDATE and
	// keeps that transaction open while the handler runs; the ack moves
	// the offset in it.
	Holds: designs.HeldByLock,
	Lease: ackDeadline,
	// One message at a time, in order: a key whose every send fails
	// holds the others back for ten sends and their backoffs (about four
	// minutes), and an outage of two minutes spends seven of them.
	Settle: 15 * time.Minute,
	Boot: func(ctx context.Context, p designs.Process) (designs.Booted, error) {
		return boot(ctx, p, false)
	},
}

// Uncounted is Design declaring no count (designs.CountsNothing): the
// same Watermill runtime, judged on every check but H4. A handling that
// ends before its ack resets Retry's count (TestRetriesResetBreakTheBudget),
// so the search runs this declaration to judge the rest.
var Uncounted = func() designs.Running {
	d := Design
	d.Name = "watermill-uncounted"
	d.Counts = designs.CountsNothing
	return d
}()

// InSubscriberTx is Design with the handler writing its outcome in the
// subscriber's transaction (TxFromContext), the one that acks the
// message, as watermill-sql offers for a handler's writes, and sending
// without first reading whether the key was handled: a connection reset
// during a handling leaves that transaction dead while the handling goes
// on (TestResetThenRefusalSentAgain). It declares no count, as
// Uncounted.
var InSubscriberTx = func() designs.Running {
	d := Uncounted
	d.Name = "watermill-subscriber-tx"
	d.Boot = func(ctx context.Context, p designs.Process) (designs.Booted, error) {
		return boot(ctx, p, true)
	}
	return d
}()

// envelope is a message's payload: the stable action key and the
// canonical payload that every send carries.
type envelope struct {
	Key     string `json:"key"`
	Payload string `json:"payload"`
}

// The app's table beside Watermill's: the approval, and the task id its
// message's handler recorded, or why it was refused.
const (
	approvalsTable = `CREATE TABLE IF NOT EXISTS followup_approvals (
	key TEXT PRIMARY KEY, payload TEXT NOT NULL, task_id BIGINT, refused TEXT)`
	sqlHeld     = `SELECT payload FROM followup_approvals WHERE key = $1`
	sqlApprove  = `INSERT INTO followup_approvals (key, payload) VALUES ($1, $2)`
	sqlTaskOf   = `UPDATE followup_approvals SET task_id = $1 WHERE key = $2`
	sqlRefused  = `UPDATE followup_approvals SET refused = $1 WHERE key = $2`
	sqlOutcome  = `SELECT coalesce(task_id, 0), coalesce(refused, '') FROM followup_approvals WHERE key = $1`
	sqlRead     = `SELECT key, coalesce(task_id, 0), coalesce(refused, '') FROM followup_approvals`
	sqlPoisoned = `SELECT payload, metadata->>'` + middleware.ReasonForPoisonedKey + `' FROM "watermill_` + poisonTopic + `"`
)

// booted is one boot of the app: its database, Watermill's router and
// the publisher's settings.
type booted struct {
	db     *sql.DB
	router *message.Router
	cancel context.CancelFunc
	done   chan error
}

// schema is the PostgreSQL schema adapter every publisher and the
// subscriber use: Watermill's default.
var schema = wsql.DefaultPostgreSQLSchema{}

// boot opens the app database through p's connections (p.Dial, which a
// crash cuts), makes Watermill's tables and the app's, and starts the
// router, its handler writing in the subscriber's transaction when
// inSubscriberTx says so.
func boot(ctx context.Context, p designs.Process, inSubscriberTx bool) (designs.Booted, error) {
	if p.Backend() != "postgres" {
		return nil, errors.New("watermilloutbox: the outbox runs on PostgreSQL")
	}
	connect, _, err := system.SplitPostgres(p.Database())
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(connect)
	if err != nil {
		return nil, err
	}
	cfg.DialFunc = p.Dial
	cfg.RuntimeParams["lock_timeout"] = lockTimeout
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(maxConns)
	b := &booted{db: db, done: make(chan error, 1)}
	logger := watermill.NopLogger{}
	beginner := wsql.BeginnerFromStdSQL(db)
	subscriber, err := wsql.NewSubscriber(beginner, wsql.SubscriberConfig{
		ConsumerGroup:  consumerGroup,
		AckDeadline:    new(ackDeadline),
		SchemaAdapter:  schema,
		OffsetsAdapter: wsql.DefaultPostgreSQLOffsetsAdapter{},
	}, logger)
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := b.migrate(ctx, subscriber); err != nil {
		db.Close()
		return nil, err
	}
	poisoned, err := wsql.NewPublisher(beginner, wsql.PublisherConfig{SchemaAdapter: schema}, logger)
	if err != nil {
		db.Close()
		return nil, err
	}
	poison, err := middleware.PoisonQueue(poisoned, poisonTopic)
	if err != nil {
		db.Close()
		return nil, err
	}
	b.router, err = message.NewRouter(message.RouterConfig{}, logger)
	if err != nil {
		db.Close()
		return nil, err
	}
	b.router.AddMiddleware(poison, middleware.Retry{
		MaxRetries:      maxRetries,
		InitialInterval: time.Second,
		Multiplier:      2,
		MaxInterval:     time.Minute,
	}.Middleware)
	h := handler{db: db, r: p.ReceiverFor(fmt.Sprintf("watermill:%d", p.Replica())), inSubscriberTx: inSubscriberTx}
	b.router.AddNoPublisherHandler("send", topic, resubscribing{subscriber}, h.handle)
	run, cancel := context.WithCancel(ctx)
	b.cancel = cancel
	go func() { b.done <- b.router.Run(run) }()
	return b, nil
}

// resubscribing is the subscriber as the router sees it: a Subscribe that
// fails (its first transaction, which registers the consumer group, lost
// with its connection) is tried again every resubscribeAfter until the
// router stops, when it hands the router a closed channel. Watermill's
// Router.Run returns a Subscribe's error at once and leaves two of its
// goroutines waiting for good (on a handler that never started), and its
// Close then times out: a deployment exits there and is restarted, which
// a process of the running mode cannot do, so the adapter keeps trying.
type resubscribing struct{ *wsql.Subscriber }

// resubscribeAfter is how long resubscribing waits between tries.
const resubscribeAfter = time.Second

// Subscribe subscribes to topic, trying again until it succeeds or ctx
// ends.
func (s resubscribing) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	for {
		msgs, err := s.Subscriber.Subscribe(ctx, topic)
		if err == nil {
			return msgs, nil
		}
		select {
		case <-ctx.Done():
			closed := make(chan *message.Message)
			close(closed)
			return closed, nil
		case <-time.After(resubscribeAfter):
		}
	}
}

// handler is the router's handler of the topic: it sends through r and
// writes the outcome on the pool db, or in the subscriber's transaction.
type handler struct {
	db             *sql.DB
	r              system.Receiver
	inSubscriberTx bool
}

// handle sends the message's key and payload through r, unless the key's
// outcome is recorded already (a message handled before, whose ack was
// lost). On a task id it records the id beside the approval; on a
// refusal for good it records the refusal; either way the message is
// acked. A transient failure is returned: the Retry middleware handles
// the message again after its backoff, and once its retries ran out
// PoisonQueue moves the message to the poison topic. InSubscriberTx's
// handler writes in the subscriber's transaction instead, and does not
// read first.
func (h handler) handle(msg *message.Message) error {
	var e envelope
	if err := json.Unmarshal(msg.Payload, &e); err != nil {
		return fmt.Errorf("malformed message %s: %w", msg.UUID, err)
	}
	ctx := msg.Context()
	exec := func(query string, args ...any) error {
		_, err := h.db.ExecContext(ctx, query, args...)
		return err
	}
	if h.inSubscriberTx {
		tx, ok := wsql.TxFromContext(ctx)
		if !ok {
			return errors.New("watermilloutbox: no subscriber's transaction in the message's context")
		}
		exec = func(query string, args ...any) error {
			_, err := tx.ExecContext(ctx, query, args...)
			return err
		}
	} else {
		var task int64
		var refused string
		if err := h.db.QueryRowContext(ctx, sqlOutcome, e.Key).Scan(&task, &refused); err != nil || task != 0 || refused != "" {
			return err
		}
	}
	send, cancel := context.WithTimeout(ctx, sendTimeout)
	id, err := h.r.CreateTask(send, e.Key, e.Payload)
	cancel()
	switch {
	case err == nil:
		return exec(sqlTaskOf, id, e.Key)
	case errors.Is(err, system.ErrKeyConflict) || errors.Is(err, system.ErrRejected):
		return exec(sqlRefused, "refused: "+err.Error(), e.Key)
	}
	return err
}

// migrate makes Watermill's tables (the topic's, its offsets, the poison
// topic's) and the app's, once: concurrent boots of the replicas wait
// for each other on an advisory lock, longer than lockTimeout.
func (b *booted) migrate(ctx context.Context, s *wsql.Subscriber) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '1min'`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema()))`); err != nil {
		return err
	}
	for _, t := range []string{topic, poisonTopic} {
		if err := s.SubscribeInitialize(t); err != nil {
			return fmt.Errorf("watermilloutbox: Watermill's tables for %s: %w", t, err)
		}
	}
	if _, err := tx.ExecContext(ctx, approvalsTable); err != nil {
		return err
	}
	return tx.Commit()
}

// Approve records the approval and publishes its message in one
// transaction. A repeated approval changes nothing; another payload for
// the key is system.ErrKeyConflict.
func (b *booted) Approve(ctx context.Context, caseID, title string) (string, string, error) {
	a, err := system.NewApproval(caseID, title)
	if err != nil {
		return "", "", err
	}
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return a.Key, a.Payload, err
	}
	defer tx.Rollback()
	var held string
	switch err := tx.QueryRowContext(ctx, sqlHeld, a.Key).Scan(&held); {
	case err == nil && held == a.Payload:
		return a.Key, a.Payload, nil
	case err == nil:
		return a.Key, a.Payload, fmt.Errorf("%w: %s holds another payload", system.ErrKeyConflict, a.Key)
	case !errors.Is(err, sql.ErrNoRows):
		return a.Key, a.Payload, err
	}
	if _, err := tx.ExecContext(ctx, sqlApprove, a.Key, a.Payload); err != nil {
		return a.Key, a.Payload, err
	}
	body, err := json.Marshal(envelope{Key: a.Key, Payload: a.Payload})
	if err != nil {
		return a.Key, a.Payload, err
	}
	publisher, err := wsql.NewPublisher(wsql.TxFromStdSQL(tx), wsql.PublisherConfig{SchemaAdapter: schema}, watermill.NopLogger{})
	if err != nil {
		return a.Key, a.Payload, err
	}
	msg := message.NewMessage(watermill.NewUUID(), body)
	msg.SetContext(ctx)
	if err := publisher.Publish(topic, msg); err != nil {
		return a.Key, a.Payload, err
	}
	return a.Key, a.Payload, tx.Commit()
}

// Read shows each approval: sent once its handler recorded a task id,
// blocked with the refusal it recorded, discarded once its message is on
// the poison topic (with the reason PoisonQueue gave), and pending
// otherwise. Watermill keeps no count of a message's failures where the
// app can read it.
func (b *booted) Read(ctx context.Context) (map[string]designs.RunningRow, error) {
	shown := map[string]designs.RunningRow{}
	rs, err := b.db.QueryContext(ctx, sqlRead)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	for rs.Next() {
		var key, refused string
		var task int64
		if err := rs.Scan(&key, &task, &refused); err != nil {
			return nil, err
		}
		switch {
		case task != 0:
			shown[key] = designs.RunningRow{State: designs.RowSent, TaskID: task, Attempts: -1}
		case strings.HasPrefix(refused, "refused: "):
			shown[key] = designs.RunningRow{State: designs.RowBlocked, Attempts: -1, Reason: refused}
		default:
			shown[key] = designs.RunningRow{State: designs.RowPending, Attempts: -1}
		}
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	poisoned, err := b.db.QueryContext(ctx, sqlPoisoned)
	if err != nil {
		return nil, err
	}
	defer poisoned.Close()
	for poisoned.Next() {
		var body []byte
		var reason sql.NullString
		if err := poisoned.Scan(&body, &reason); err != nil {
			return nil, err
		}
		var e envelope
		if err := json.Unmarshal(body, &e); err != nil {
			return nil, fmt.Errorf("watermilloutbox: a poisoned message's payload: %w", err)
		}
		if row := shown[e.Key]; row.State == designs.RowPending {
			shown[e.Key] = designs.RunningRow{State: designs.RowDiscarded, Attempts: -1, Reason: "poisoned: " + reason.String}
		}
	}
	return shown, poisoned.Err()
}

// Stop cancels the router's context and waits for Router.Run to return:
// the subscriber stops, its handler ends, and the router closes itself.
// It does not call Router.Close, which holds the router's lock while it
// waits for the handlers: a Run still starting waits for that lock, and
// inside the bubble, where a wait on a mutex stops virtual time, the
// wait for the handlers never times out.
func (b *booted) Stop() error {
	b.cancel()
	err := <-b.done
	return errors.Join(err, b.db.Close())
}
