-- Version 1 to 2: time, leases and fences for many workers, causes of
-- local failures, the bound CRM, the operators' audit log. SQLite cannot
-- change a column's CHECK in place: the outbox is made anew and its rows
-- copied; the times they did not keep are stamped after the step (see
-- kind.stamp). The last_error list is the LastError constants' (see
-- TestLastErrorChecks).
	CREATE TABLE outbox_v2 (
		seq              INTEGER PRIMARY KEY,
		key              TEXT NOT NULL UNIQUE REFERENCES approvals (key),
		state            TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'blocked')),
		attempts         INTEGER NOT NULL CHECK (attempts >= 0),
		remote_id        INTEGER CHECK ((state = 'sent') = (remote_id IS NOT NULL)),
		last_error       TEXT CHECK (last_error IN ('transient', 'conflict', 'budget-exhausted', 'deadline', 'retention-expired', 'rejected')
		                             OR last_error GLOB 'local: ?*'),
		created_at       INTEGER NOT NULL DEFAULT 0,
		next_attempt_at  INTEGER NOT NULL DEFAULT 0,
		first_claimed_at INTEGER NOT NULL DEFAULT 0,
		last_attempt_at  INTEGER NOT NULL DEFAULT 0,
		sent_at          INTEGER NOT NULL DEFAULT 0,
		lease_owner      TEXT CHECK (lease_owner IS NULL OR state = 'pending'),
		lease_until      INTEGER NOT NULL DEFAULT 0,
		fence            INTEGER NOT NULL DEFAULT 0
	) STRICT;
	INSERT INTO outbox_v2 (seq, key, state, attempts, remote_id, last_error)
		SELECT seq, key, state, attempts, remote_id, last_error FROM outbox;
	DROP TABLE outbox;
	ALTER TABLE outbox_v2 RENAME TO outbox;
	CREATE INDEX outbox_pending ON outbox (seq) WHERE state = 'pending';
	CREATE INDEX outbox_lease ON outbox (lease_owner) WHERE lease_owner IS NOT NULL;
	CREATE TABLE meta (
		name  TEXT PRIMARY KEY,
		value TEXT NOT NULL
	) STRICT;
	CREATE TABLE audit (
		seq    INTEGER PRIMARY KEY,
		at     INTEGER NOT NULL,
		actor  TEXT NOT NULL,
		action TEXT NOT NULL,
		key    TEXT NOT NULL,
		reason TEXT NOT NULL
	) STRICT;
