-- 0025: a register finds the newest drop of a table by its uuid.
--
-- A table dropped while protected and then registered again from one of
-- its metadata files (its uuid) must not come back weaker than it left:
-- catalog/table.c compares the control the drop's audit event recorded
-- (table.dropped's details: table-uuid, controls) with the one the
-- register would give it. The audit log is the one record every drop
-- leaves, kept for an undrop or not, so the lookup reads it, by this
-- index of the drops alone.
CREATE INDEX audit_events_dropped_uuid_idx ON audit_events ((details->>'table-uuid'), id)
	WHERE event = 'table.dropped';
