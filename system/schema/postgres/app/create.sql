-- A new PostgreSQL app database, at version 5, in the schema on the
-- search path: SQLite's latest schema in PostgreSQL's types, but for
-- approvals.title, which holds the title's UTF-8 bytes: a title may hold
-- NUL, which PostgreSQL's TEXT cannot (see statements.titleArg). The
-- last_error list is the LastError constants' (see TestLastErrorChecks).
	CREATE TABLE handoff_version (
		kind    TEXT NOT NULL,
		version INTEGER NOT NULL
	);
	CREATE TABLE approvals (
		seq     BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
		key     TEXT PRIMARY KEY,
		case_id TEXT NOT NULL,
		title   BYTEA NOT NULL,
		payload TEXT NOT NULL
	);
	CREATE TABLE outbox (
		seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		key              TEXT NOT NULL UNIQUE REFERENCES approvals (key),
		state            TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'blocked')),
		attempts         INTEGER NOT NULL CHECK (attempts >= 0),
		remote_id        BIGINT CHECK ((state = 'sent') = (remote_id IS NOT NULL)),
		last_error       TEXT CHECK (last_error IN ('transient', 'conflict', 'budget-exhausted', 'deadline', 'retention-expired', 'rejected')
		                             OR last_error LIKE 'local: _%'),
		created_at       BIGINT NOT NULL DEFAULT 0,
		next_attempt_at  BIGINT NOT NULL DEFAULT 0,
		first_claimed_at BIGINT NOT NULL DEFAULT 0,
		last_attempt_at  BIGINT NOT NULL DEFAULT 0,
		sent_at          BIGINT NOT NULL DEFAULT 0,
		lease_owner      TEXT CHECK (lease_owner IS NULL OR state = 'pending'),
		lease_until      BIGINT NOT NULL DEFAULT 0,
		fence            BIGINT NOT NULL DEFAULT 0,
		retry_hinted     INTEGER NOT NULL DEFAULT 0 CHECK (retry_hinted IN (0, 1))
	);
	CREATE INDEX outbox_pending ON outbox (seq) WHERE state = 'pending';
	CREATE INDEX outbox_lease ON outbox (lease_owner) WHERE lease_owner IS NOT NULL;
	CREATE INDEX outbox_blocked ON outbox (seq, last_error) WHERE state = 'blocked';
	CREATE TABLE meta (
		name  TEXT PRIMARY KEY,
		value TEXT NOT NULL
	);
	CREATE TABLE audit (
		seq    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		at     BIGINT NOT NULL,
		actor  TEXT NOT NULL,
		action TEXT NOT NULL,
		key    TEXT NOT NULL,
		reason TEXT NOT NULL
	);
	CREATE TABLE history (
		seq    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		at     BIGINT NOT NULL,
		key    TEXT NOT NULL,
		actor  TEXT NOT NULL,
		event  TEXT NOT NULL,
		detail TEXT NOT NULL
	);
	CREATE INDEX history_key ON history (key, seq);
	INSERT INTO handoff_version (kind, version) VALUES ('app', 5);
