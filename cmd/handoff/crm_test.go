package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"

	receiver "github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// TestCRMServe serves a CRM file on a free port, delivers an approval to it
// through the HTTP sender, replays the request, and stops the server with
// the context, as SIGINT would: exit 0, and the task in the file.
func TestCRMServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	mustRun(t, "approve", "--app", app, "--case", "case-1", "--title", "Call back")
	identity := regexp.MustCompile(`identity ([0-9a-f]{32})`).FindStringSubmatch(mustRun(t, "crm", "init", "--crm", crm))[1]
	refused(t, "does not exist", "crm", "serve", "--crm", filepath.Join(dir, "missing.db"), "--addr", "127.0.0.1:0")
	if code, _, _ := runCLI(t, "crm", "init", "--crm", filepath.Join(dir, "x.db"), "--addr", ":0"); code != 2 {
		t.Errorf("crm init --addr: got exit %d, want 2", code)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out, w := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"crm", "serve", "--crm", crm, "--addr", "127.0.0.1:0", "--retention", "1h"}, w, io.Discard)
		w.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no address printed: %v", err)
	}
	go io.Copy(io.Discard, out)
	url := regexp.MustCompile(`http://[0-9.:]+`).FindString(line)
	if url == "" {
		t.Fatalf("no address in %q", line)
	}

	sender, err := receiver.NewSender(url, &http.Client{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := sender.Contract(ctx); err != nil || r.Hours() != 1 {
		t.Errorf("the contract's retention: got %v, %v; want 1h", r, err)
	}
	resp, err := http.Get(url + "/contract")
	if err != nil {
		t.Fatal(err)
	}
	var contract receiver.Contract
	err = json.NewDecoder(resp.Body).Decode(&contract)
	resp.Body.Close()
	if err != nil || contract.Identity != identity {
		t.Errorf("the contract's identity: got %+v, %v; want %s", contract, err, identity)
	}
	outbox, err := system.Open(ctx, app, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer outbox.Close()
	if d, err := outbox.DeliverOne(ctx, sender); err != nil || d.Result != system.ResultSent || d.RemoteID != 1 {
		t.Fatalf("delivery over HTTP: got %+v, %v; want sent as task 1", d, err)
	}
	a, err := system.NewApproval("case-1", "Call back")
	if err != nil {
		t.Fatal(err)
	}
	if id, err := sender.CreateTask(ctx, a.Key, a.Payload); err != nil || id != 1 {
		t.Errorf("a replay over HTTP: got %d, %v; want task 1", id, err)
	}
	if _, err := sender.CreateTask(ctx, a.Key, `{"case_id":"case-1","title":"other"}`); !errors.Is(err, system.ErrKeyConflict) {
		t.Errorf("another payload for the key: got %v, want a key conflict", err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("crm serve after the interrupt: exit %d, want 0", code)
	}
	mustRun(t, "check", "--app", app, "--crm", crm)
}
