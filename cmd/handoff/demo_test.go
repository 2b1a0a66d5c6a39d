package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// The lost-reply demonstration.

func TestDemo(t *testing.T) {
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
