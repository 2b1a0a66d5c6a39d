package exhaustive

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/sim"
)

// restorePath is a state four steps deep, with a named worker's claim in
// flight and time passed: the kind of state a search restores most.
var restorePath = []sim.Step{
	sim.NewStep("approve", "case", "case-1", "title", "Call back"),
	sim.NewStep("claim", "worker", "A"),
	sim.NewStep("send", "worker", "A", "fault", "lost-reply"),
	sim.NewStep("tick", "ms", "30000"),
}

// BenchmarkRestore measures what restoring a state costs, the two ways
// there are: replaying its sequence on emptied databases, as the search
// does (replay-N, for the first N steps of restorePath), and the least a
// snapshot of the database files would cost (copy-files: copying the two
// files, with their write-ahead logs, to a folder of their own; restart:
// closing every handle and opening it again from its file, which a
// snapshot put back under open handles needs at least, and which still
// leaves the harness's and the workers' memory to restore).
//
//	go test ./internal/exhaustive -run XXX -bench Restore
func BenchmarkRestore(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	l, err := NewLane(ctx, LaneConfig{Design: designs.Handoff, Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	s := l.(*searcher)
	for n := 1; n <= len(restorePath); n++ {
		b.Run(fmt.Sprintf("replay-%d", n), func(b *testing.B) {
			for b.Loop() {
				if err := s.restore(restorePath[:n]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	if err := s.restore(restorePath); err != nil {
		b.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "env-*", "*.db*"))
	if err != nil || len(files) < 2 {
		b.Fatalf("the search's database files: %v, %v", files, err)
	}
	snapshot := b.TempDir()
	b.Run("copy-files", func(b *testing.B) {
		for b.Loop() {
			for _, f := range files {
				if err := copyFile(f, filepath.Join(snapshot, filepath.Base(f))); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("restart", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.env.Apply(ctx, sim.NewStep("restart")); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// copyFile copies the file from to the file to.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
