package riveroutbox

import (
	"os"
	"testing"

	"github.com/outboxlab/handoff"
)

func TestScratchExplore(t *testing.T) {
	if os.Getenv("SCRATCH") == "" {
		t.Skip("scratch")
	}
	v := map[string]Variant{"w": Workers, "wr": WorkersRelease, "one": OneWorker}[os.Getenv("SCRATCH")]
	r, err := handoff.Explore(t.Context(), handoff.ExploreConfig{Design: v.Design(), Checks: 500, Steps: handoff.DefaultSteps, Seed: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failure == nil {
		t.Logf("nothing in %d", r.Stats.Sequences.Load())
		return
	}
	t.Logf("after %d sequences:\n%s", r.FirstSequences, r.Failure.Report(""))
}
