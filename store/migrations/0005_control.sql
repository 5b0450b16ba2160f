-- 0005: the audited-publish control without holes.
--
-- wap_runs.lease_owner fences an audit's lease: the floe that took the
-- lease writes the run's outcome only while it still holds it.
--
-- audit_events.xid is the transaction that wrote the event. An id is
-- drawn from its sequence before its transaction commits, so ids become
-- visible out of order; the audit log is served in (xid, id) order and
-- only up to the oldest transaction still running, a set that can no
-- longer grow, so a reader's cursor never skips an event that commits late.
ALTER TABLE wap_runs ADD COLUMN lease_owner uuid;

ALTER TABLE audit_events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX audit_events_xid_idx ON audit_events (xid, id);

-- The grants of floe's runtime role when migrations run as a separate
-- owner role: everything it needs on the catalog relations, but on the
-- audit log only INSERT and SELECT (and the id sequence's USAGE), so floe
-- itself cannot change, delete, truncate or un-trigger the log. Called by
-- the owner after every migration run; a no-op when the runtime role is
-- the owner.
CREATE FUNCTION floe_grant_runtime(runtime name) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF runtime = current_user THEN
        RETURN;
    END IF;
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO %I',
                   current_schema(), runtime);
    EXECUTE format('GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA %I TO %I',
                   current_schema(), runtime);
    EXECUTE format('REVOKE ALL ON audit_events FROM %I', runtime);
    EXECUTE format('GRANT INSERT, SELECT ON audit_events TO %I', runtime);
    EXECUTE format('REVOKE ALL ON SEQUENCE audit_events_id_seq FROM %I', runtime);
    EXECUTE format('GRANT USAGE ON SEQUENCE audit_events_id_seq TO %I', runtime);
    EXECUTE format('REVOKE ALL ON floe_schema_version FROM %I', runtime);
    EXECUTE format('GRANT SELECT ON floe_schema_version TO %I', runtime);
END;
$$;
REVOKE ALL ON FUNCTION floe_grant_runtime(name) FROM PUBLIC;
