package backend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// FileEmptier opens the lane's own connection to the SQLite file at path
// and prepares the statements that empty it back to what it holds now
// (see freshStatements).
func FileEmptier(ctx context.Context, path string) (*sql.DB, []*sql.Stmt, error) {
	// The connection's commits need survive nothing but this process.
	db, err := sql.Open("sqlite", path+"?_txlock=immediate&_pragma=synchronous(OFF)")
	if err != nil {
		return nil, nil, err
	}
	// One connection, never closed while the lane lives: the tables that
	// keep what the file held are its own (TEMP).
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	// Emptying the file would leave its pages on the free list, where the
	// next sequence's writes find room: a full database (pinned at its
	// size) would refuse only what outgrows every sequence before. With
	// incremental auto-vacuum, reset gives the pages back, and a full
	// database refuses what a new file would. The file is new: VACUUM
	// moves no row that a step observes.
	if _, err := db.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL; VACUUM"); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("setting up auto-vacuum: %w", err)
	}
	reset, err := freshStatements(ctx, db)
	if err != nil {
		for _, st := range reset {
			st.Close()
		}
		db.Close()
		return nil, nil, err
	}
	return db, reset, nil
}

// freshStatements copies what db's tables hold into temporary tables of
// its connection and prepares the statements that bring them back to it:
// every table emptied, and those that held rows (a CRM's identity, say)
// filled again. It knows no schema, so that it serves every design.
func freshStatements(ctx context.Context, db *sql.DB) ([]*sql.Stmt, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table'
		AND (name NOT LIKE 'sqlite\_%' ESCAPE '\' OR name = 'sqlite_sequence') ORDER BY name`)
	if err != nil {
		return nil, err
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return nil, err
		}
		tables = append(tables, t)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	var stmts []*sql.Stmt
	prepare := func(query string) error {
		st, err := db.PrepareContext(ctx, query)
		if err == nil {
			stmts = append(stmts, st)
		}
		return err
	}
	for _, t := range tables {
		if err := prepare("DELETE FROM main." + QuoteName(t)); err != nil {
			return stmts, err
		}
		var held bool
		if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM main."+QuoteName(t)+")").Scan(&held); err != nil {
			return stmts, err
		}
		if !held {
			continue
		}
		fresh := QuoteName("fresh " + t)
		if _, err := db.ExecContext(ctx, "CREATE TEMP TABLE "+fresh+" AS SELECT * FROM main."+QuoteName(t)); err != nil {
			return stmts, err
		}
		if err := prepare("INSERT INTO main." + QuoteName(t) + " SELECT * FROM temp." + fresh); err != nil {
			return stmts, err
		}
	}
	return stmts, nil
}

// QuoteName quotes a table's name for SQL.
func QuoteName(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
