-- Version 4 to 5: whether a pending row's wait is the receiver's retry
-- hint (1) or the backoff the worker drew (0), so that Outbox.Hasten
-- moves the backoffs an outage grew and keeps the waits the receiver
-- asked for. A row from before version 5 is taken for a backoff.
	ALTER TABLE outbox ADD COLUMN retry_hinted INTEGER NOT NULL DEFAULT 0 CHECK (retry_hinted IN (0, 1));
