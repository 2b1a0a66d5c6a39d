package system_test

import (
	"context"
	"database/sql/driver"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/outboxlab/handoff/system"
)

// countingConnector counts the connections a handle makes through it.
type countingConnector struct {
	driver.Connector
	n *atomic.Int32
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c.n.Add(1)
	return c.Connector.Connect(ctx)
}

// TestWrapSQLite: an Outbox's and a receiver's handle on SQLite connect
// through the wrapper their options give, and work through it.
func TestWrapSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name string
		open func(path string, wrap func(driver.Connector) driver.Connector) (io.Closer, error)
		use  func(h io.Closer) error
	}{
		{"outbox", func(path string, wrap func(driver.Connector) driver.Connector) (io.Closer, error) {
			return system.Open(ctx, path, system.Options{Harness: system.Harness{WrapSQLite: wrap}})
		}, func(h io.Closer) error {
			_, err := h.(*system.Outbox).RecordApproval(ctx, "case-1", "Call back")
			return err
		}},
		{"receiver", func(path string, wrap func(driver.Connector) driver.Connector) (io.Closer, error) {
			return system.OpenCRMWith(ctx, path, system.CRMOptions{WrapSQLite: wrap})
		}, func(h io.Closer) error {
			_, err := h.(*system.CRM).Tasks(ctx)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			h, err := tc.open(filepath.Join(t.TempDir(), "db"), func(c driver.Connector) driver.Connector {
				return countingConnector{c, &n}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if err := tc.use(h); err != nil {
				t.Fatal(err)
			}
			if n.Load() == 0 {
				t.Fatal("the handle connected without its wrapper")
			}
		})
	}
}
