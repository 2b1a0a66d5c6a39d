-- Version 2 to 3: an index of the blocked rows, in insertion order with
-- their last error, as outbox_pending is of the pending ones: counting
-- the rows by state and listing the blocked ones then costs what there
-- is of them, not the whole outbox (see Outbox.Gauges and Outbox.Page).
	CREATE INDEX outbox_blocked ON outbox (seq, last_error) WHERE state = 'blocked';
