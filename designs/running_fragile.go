package designs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// The fragile running designs: a plain polling worker, written as teams
// write one, on the handoff's own tables, each with one mistake that a
// worker running on its own makes. The harness must catch every one as
// it runs; Doc says how, and CaughtBy which history check does.
var RunningFragile = []Running{
	{
		Name:        "running-new-key",
		Summary:     "a polling worker that sends every attempt with a key of its own",
		Doc:         "The worker makes the request's idempotency key from the job and its attempt (\"so that the receiver can tell retries apart\"). A retry after a lost reply is then a new request to the receiver, which creates a second task: one follow-up, two employees. Caught by H2: the receiver holds a task whose key no approval holds.",
		Failure:     DuplicateTask,
		CaughtBy:    "H2",
		MinimalSize: 1,
		Budget:      plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeNewKey),
	},
	{
		Name:         "running-discard",
		Summary:      "a polling worker that deletes a job it gives up on",
		Doc:          "The worker deletes a job once the receiver refuses it or its retries are spent, as a queue drops a dead job to keep its table small. Nobody is told: the approved follow-up is gone, with no task and nothing for a person to look at. Caught by H6: a key the outbox no longer shows has no task; or by H3 when the case is approved again after its job was deleted: the approval is a repeat, and no job comes back.",
		Failure:      LostWork,
		CaughtBy:     "H6",
		MinimalSize:  2,
		MostSize:     5,
		AlsoCaughtBy: []string{"H3"},
		Budget:       plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeDiscard),
	},
	{
		Name:        "running-count-after",
		Summary:     "a polling worker that counts an attempt only when the send fails",
		Doc:         "The worker adds one to a job's attempts when the handler returns an error, as most job runners count failures, not tries. A worker that dies during the send counts nothing, so the retry after the crash is free: a crash loop sends without end, past any budget. Caught by H4: the receiver saw more requests for a key than the outbox counts attempts.",
		Failure:     DuplicateTask,
		CaughtBy:    "H4",
		MinimalSize: 1,
		Budget:      plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeCountAfter),
	},
	{
		Name:        "running-ack-first",
		Summary:     "a polling worker that marks a job sent before it sends it",
		Doc:         "The worker marks the job sent, then sends (\"at most once: never a duplicate\"). A worker that dies between the two, or a send that fails, leaves a job shown sent that the receiver never got. Caught by H5: a row shown sent names no task of the receiver.",
		Failure:     LostWork,
		CaughtBy:    "H5",
		MinimalSize: 2,
		MostSize:    3,
		Budget:      plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeAckFirst),
	},
	{
		Name:        "running-enqueue-later",
		Summary:     "an app that records the approval, then enqueues its job a second later",
		Doc:         "The app answers the approval at once and hands it to a background goroutine that writes the approval and its job a second later (\"publish after commit\", to keep the request fast). The approval is reported committed while no job exists; a crash within that second loses it for good. Caught by H3: an approval reported committed is not in the outbox at once.",
		Failure:     LostWork,
		CaughtBy:    "H3",
		MinimalSize: 1,
		Budget:      plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeEnqueueLater),
	},
	{
		Name:        "running-content-key",
		Summary:     "an app that makes the action's identity from what it says, not from the case",
		Doc:         "The app names an approved action by a digest of its title, so that the same follow-up approved twice (a double click, two tabs) is one job (\"deduplicate by content\"). Two cases that ask for the same follow-up share a key: the second approval is taken for a repeat of the first, and its work is never done, with nothing failed or shown to a person. Caught by H3: an approval reported committed is in the outbox under a key another case's approval holds.",
		Failure:     LostWork,
		CaughtBy:    "H3",
		MinimalSize: 2,
		Budget:      plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeContentKey),
	},
	{
		Name:        "running-lease-forever",
		Summary:     "a polling worker whose lease never runs out",
		Doc:         "The worker takes a row only when no worker holds it, and never looks at when the lease runs out (\"a worker always finishes what it took\"). A worker that crashes during a send holds its row for good: the row stays pending, and nothing retries it or shows it to a person. Caught by H7: a key still pending after every fault healed and the horizon passed.",
		Failure:     LostWork,
		CaughtBy:    "H7",
		MinimalSize: 5,
		MostSize:    6,
		Budget:      plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeLeaseForever),
	},
	{
		Name:         "running-no-lock",
		Summary:      "one polling worker per process that reads a job, then counts it, with no lease",
		Doc:          "Each process runs one worker (\"one worker cannot race itself\"), which reads the oldest pending row, writes its attempts as the count it read plus one, and sends, holding no lease and no lock. Two replicas on the one database read the same row at once, both write the same count, and both send: the receiver sees two requests where the outbox counts one, and a budget is spent twice as fast as it says. Caught by H4, with two replicas; or by H8 when the receiver refuses the key for good: a replica that read the row before the refusal was recorded sends it again after.",
		Failure:      DuplicateTask,
		CaughtBy:     "H4",
		AlsoCaughtBy: []string{"H8"},
		MinimalSize:  2,
		MostSize:     4,
		Budget:       plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeNoLock),
	},
	{
		Name:         "running-ordered-forwarder",
		Summary:      "a forwarder that sends in order and retries every failure, a refusal too",
		Doc:          "A message forwarder keeps the order of the outbox: one worker takes the oldest pending row, sends it, and on any error waits a second and sends the same row again, with no budget (\"the receiver will take it eventually\"). A receiver that refuses a key for good gets it for ever, and every key behind it waits. Caught by H8: a request for a key after the receiver refused it for good, or a key held behind one that is stuck; or by H7 when the stuck key is the only one: it is never given up.",
		Failure:      LostWork,
		CaughtBy:     "H8",
		MinimalSize:  3,
		MostSize:     4,
		AlsoCaughtBy: []string{"H7"},
		Settle:       plainSettle,
		Boot:         bootPlain(mistakeRetryRefused),
	},
	{
		Name:        "running-http-drop-key",
		Summary:     "a worker over HTTP whose retries carry no Idempotency-Key",
		Doc:         "The worker sends over HTTP through its own client. The first attempt sets Idempotency-Key; the retry path builds its request anew and forgets the header. After a lost reply the retry is a new create to the receiver, which makes a second task. Caught by H1: the receiver holds two tasks for one key.",
		Failure:     DuplicateTask,
		CaughtBy:    "H1",
		MinimalSize: 2,
		MostSize:    4,
		Budget:      plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeDropKey),
	},
	{
		Name:        "running-http-retry-4xx",
		Summary:     "a worker over HTTP that retries every answer that is not 2xx",
		Doc:         "The worker maps the receiver's answers itself: 2xx is a task, anything else an error to retry (\"the CRM has bad days\"). A 400 or 422, a refusal for good, is sent again until the budget runs out, and the key is given up as if the receiver were down, though it said why. Caught by H8: a request for a key after the receiver refused it for good.",
		Failure:     LostWork,
		CaughtBy:    "H8",
		MinimalSize: 2,
		MostSize:    3,
		Budget:      plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeRetry4xx),
	},
	{
		Name:        "running-watermark",
		Summary:     "polling workers that mark sent, with each task, every older job still in flight",
		Doc:         "The process's workers settle as a stream consumer commits its offset: an answer that brought a task marks its job sent and, in the same write, every older job another worker of the process still has in flight (\"their answers are surely in by now; one commit for all\"). A job is then shown sent while its send is still under way: when that send fails, or its worker dies, the receiver never gets it, and nothing sends it again. Caught by H5: a row shown sent names no task of the receiver.",
		Failure:     LostWork,
		CaughtBy:    "H5",
		MinimalSize: 3,
		MostSize:    5,
		Budget:      plainBudget, Lease: plainLease, Settle: plainSettle,
		Boot: bootPlain(mistakeWatermark),
	},
}

// Plain is the plain polling worker without a mistake: the fragile
// running designs' baseline, which every check passes.
var Plain = Running{
	Name:    "plain",
	Summary: "a plain polling worker on the handoff's tables: count, lease, send, settle fenced",
	Budget:  plainBudget, Lease: plainLease, Settle: plainSettle,
	Boot: bootPlain(""),
}

// mistake is what a fragile plain worker gets wrong; "" is none.
type mistake string

const (
	mistakeNewKey       mistake = "new key per attempt"
	mistakeDiscard      mistake = "delete the job it gives up on"
	mistakeCountAfter   mistake = "count attempts after a failed send"
	mistakeAckFirst     mistake = "mark sent before the send"
	mistakeEnqueueLater mistake = "enqueue the job after the approval commits"
	mistakeContentKey   mistake = "the action's identity made from its title"
	mistakeLeaseForever mistake = "a lease that never runs out"
	mistakeNoLock       mistake = "one worker a process, no lease, no lock"
	mistakeRetryRefused mistake = "retry every failure in order, without a budget"
	mistakeDropKey      mistake = "no Idempotency-Key on a retry over HTTP"
	mistakeRetry4xx     mistake = "retry every answer that is not 2xx over HTTP"
	mistakeWatermark    mistake = "a task marks every older job in flight sent"
)

// The plain worker's settings: a budget of five tries, a poll every
// second, a 30 s lease, a 10 s send timeout, and a backoff that doubles
// from 1 s.
const (
	plainBudget  = 5
	plainSettle  = 10 * time.Minute
	plainPoll    = time.Second
	plainLease   = 30 * time.Second
	plainTimeout = 10 * time.Second
	plainWorkers = 2
)

// bootPlain boots plain workers that make mistake m.
func bootPlain(m mistake) func(ctx context.Context, p Process) (Booted, error) {
	return func(ctx context.Context, p Process) (Booted, error) {
		opts := system.Options{Durability: system.ProcessSafe, Dial: p.Dial, MaxConns: 2, Worker: "app", Harness: system.Harness{WrapSQLite: p.WrapSQLite}}
		app, err := system.Open(ctx, p.Database(), opts)
		if err != nil {
			return nil, err
		}
		b := &poolBoot{app: app, closers: []*system.Outbox{app}, enqueueLater: m == mistakeEnqueueLater, contentKey: m == mistakeContentKey}
		run, cancel := context.WithCancel(ctx)
		b.run, b.cancel, b.done = run, cancel, make(chan error, 1)
		n := plainWorkers
		if m == mistakeNoLock || m == mistakeRetryRefused {
			n = 1 // one worker a process: it cannot race itself; an order kept
		}
		var workers []*plainWorker
		flight := &inFlight{jobs: map[int64]job{}}
		for i := range n {
			opts.Worker = workerName(p, "plain", i+1)
			o, err := system.Open(ctx, p.Database(), opts)
			if err != nil {
				cancel()
				b.close()
				return nil, err
			}
			b.closers = append(b.closers, o)
			w := &plainWorker{o: o, r: p.ReceiverFor(opts.Worker), mistake: m, flight: flight}
			if m == mistakeDropKey || m == mistakeRetry4xx {
				w.client, w.url = p.HTTPClient(opts.Worker), p.ReceiverURL()
				if w.r, err = crm.NewSender(w.url, w.client); err != nil {
					cancel()
					b.close()
					return nil, err
				}
			}
			workers = append(workers, w)
		}
		go func() {
			errs := make(chan error, len(workers))
			for _, w := range workers {
				go func() { errs <- w.run(run) }()
			}
			var all []error
			for range workers {
				all = append(all, <-errs)
			}
			b.done <- errors.Join(all...)
		}()
		return b, nil
	}
}

// plainWorker polls the outbox for a due row, leases it, sends it and
// records the answer under the lease's fence.
type plainWorker struct {
	o       *system.Outbox
	r       system.Receiver
	mistake mistake
	sends   int       // requests this worker made, for mistakeNewKey
	flight  *inFlight // the jobs the process's workers are sending, for mistakeWatermark

	client *http.Client // over HTTP, the worker's own client
	url    string       // and the receiver's base URL
}

// inFlight is the jobs a process's workers have claimed and not yet
// settled, by seq.
type inFlight struct {
	mu   sync.Mutex
	jobs map[int64]job
}

// set notes j in flight under seq, or, with j nil, no longer.
func (f *inFlight) set(seq int64, j *job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if j == nil {
		delete(f.jobs, seq)
	} else {
		f.jobs[seq] = *j
	}
}

// older is j and every job in flight older than j.
func (f *inFlight) older(j job) []job {
	f.mu.Lock()
	defer f.mu.Unlock()
	jobs := []job{j}
	for _, o := range f.jobs {
		if o.seq < j.seq {
			jobs = append(jobs, o)
		}
	}
	return jobs
}

// job is a row the worker leased.
type job struct {
	seq          int64
	key, payload string
	attempts     int // counted so far, this one included unless counted after
	fence        int64
}

func (w *plainWorker) run(ctx context.Context) error {
	for ctx.Err() == nil {
		if w.mistake == mistakeNoLock {
			if !w.deliverUnlocked(ctx) {
				sleepCtx(ctx, plainPoll)
			}
			continue
		}
		j, ok, err := w.claim(ctx)
		if err != nil || !ok {
			sleepCtx(ctx, plainPoll) // an error of the database passes: poll again
			continue
		}
		w.deliver(ctx, j)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// claim leases the oldest due row, counting the attempt now (unless the
// worker counts after).
func (w *plainWorker) claim(ctx context.Context) (job, bool, error) {
	now := time.Now().UnixMilli()
	var j job
	var due int64
	where, args := []string{`o.state = 'pending'`}, []any{}
	if w.mistake != mistakeRetryRefused {
		// The forwarder takes the oldest row, due or not: it keeps the
		// order, and waits for that row's backoff below.
		where, args = append(where, `o.next_attempt_at <= ?`), append(args, now)
	}
	if w.mistake == mistakeLeaseForever {
		where = append(where, `o.lease_owner IS NULL`)
	} else {
		where, args = append(where, `(o.lease_owner IS NULL OR o.lease_until <= ?)`), append(args, now)
	}
	err := w.o.DB().QueryRowContext(ctx, w.o.Query(`SELECT o.seq, o.key, a.payload, o.attempts, o.fence, o.next_attempt_at FROM outbox o JOIN approvals a ON a.key = o.key
		WHERE `+strings.Join(where, " AND ")+` ORDER BY o.seq LIMIT 1`), args...).
		Scan(&j.seq, &j.key, &j.payload, &j.attempts, &j.fence, &due)
	if errors.Is(err, sql.ErrNoRows) || err == nil && due > now {
		return job{}, false, nil
	}
	if err != nil {
		return job{}, false, err
	}
	if j.attempts >= plainBudget && w.mistake != mistakeRetryRefused {
		// Its last try died before it settled: give up now, without a send.
		_, err := w.o.DB().ExecContext(ctx, w.o.Query(`UPDATE outbox SET state = 'blocked', last_error = ?, lease_owner = NULL, lease_until = 0, fence = fence + 1
			WHERE seq = ? AND fence = ? AND state = 'pending'`), system.LastErrorBudgetExhausted, j.seq, j.fence)
		return job{}, false, err
	}
	count := 1
	if w.mistake == mistakeCountAfter {
		count = 0
	}
	res, err := w.o.DB().ExecContext(ctx, w.o.Query(`UPDATE outbox SET lease_owner = ?, lease_until = ?, attempts = attempts + ?, fence = fence + 1
		WHERE seq = ? AND fence = ? AND state = 'pending'`), w.o.Worker(), now+plainLease.Milliseconds(), count, j.seq, j.fence)
	if err != nil {
		return job{}, false, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return job{}, false, err // another worker took it first
	}
	j.attempts += count
	j.fence++
	return j, true, nil
}

// deliver sends j and records the answer.
func (w *plainWorker) deliver(ctx context.Context, j job) {
	if w.mistake == mistakeAckFirst {
		if !w.settle(ctx, j, `state = 'sent', remote_id = 0, lease_owner = NULL`) {
			return
		}
	}
	key := j.key
	if w.mistake == mistakeNewKey {
		w.sends++
		key = fmt.Sprintf("%s/%d", j.key, w.sends)
	}
	if w.mistake == mistakeWatermark {
		w.flight.set(j.seq, &j)
		defer w.flight.set(j.seq, nil)
	}
	send, cancel := context.WithTimeout(ctx, plainTimeout)
	id, err := w.send(send, j, key)
	cancel()
	if err == nil && w.mistake == mistakeWatermark {
		w.settleOlder(ctx, j, id)
		return
	}
	if w.mistake == mistakeAckFirst {
		if err == nil {
			w.o.DB().ExecContext(ctx, w.o.Query(`UPDATE outbox SET remote_id = ? WHERE seq = ?`), id, j.seq)
		}
		return
	}
	if err != nil && w.mistake == mistakeCountAfter {
		j.attempts++
		w.o.DB().ExecContext(ctx, w.o.Query(`UPDATE outbox SET attempts = attempts + 1 WHERE seq = ? AND fence = ?`), j.seq, j.fence)
	}
	switch {
	case err == nil:
		w.settle(ctx, j, fmt.Sprintf(`state = 'sent', remote_id = %d, last_error = NULL, lease_owner = NULL, lease_until = 0`, id))
	case w.mistake == mistakeRetryRefused:
		next := time.Now().Add(time.Second).UnixMilli()
		w.settle(ctx, j, fmt.Sprintf(`last_error = 'transient', next_attempt_at = %d, lease_owner = NULL, lease_until = 0`, next))
	case errors.Is(err, system.ErrTransient) && j.attempts < plainBudget:
		next := time.Now().Add(system.BackoffCeiling(time.Second, 5*time.Minute, j.attempts) / 2).UnixMilli()
		w.settle(ctx, j, fmt.Sprintf(`last_error = 'transient', next_attempt_at = %d, lease_owner = NULL, lease_until = 0`, next))
	default:
		reason := system.LastErrorBudgetExhausted
		if errors.Is(err, system.ErrRejected) {
			reason = system.LastErrorRejected
		} else if errors.Is(err, system.ErrKeyConflict) {
			reason = system.LastErrorConflict
		}
		if w.mistake == mistakeDiscard {
			w.o.DB().ExecContext(ctx, w.o.Query(`DELETE FROM outbox WHERE seq = ? AND fence = ?`), j.seq, j.fence)
			return
		}
		w.settle(ctx, j, fmt.Sprintf(`state = 'blocked', last_error = '%s', lease_owner = NULL, lease_until = 0`, reason))
	}
}

// settleOlder is mistakeWatermark's settle of j, sent as task id: one
// transaction marks j sent, and every older job in flight too.
func (w *plainWorker) settleOlder(ctx context.Context, j job, id int64) {
	tx, err := w.o.DB().BeginTx(ctx, nil)
	if err != nil {
		return
	}
	defer tx.Rollback()
	for _, o := range w.flight.older(j) {
		remote := int64(0) // the older job's task is not known yet: the row must only show it sent
		if o.seq == j.seq {
			remote = id
		}
		if _, err := tx.ExecContext(ctx, w.o.Query(`UPDATE outbox SET state = 'sent', remote_id = ?, last_error = NULL, lease_owner = NULL, lease_until = 0
			WHERE seq = ? AND fence = ?`), remote, o.seq, o.fence); err != nil {
			return
		}
	}
	tx.Commit()
}

// settle sets what set says on j's row, if the row still carries j's
// fence, and reports whether it did.
func (w *plainWorker) settle(ctx context.Context, j job, set string) bool {
	res, err := w.o.DB().ExecContext(ctx, w.o.Query(`UPDATE outbox SET `+set+` WHERE seq = ? AND fence = ?`), j.seq, j.fence)
	if err != nil {
		return false
	}
	n, err := res.RowsAffected()
	return err == nil && n == 1
}

// send sends j's payload under key: through the receiver, or over HTTP
// as the worker's mistake builds the request.
func (w *plainWorker) send(ctx context.Context, j job, key string) (int64, error) {
	switch {
	case w.mistake == mistakeRetry4xx:
		return w.post(ctx, key, j.payload)
	case w.mistake == mistakeDropKey && j.attempts > 1:
		return w.post(ctx, "", j.payload)
	}
	return w.r.CreateTask(ctx, key, j.payload)
}

// post is the worker's own request over HTTP: POST {url}/tasks, with
// Idempotency-Key when key is not "", and a 2xx answer's id as the task.
// With mistakeRetry4xx any other answer is an error to retry; else 422
// is a conflict, another 4xx but 409 and 429 a refusal, the rest an
// error to retry.
func (w *plainWorker) post(ctx context.Context, key, payload string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url+"/tasks", strings.NewReader(payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		header, err := crm.FormatIdempotencyKey(key)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Idempotency-Key", header)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", system.ErrTransient, err)
	}
	defer resp.Body.Close()
	var t struct {
		ID int64 `json:"id"`
	}
	code := resp.StatusCode
	switch {
	case code/100 == 2 && json.NewDecoder(resp.Body).Decode(&t) == nil:
		return t.ID, nil
	case w.mistake == mistakeRetry4xx || code/100 != 4 || code == http.StatusConflict || code == http.StatusTooManyRequests:
		return 0, fmt.Errorf("%w: %s", system.ErrTransient, resp.Status)
	case code == http.StatusUnprocessableEntity:
		return 0, fmt.Errorf("%w: %s", system.ErrKeyConflict, resp.Status)
	}
	return 0, fmt.Errorf("%w: %s", system.ErrRejected, resp.Status)
}

// deliverUnlocked is mistakeNoLock's delivery, as an ORM writes it: load
// the oldest due row, count the attempt, save, send, save the outcome,
// each save writing the whole row as loaded. It holds no lease and no
// lock. It reports whether it found a row.
func (w *plainWorker) deliverUnlocked(ctx context.Context) bool {
	now := time.Now().UnixMilli()
	var j job
	err := w.o.DB().QueryRowContext(ctx, w.o.Query(`SELECT o.seq, o.key, a.payload, o.attempts FROM outbox o JOIN approvals a ON a.key = o.key
		WHERE o.state = 'pending' AND o.next_attempt_at <= ? ORDER BY o.seq LIMIT 1`), now).Scan(&j.seq, &j.key, &j.payload, &j.attempts)
	if err != nil {
		return false
	}
	save := func(state, lastError string, remoteID, next int64) {
		w.o.DB().ExecContext(ctx, w.o.Query(`UPDATE outbox SET state = ?, attempts = ?, last_error = NULLIF(?, ''), remote_id = NULLIF(?, 0), next_attempt_at = ? WHERE seq = ?`),
			state, j.attempts, lastError, remoteID, next, j.seq)
	}
	if j.attempts >= plainBudget {
		save("blocked", system.LastErrorBudgetExhausted, 0, now)
		return true
	}
	j.attempts++
	save("pending", "", 0, now)
	send, cancel := context.WithTimeout(ctx, plainTimeout)
	id, err := w.r.CreateTask(send, j.key, j.payload)
	cancel()
	switch {
	case err == nil:
		save("sent", "", id, now)
	case errors.Is(err, system.ErrTransient) && j.attempts < plainBudget:
		save("pending", "transient", 0, time.Now().Add(system.BackoffCeiling(time.Second, 5*time.Minute, j.attempts)/2).UnixMilli())
	case errors.Is(err, system.ErrRejected):
		save("blocked", system.LastErrorRejected, 0, now)
	case errors.Is(err, system.ErrKeyConflict):
		save("blocked", system.LastErrorConflict, 0, now)
	default:
		save("blocked", system.LastErrorBudgetExhausted, 0, now)
	}
	return true
}
