package system_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/system"
)

// TestPostgresOpen: Open creates an app database in an empty schema and
// opens it again; it refuses, writing nothing, what is not one.
func TestPostgresOpen(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	if _, err := system.OpenReadOnly(ctx, url); !errors.Is(err, system.ErrNotFound) {
		t.Fatalf("read-only open of an empty schema: %v, want ErrNotFound", err)
	}
	app, err := system.Open(ctx, url, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.RecordApproval(ctx, "case-1", title); err != nil {
		t.Fatal(err)
	}
	app.Close()
	again, err := system.OpenReadOnly(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if s, err := again.Snapshot(ctx); err != nil || len(s.Outbox) != 1 || s.Outbox[0].State != system.Pending {
		t.Fatalf("reopened: %+v, %v; want the one pending row", s, err)
	}
	if _, err := again.RecordApproval(ctx, "case-2", title); !errors.Is(err, system.ErrReadOnly) {
		t.Errorf("approving through a read-only handle: %v, want ErrReadOnly", err)
	}

	foreign := pgtest.URL(t)
	pgExec(t, foreign, `CREATE SCHEMA `+schemaOf(foreign)+`; CREATE TABLE `+schemaOf(foreign)+`.orders (id int)`)
	newer := pgtest.URL(t)
	created, err := system.Open(ctx, newer, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	created.Close()
	pgExec(t, newer, `UPDATE `+schemaOf(newer)+`.handoff_version SET version = 99`)
	for _, tt := range []struct {
		name, url string
		want      error
	}{
		{"another application's tables", foreign, system.ErrWrongDatabase},
		{"a newer handoff's schema", newer, system.ErrNewerSchema},
		{"a schema name that needs quoting", strings.Replace(url, "schema=", "schema=Orders%3B", 1), system.ErrInvalidInput},
		{"a URL that does not parse", "postgres://%zz", system.ErrInvalidInput},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := system.Open(ctx, tt.url, system.Options{}); !errors.Is(err, tt.want) {
				t.Errorf("Open: %v, want %v", err, tt.want)
			}
		})
	}
	var tables []string
	rows := query(t, foreign, `SELECT table_name FROM information_schema.tables WHERE table_schema = '`+schemaOf(foreign)+`'`)
	for _, r := range rows {
		tables = append(tables, r[0])
	}
	if fmt.Sprint(tables) != "[orders]" {
		t.Errorf("the refused schema now holds %v, want only [orders]", tables)
	}
}

// schemaOf is the schema parameter of a pgtest URL.
func schemaOf(url string) string { return url[strings.LastIndex(url, "schema=")+len("schema="):] }

// pgExec runs sql on the server of url, outside any handoff handle.
func pgExec(t *testing.T, url, sql string) {
	t.Helper()
	query(t, url, sql)
}

// query runs sql on the server of url and returns its rows as text.
func query(t *testing.T, url, sql string) [][]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url[:strings.LastIndex(url, "schema=")-1])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		var r []string
		for _, v := range vals {
			r = append(r, fmt.Sprint(v))
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
