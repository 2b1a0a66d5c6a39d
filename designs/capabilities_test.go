package designs_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
)

func TestCapabilitiesHoldTogether(t *testing.T) {
	tests := []struct {
		c    designs.Capabilities
		want string // in the error; "" for none
	}{
		{designs.Capabilities{}, ""},
		{designs.Everything, ""},
		{designs.Capabilities{Time: true}, ""},
		{designs.Capabilities{Time: true, Leases: true}, ""},
		{designs.Capabilities{Leases: true}, "capability Leases needs Time"},
		{designs.Capabilities{Time: true, Workers: true}, "capability Workers needs Leases"},
		{designs.Capabilities{Workers: true}, "capability Workers needs Leases and Time"},
		{designs.Capabilities{Operator: true}, "capability Operator needs Time"},
		{designs.Capabilities{Retention: true}, "capability Retention needs Time"},
	}
	for _, tt := range tests {
		d := designs.Handoff
		d.Supports = tt.c
		err := d.Check()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.c, err)
		case tt.want != "" && (!errors.Is(err, designs.ErrDesign) || !strings.HasSuffix(err.Error(), ": "+tt.want)):
			t.Errorf("%+v: got %v, want ErrDesign ending %q", tt.c, err, tt.want)
		}
	}
}

func TestUncheckedNamesWhatIsMissing(t *testing.T) {
	tests := []struct {
		c    designs.Capabilities
		want []string // the capabilities named, in order
	}{
		{designs.Everything, nil},
		{designs.Capabilities{}, []string{"Time", "TimeBudget", "Leases", "Workers", "Pipeline", "Operator", "Retention", "RestartReleases", "Fences", "Holders"}},
		{designs.Capabilities{Time: true, Leases: true}, []string{"TimeBudget", "Workers", "Pipeline", "Operator", "Retention", "RestartReleases", "Fences", "Holders"}},
		{designs.Capabilities{Time: true, Leases: true, Holders: true, DueFirst: true}, []string{"TimeBudget", "Workers", "Pipeline", "Operator", "Retention", "RestartReleases", "Fences"}},
	}
	for _, tt := range tests {
		var got []string
		for _, line := range tt.c.Unchecked() {
			name, _, ok := strings.Cut(strings.TrimPrefix(line, "without "), ":")
			if !ok {
				t.Errorf("%q does not say which capability it lacks", line)
			}
			got = append(got, name)
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%v: unchecked %v, want %v", tt.c, got, tt.want)
		}
	}
}

// coreApp is an app with the core methods only: system's outbox seen
// through designs.App.
type coreApp struct{ designs.App }

func TestCheckApp(t *testing.T) {
	o, err := designs.Handoff.OpenApp(t.Context(), filepath.Join(t.TempDir(), "app.db"), system.Options{Durability: system.ProcessSafe})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	open := func(context.Context, string, system.Options) (designs.App, error) { return o, nil }
	tests := []struct {
		app      designs.App
		supports designs.Capabilities
		want     []string // the interfaces the error names, in order; nil for none
	}{
		{o, designs.Everything, nil},
		{coreApp{o}, designs.Capabilities{Time: true}, nil},
		{coreApp{o}, designs.Capabilities{Time: true, Leases: true}, nil},
		{coreApp{o}, designs.Capabilities{Time: true, Leases: true, RestartReleases: true}, []string{"Leaser"}},
		{coreApp{o}, designs.Capabilities{Time: true, Operator: true}, []string{"Operator"}},
		{coreApp{o}, designs.Capabilities{Time: true, Leases: true, Workers: true}, []string{"Phases"}},
		{coreApp{o}, designs.Everything, []string{"Leaser", "Phases", "Operator"}},
	}
	for _, tt := range tests {
		d := designs.Design{Name: "mine", Supports: tt.supports, OpenApp: open, OpenCRM: designs.Handoff.OpenCRM}
		err := d.CheckApp(tt.app)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%T with %v: %v", tt.app, tt.supports, err)
			}
			continue
		}
		if !errors.Is(err, designs.ErrDesign) {
			t.Errorf("%T with %v: got %v, want ErrDesign", tt.app, tt.supports, err)
			continue
		}
		var named []string
		for _, i := range []string{"Leaser", "Phases", "Operator"} {
			if strings.Contains(err.Error(), "designs."+i+" (") {
				named = append(named, i)
			}
		}
		if strings.Join(named, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%T with %v: %q names %v, want %v", tt.app, tt.supports, err, named, tt.want)
		}
		if want := "var _ designs." + tt.want[0] + " = designs_test.coreApp{}"; !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not show %q", err, want)
		}
	}
}

func TestDesignCheck(t *testing.T) {
	ok := designs.Handoff
	tests := []struct {
		name string
		edit func(*designs.Design)
		want string
	}{
		{"no name", func(d *designs.Design) { d.Name = "" }, "needs a Name"},
		{"no app", func(d *designs.Design) { d.OpenApp = nil }, "invalid design handoff: it needs both OpenApp and OpenCRM"},
		{"no receiver", func(d *designs.Design) { d.OpenCRM = nil }, "needs both OpenApp and OpenCRM"},
		{"workers without leases", func(d *designs.Design) { d.Supports.Leases = false }, "invalid design handoff: capability Workers needs Leases"},
		{"workers alone", func(d *designs.Design) { d.Supports = designs.Capabilities{Workers: true} },
			"capability Workers needs Leases and Time"},
		{"one commit without a pipeline", func(d *designs.Design) { d.Supports.Pipeline = false },
			"capability PipelineOneCommit needs Pipeline"},
		{"operator and workers without time", func(d *designs.Design) { d.Supports.Time = false },
			"capability TimeBudget needs Time; capability Leases needs Time; capability Workers needs Time; capability Pipeline needs Time; capability PipelineOneCommit needs Time; capability Operator needs Time; capability Retention needs Time; capability RestartReleases needs Time; capability Fences needs Time; capability Holders needs Time"},
	}
	for _, tt := range tests {
		d := ok
		tt.edit(&d)
		if err := d.Check(); !errors.Is(err, designs.ErrDesign) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want ErrDesign saying %q", tt.name, err, tt.want)
		}
	}
	if err := ok.Check(); err != nil {
		t.Errorf("the real design: %v", err)
	}
}

func TestWithReceiver(t *testing.T) {
	d := designs.WithReceiver("mine", "the handoff in front of my receiver", designs.Handoff.OpenCRM)
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	want := designs.Handoff.Supports
	want.Retention = false
	if d.Supports != want || !d.OwnReceiver {
		t.Errorf("supports %v, own receiver %t; want %v, true", d.Supports, d.OwnReceiver, want)
	}
}
