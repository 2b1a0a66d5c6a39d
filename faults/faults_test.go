package faults_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/system"
)

func TestInjector(t *testing.T) {
	var in faults.Injector
	hook := in.Hook()
	if err := hook(system.PointBeforeSend); err != nil {
		t.Fatalf("unarmed: got %v, want nil", err)
	}
	in.Arm(system.PointAfterReply)
	if err := hook(system.PointBeforeSend); err != nil {
		t.Fatalf("armed elsewhere: got %v, want nil", err)
	}
	if err := hook(system.PointAfterReply); !errors.Is(err, faults.ErrCrash) {
		t.Fatalf("armed: got %v, want ErrCrash", err)
	}
	if p := in.Crashed(); p != system.PointAfterReply {
		t.Errorf("Crashed: got %q, want %q", p, system.PointAfterReply)
	}
	if err := hook(system.PointAfterReply); err != nil {
		t.Errorf("a crash disarms: got %v, want nil", err)
	}
	in.CrashAtPass(len(in.Trace()) + 2)
	if err := hook(system.PointBeforeSend); err != nil {
		t.Errorf("pass before the chosen one: got %v, want nil", err)
	}
	if err := hook(system.PointBetweenApprovalInserts); !errors.Is(err, faults.ErrCrash) {
		t.Errorf("chosen pass: got %v, want ErrCrash", err)
	}
	want := []system.FaultPoint{system.PointBeforeSend, system.PointBeforeSend, system.PointAfterReply,
		system.PointAfterReply, system.PointBeforeSend, system.PointBetweenApprovalInserts}
	if got := in.Trace(); !slices.Equal(got, want) {
		t.Errorf("got trace %v, want %v", got, want)
	}
}

// fake is a receiver that creates task 7 and counts the requests it gets.
type fake struct{ calls int }

func (f *fake) CreateTask(context.Context, string, string) (int64, error) {
	f.calls++
	return 7, nil
}

// windowed is a receiver with a window between lookup and insert.
type windowed struct {
	fake
	inWindow int
}

func (w *windowed) CreateTaskWindow(ctx context.Context, key, payload string, between func()) (int64, error) {
	w.inWindow++
	between()
	return w.CreateTask(ctx, key, payload)
}

func TestNetwork(t *testing.T) {
	tests := []struct {
		kind      faults.Kind
		wantID    int64
		transient bool
		calls     int
	}{
		{"", 7, false, 1},
		{faults.Offline, 0, true, 0},
		{faults.LostReply, 0, true, 1},
		{faults.DuplicateRequest, 7, false, 2},
		{faults.ForeignTask, 7, false, 2},
		{faults.CrashAfterReply, 7, false, 1}, // a crash is the Injector's business
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			f := &fake{}
			sends := map[string]int{}
			id, err := faults.Counted(sends, faults.Network(tt.kind, f)).CreateTask(t.Context(), "k", "p")
			if id != tt.wantID || errors.Is(err, system.ErrTransient) != tt.transient {
				t.Errorf("got %d, %v; want %d, transient %v", id, err, tt.wantID, tt.transient)
			}
			if f.calls != tt.calls || sends["k"] != 1 {
				t.Errorf("got %d receiver calls and %d counted sends, want %d and 1", f.calls, sends["k"], tt.calls)
			}
		})
	}
	w := &windowed{}
	if _, err := faults.Network(faults.DuplicateRequest, w).CreateTask(t.Context(), "k", "p"); err != nil {
		t.Fatal(err)
	}
	if w.inWindow != 1 || w.calls != 2 {
		t.Errorf("windowed receiver: got %d windows and %d creates, want the copy inside the one window", w.inWindow, w.calls)
	}
}

func TestParseKind(t *testing.T) {
	if k, err := faults.ParseKind("lost-reply", faults.DeliveryKinds...); err != nil || k != faults.LostReply {
		t.Errorf("got %q, %v; want lost-reply", k, err)
	}
	if _, err := faults.ParseKind("crash-between-inserts", faults.DeliveryKinds...); err == nil {
		t.Error("an approval fault parsed as a delivery fault")
	}
}

// TestAllKinds: All lists every Kind constant of this package, once, in
// the order they are declared.
func TestAllKinds(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "faults.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []faults.Kind
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Kind" {
				continue
			}
			for _, val := range v.Values {
				lit, err := strconv.Unquote(val.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				declared = append(declared, faults.Kind(lit))
			}
		}
	}
	if !slices.Equal(declared, faults.All) {
		t.Errorf("faults.All is %v, want every Kind declared in faults.go, in order: %v", faults.All, declared)
	}
}

// TestEveryKindInjected: the fault table gives every fault the modes
// that inject it.
func TestEveryKindInjected(t *testing.T) {
	for _, k := range faults.All {
		if !(faults.StepMode | faults.RunningMode).Injects(k) {
			t.Errorf("fault %s: no mode injects it (give it its modes in injectedBy)", k)
		}
	}
}
