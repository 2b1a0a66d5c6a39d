package sim

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
)

// TestTransportLineChangesNoOutput replays every corpus file that names
// its transport without that line, in process: every other step gives the
// output the file expects over HTTP. A file with a fault of the
// receiver's database is left out (the worker hears that fault as the
// receiver answers it, in process its error, over HTTP crm.Server's 503
// or 500), and so is one of an answer over HTTP, which has no in-process
// form.
func TestTransportLineChangesNoOutput(t *testing.T) {
	t.Parallel()
	scenarios := corpusScenarios(t)
	receiverFault := func(c Case) bool {
		k, _ := c.Step.Arg("fault")
		return faultTable[faults.Kind(k)].database == crmFile || HTTPOnly(faults.Kind(k))
	}
	found := 0
	for _, sc := range scenarios {
		i := slices.IndexFunc(sc.Cases, func(c Case) bool { return c.Step.Directive == "transport" })
		if i < 0 || slices.ContainsFunc(sc.Cases, receiverFault) {
			continue
		}
		found++
		sc.Cases = slices.Delete(slices.Clone(sc.Cases), i, i+1)
		_, problems, err := Replay(t.Context(), sc, Config{Dir: t.TempDir(), Transport: InProcess})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
	if found == 0 {
		t.Error("no corpus file names its transport")
	}
}

// TestTransportRefusals runs scenarios that cannot run over HTTP, or name
// a transport wrongly: each is a malformed scenario, with its reason.
func TestTransportRefusals(t *testing.T) {
	const (
		overHTTP = "transport name=http\n----\n\n"
		approve  = "approve case=case-1 title=\"Call back\"\n----\n\n"
	)
	tests := []struct {
		name, text, want string
	}{
		{"unknown transport", "transport name=pigeon\n----\n", `unknown transport "pigeon", want in-process or http`},
		{"no name", "transport\n----\n", `unknown transport ""`},
		{"after a step", approve + overHTTP, "transport comes before every step but design and config"},
		{"a receiver of its own", "design name=check-then-create\n----\n\n" + overHTTP, "design check-then-create has a receiver of its own"},
		{"retention under a second", overHTTP + "config retention=500\n----\n", "retention 500ms: over http the receiver states its retention in whole seconds"},
		{"a hint in milliseconds", overHTTP + approve + "claim worker=A\n----\n\nsend worker=A fault=throttled retry-after=1500\n----\n",
			"retry-after=1500: over http a Retry-After is whole seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := ParseScenario("s.txt", tt.text)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = Replay(t.Context(), sc, Config{Dir: t.TempDir()})
			if !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want a malformed scenario saying %q", err, tt.want)
			}
		})
	}
	sc, err := ParseScenario("s.txt", "design name=receiver-ignores-payload\n----\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Replay(t.Context(), sc, Config{Dir: t.TempDir(), Transport: HTTP}); !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), "runs in process only") {
		t.Errorf("a receiver of its own replayed over http: got %v, want it refused", err)
	}
}

// deadlineCRM is a receiver that records the context each request
// reaches it with.
type deadlineCRM struct {
	designs.CRM
	done        bool // the context can be done
	hasDeadline bool
}

func (c *deadlineCRM) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	_, c.hasDeadline = ctx.Deadline()
	c.done = ctx.Done() != nil
	return c.CRM.CreateTask(ctx, key, payload)
}

// TestInProcessSendHasNoDeadline sends a request in process with a
// deadline, as Outbox.Send gives one, and checks that the CRM gets it
// under a context that is never done: a deadline of virtual time taken as
// real time has no meaning in the simulation, and the SQLite driver starts
// a goroutine to watch every statement run under one that can be done.
func TestInProcessSendHasNoDeadline(t *testing.T) {
	env, err := NewEnv(t.Context(), Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	crm := &deadlineCRM{CRM: env.crm}
	env.crm = crm
	defer func() { env.crm = crm.CRM; env.Close() }()
	r, err := env.network("", model.Request{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := r.CreateTask(ctx, "harbor:create-followup:v1:case-1", `{"case_id":"case-1","title":"t"}`); err != nil {
		t.Fatal(err)
	}
	if crm.done || crm.hasDeadline {
		t.Errorf("the CRM got a context that can be done (%t), with a deadline (%t); want neither", crm.done, crm.hasDeadline)
	}
}
