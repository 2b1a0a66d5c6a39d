package sim

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDemoMatchesSpec(t *testing.T) {
	t.Parallel()
	d, err := RunDemo(t.Context(), t.TempDir()+"/demo")
	if err != nil {
		t.Fatal(err)
	}
	one := int64(1)
	want := Demo{OperationKey: "harbor:create-followup:v1:case-104", Steps: []DemoStep{
		{"reply_lost", "pending", 1, 1, nil},
		{"retry_same_action", "sent", 1, 2, &one},
		{"run_again", "idle", 1, 2, &one},
	}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("demo (-the spec +got):\n%s", diff)
	}
	dir := t.TempDir()
	if _, err := RunDemo(t.Context(), dir); !errors.Is(err, ErrDirExists) {
		t.Errorf("existing folder: got %v, want ErrDirExists", err)
	}
}
