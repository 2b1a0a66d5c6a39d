package main

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The lost-reply demonstration.

func TestDemo(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "demo")
	code, stdout, _ := runCLI(t, "demo", "--dir", dir, "--json")
	var d struct {
		OperationKey string `json:"operation_key"`
		NetworkCalls *int   `json:"network_calls"`
		Steps        []struct {
			Step         string `json:"step"`
			Result       string `json:"result"`
			CRMTaskCount int    `json:"crm_task_count"`
			Attempts     int    `json:"attempts"`
			RemoteID     *int64 `json:"remote_id"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); code != 0 || err != nil {
		t.Fatalf("demo --json: exit %d, %v", code, err)
	}
	if d.NetworkCalls == nil || *d.NetworkCalls != 0 || len(d.Steps) != 3 || d.Steps[0].RemoteID != nil ||
		d.Steps[1].Result != "sent" || *d.Steps[1].RemoteID != 1 || d.Steps[2].Result != "idle" {
		t.Errorf("demo --json: got %+v", d)
	}
	if code, _, stderr := runCLI(t, "demo", "--dir", dir); code != 1 || !strings.Contains(stderr, "already exists") {
		t.Errorf("demo on an existing folder: got exit %d, %q; want 1", code, stderr)
	}
}

// TestDemoMatchesSpec: the demonstration is the table of SPEC, and an
// existing folder is refused.
func TestDemoMatchesSpec(t *testing.T) {
	t.Parallel()
	d, err := runDemo(t.Context(), t.TempDir()+"/demo")
	if err != nil {
		t.Fatal(err)
	}
	one := int64(1)
	want := lostReply{OperationKey: "harbor:create-followup:v1:case-104", Steps: []demoStep{
		{"reply_lost", "pending", 1, 1, nil},
		{"retry_same_action", "sent", 1, 2, &one},
		{"run_again", "idle", 1, 2, &one},
	}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("demo (-SPEC +got):\n%s", diff)
	}
	dir := t.TempDir()
	if _, err := runDemo(t.Context(), dir); !errors.Is(err, errDemoDirExists) {
		t.Errorf("existing folder: got %v, want errDemoDirExists", err)
	}
}
