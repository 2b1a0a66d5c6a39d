package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	receiver "github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// errNoContract says that the receiver behind a --crm-url did not state
// its contract at GET /contract: it is down, not a handoff receiver, or
// not the URL meant. Nothing is delivered to such a receiver.
var errNoContract = errors.New("does not answer GET /contract")

// oneCRM returns a usage error unless exactly one of --crm and --crm-url
// was given.
func oneCRM(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch {
	case given["crm"] && given["crm-url"]:
		return fmt.Errorf("%w: give one of --crm PATH and --crm-url URL, not both", errUsage)
	case !given["crm"] && !given["crm-url"]:
		return fmt.Errorf("%w: missing --crm PATH or --crm-url URL", errUsage)
	}
	return nil
}

// remoteCRM is a CRM behind a URL: the sender that delivers to it, and
// the contract it stated when the command started.
type remoteCRM struct {
	url      string
	base     *url.URL
	client   *http.Client
	sender   *receiver.Sender
	contract receiver.Contract
}

// newRemoteCRM returns the CRM behind rawURL, refusing, as a usage error,
// a URL that is not http or https. Its client keeps up to conns
// connections (at least two) open for reuse, one per worker. It sends
// nothing yet.
func newRemoteCRM(rawURL string, conns int) (*remoteCRM, error) {
	if err := mistypedURL("crm-url", rawURL); err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = max(conns, 2)
	client := &http.Client{Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	sender, err := receiver.NewSender(rawURL, client)
	if err != nil {
		return nil, fmt.Errorf("%w: --crm-url: %v; want http(s)://HOST[:PORT][/PATH]", errUsage, err)
	}
	base, err := url.Parse(rawURL) // NewSender parsed it
	if err != nil {
		return nil, err
	}
	return &remoteCRM{url: rawURL, base: base, client: client, sender: sender}, nil
}

// readContract reads the receiver's contract at GET /contract, within
// timeout: its identity, for the binding, and its retention, which the
// sender then gives every claim. The sender reads it now too, not at the
// first claim: a receiver down by then would leave it unknown, and the
// claim would hear "forever". It returns errNoContract when the receiver
// does not state both.
func (r *remoteCRM) readContract(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	refuse := func(cause string) error {
		return fmt.Errorf("the CRM at %s %w (%s): is a handoff receiver (handoff crm serve) listening there?", r.url, errNoContract, cause)
	}
	body, status, err := r.get(ctx, "contract")
	switch {
	case err != nil:
		return refuse(err.Error())
	case status != http.StatusOK:
		return refuse(fmt.Sprintf("%d %s", status, http.StatusText(status)))
	}
	if err := json.Unmarshal(body, &r.contract); err != nil {
		return refuse("its answer is not a contract: " + err.Error())
	}
	if r.contract.Identity == "" {
		return refuse("no identity in the answer")
	}
	retention, err := r.sender.Contract(ctx)
	if err != nil {
		return refuse(err.Error())
	}
	if want := time.Duration(r.contract.RetentionSeconds) * time.Second; retention != want {
		return refuse(fmt.Sprintf("it stated a retention of %v, then of %v", want, retention))
	}
	return nil
}

// taskKey returns the key of the receiver's task id, or "" when it holds
// no such task (GET /tasks/{id} answers 404).
func (r *remoteCRM) taskKey(ctx context.Context, id int64) (string, error) {
	body, status, err := r.get(ctx, "tasks", strconv.FormatInt(id, 10))
	switch {
	case err != nil:
		return "", fmt.Errorf("reading task %d at %s: %w", id, r.url, err)
	case status == http.StatusNotFound:
		return "", nil
	case status != http.StatusOK:
		return "", fmt.Errorf("reading task %d at %s: %d %s", id, r.url, status, http.StatusText(status))
	}
	var t struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(body, &t); err != nil {
		return "", fmt.Errorf("reading task %d at %s: %v", id, r.url, err)
	}
	return t.Key, nil
}

// get answers GET on the receiver's path elem: the body, up to 1 MiB, and
// the status.
func (r *remoteCRM) get(ctx context.Context, elem ...string) ([]byte, int, error) {
	return r.getURL(ctx, r.base.JoinPath(elem...))
}

// getURL answers GET on u: the body, up to 1 MiB, and the status.
func (r *remoteCRM) getURL(ctx context.Context, u *url.URL) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return body, resp.StatusCode, err
}

// retaining is a receiver that reports the retention of another: a
// receiver wrapped in a simulated fault keeps the retention of the CRM
// behind it.
type retaining struct {
	system.Receiver
	system.Retainer
}

// fileTaskKey returns the taskKey of a CRM file: it reads the tasks once,
// on its first call.
func fileTaskKey(crm *system.CRM) func(context.Context, int64) (string, error) {
	var keys map[int64]string
	return func(ctx context.Context, id int64) (string, error) {
		if keys == nil {
			tasks, err := crm.Tasks(ctx)
			if err != nil {
				return "", err
			}
			keys = map[int64]string{}
			for _, t := range tasks {
				keys[t.ID] = t.Key
			}
		}
		return keys[id], nil
	}
}

// bindCRM makes app remember the CRM with identity, found at where (a
// file or a URL), as the CRM it delivers to: before the first binding,
// the CRM must hold the tasks app recorded as sent (taskKey names the key
// of a task id, "" for none); after it, another CRM is refused. The same
// CRM by file or by URL is one binding: its identity.
func bindCRM(ctx context.Context, app *system.Outbox, identity, where string, taskKey func(context.Context, int64) (string, error)) error {
	bound, err := app.Receiver(ctx)
	if err != nil {
		return err
	}
	if bound == "" {
		if err := holdsSentTasks(ctx, app, where, taskKey); err != nil {
			return err
		}
	}
	return app.BindReceiver(ctx, identity)
}

// holdsSentTasks refuses, before an app database first remembers its CRM,
// a CRM that does not hold the tasks the app already recorded as sent: an
// app database an older handoff wrote delivered before identities
// existed, and its CRM must be the one that holds its tasks.
func holdsSentTasks(ctx context.Context, app *system.Outbox, where string, taskKey func(context.Context, int64) (string, error)) error {
	snap, err := app.Snapshot(ctx)
	if err != nil {
		return err
	}
	for _, r := range snap.Outbox {
		if r.State != system.Sent {
			continue
		}
		key, err := taskKey(ctx, r.RemoteID)
		if err != nil {
			return err
		}
		if key != r.Key {
			return fmt.Errorf("%w: %s records %s as sent as task %d, which %s does not hold: is it the right CRM?", system.ErrWrongReceiver, app.Path(), r.Key, r.RemoteID, where)
		}
	}
	return nil
}

// readTimeout bounds each read of a receiver's tasks: a receiver that
// takes a connection and never answers must not hang a trial.
const readTimeout = 10 * time.Second

// tasksFor returns the tasks the receiver holds for key, at GET
// /tasks?key=KEY, within readTimeout.
func (r *remoteCRM) tasksFor(ctx context.Context, key string) ([]system.Task, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	u := r.base.JoinPath("tasks")
	u.RawQuery = "key=" + url.QueryEscape(key)
	body, status, err := r.getURL(ctx, u)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("%d %s", status, http.StatusText(status))
	}
	var found struct {
		Tasks []struct {
			ID      int64           `json:"id"`
			Key     string          `json:"key"`
			Payload json.RawMessage `json:"payload"`
		} `json:"tasks"`
	}
	if err == nil {
		err = json.Unmarshal(body, &found)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the tasks of %s at %s: %w", key, r.url, err)
	}
	tasks := make([]system.Task, 0, len(found.Tasks))
	for _, t := range found.Tasks {
		tasks = append(tasks, system.Task{ID: t.ID, Key: t.Key, Payload: string(t.Payload)})
	}
	return tasks, nil
}
