-- Version 1 of the SQLite app database: approvals and their outbox rows.
-- A new file runs every step from this one, in one transaction.
	CREATE TABLE approvals (
		key     TEXT PRIMARY KEY,
		case_id TEXT NOT NULL,
		title   TEXT NOT NULL,
		payload TEXT NOT NULL
	) STRICT;
	CREATE TABLE outbox (
		seq        INTEGER PRIMARY KEY,
		key        TEXT NOT NULL UNIQUE REFERENCES approvals (key),
		state      TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'blocked')),
		attempts   INTEGER NOT NULL CHECK (attempts >= 0),
		remote_id  INTEGER CHECK ((state = 'sent') = (remote_id IS NOT NULL)),
		last_error TEXT CHECK (last_error IN ('transient', 'conflict', 'budget-exhausted'))
	) STRICT;
	CREATE INDEX outbox_pending ON outbox (seq) WHERE state = 'pending';
