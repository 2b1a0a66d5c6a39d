-- Version 4 to 5: whether a pending row's wait is the receiver's retry
-- hint (see the SQLite schema's 005_retry_hint.sql).
	ALTER TABLE SCHEMA.outbox ADD COLUMN retry_hinted INTEGER NOT NULL DEFAULT 0 CHECK (retry_hinted IN (0, 1));
	UPDATE SCHEMA.handoff_version SET version = 5;
