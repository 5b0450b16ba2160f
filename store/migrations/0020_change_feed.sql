-- 0020: the change feed's outbox.
--
-- Every change to the catalog becomes a row of change_events in the
-- transaction that makes it, written by triggers on the relations
-- themselves, so no path that changes a namespace, a table or a view can
-- leave it out: a create (an insert into tables), a commit (a new
-- metadata_location), a rename, a drop, a namespace's create, drop and
-- properties, and each write-audit-publish state change (the wap.*
-- events of the audit log). The feed is read in (xid, id) order up to
-- the oldest transaction still running, as the audit log is, so a reader
-- never passes an event that commits later.
CREATE TABLE change_events (
    id           bigserial PRIMARY KEY,
    xid          xid8 NOT NULL DEFAULT pg_current_xact_id(),
    occurred_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    warehouse    text COLLATE "C" NOT NULL DEFAULT '',
    operation    text NOT NULL,      -- create-table, update-view, x-floe-wap-published, ...
    object_type  text NOT NULL CHECK (object_type IN ('namespace', 'table', 'view')),
    namespace    text[] COLLATE "C" NOT NULL,
    name         text COLLATE "C",   -- NULL for a namespace
    object_uuid  uuid,
    principal    text,
    details      jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX change_events_xid_idx ON change_events (xid, id);
-- No index on occurred_at: the janitor's expiry walks ids (which rise with
-- time), and every index is paid for by each commit.

CREATE FUNCTION floe_feed_object() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r       tables;
    wh      text;
    levels  text[];
    op      text;
    who     text;
    det     jsonb := '{}'::jsonb;
BEGIN
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    IF TG_OP = 'INSERT' THEN
        op := 'create-' || r.kind;
    ELSIF TG_OP = 'DELETE' THEN
        op := 'drop-' || r.kind;
    ELSIF OLD.name IS DISTINCT FROM NEW.name OR OLD.namespace_id <> NEW.namespace_id THEN
        op := 'rename-' || r.kind;
        det := jsonb_build_object('source', jsonb_build_object(
            'namespace', to_jsonb((SELECT n.levels FROM namespaces n WHERE n.id = OLD.namespace_id)),
            'name', OLD.name));
    ELSIF OLD.metadata_location IS DISTINCT FROM NEW.metadata_location
          OR OLD.table_uuid IS DISTINCT FROM NEW.table_uuid THEN
        op := 'update-' || r.kind;
        det := jsonb_build_object('previous-metadata-location', OLD.metadata_location);
    ELSE
        RETURN NULL;
    END IF;
    -- A register (also over an existing table) says so for its transaction.
    IF r.kind = 'table' AND TG_OP <> 'DELETE' AND op NOT LIKE 'rename-%'
       AND coalesce(current_setting('floe.feed_operation', true), '') <> '' THEN
        op := current_setting('floe.feed_operation', true);
    END IF;
    SELECT n.warehouse, n.levels INTO wh, levels FROM namespaces n WHERE n.id = r.namespace_id;
    IF TG_OP <> 'DELETE' THEN
        SELECT c.principal INTO who FROM commit_log c
        WHERE c.table_id = r.id AND c.version = r.version;
    END IF;
    INSERT INTO change_events (warehouse, operation, object_type, namespace, name,
                               object_uuid, principal, details)
    VALUES (coalesce(wh, ''), op, r.kind, levels, r.name, r.table_uuid, who,
            det || jsonb_strip_nulls(jsonb_build_object('metadata-location', r.metadata_location,
                                                        'version', r.version)));
    RETURN NULL;
END $$;

-- After the statement's own CTEs: the commit_log row of an insert or a
-- swap written by the same statement is visible to the trigger.
CREATE TRIGGER tables_feed AFTER INSERT OR DELETE OR UPDATE OF
        metadata_location, table_uuid, name, namespace_id ON tables
    FOR EACH ROW EXECUTE FUNCTION floe_feed_object();

CREATE FUNCTION floe_feed_namespace() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r   namespaces;
    op  text;
BEGIN
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    IF TG_OP = 'INSERT' THEN
        op := 'create-namespace';
    ELSIF TG_OP = 'DELETE' THEN
        op := 'drop-namespace';
    ELSIF OLD.properties IS DISTINCT FROM NEW.properties THEN
        op := 'update-namespace-properties';
    ELSE
        RETURN NULL;
    END IF;
    INSERT INTO change_events (warehouse, operation, object_type, namespace)
    VALUES (r.warehouse, op, 'namespace', r.levels);
    RETURN NULL;
END $$;

CREATE TRIGGER namespaces_feed AFTER INSERT OR UPDATE OR DELETE ON namespaces
    FOR EACH ROW EXECUTE FUNCTION floe_feed_namespace();

-- Write-audit-publish state changes are audit events; each becomes a
-- custom operation of the feed (x-floe-wap-staged, ...-published, ...).
CREATE FUNCTION floe_feed_wap() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO change_events (warehouse, operation, object_type, namespace, name,
                               principal, details)
    VALUES (coalesce(NEW.details->>'warehouse', ''),
            'x-floe-' || replace(NEW.event, '.', '-'), 'table',
            coalesce(NEW.namespace, '{}'), NEW.table_name, NEW.principal,
            jsonb_strip_nulls(jsonb_build_object('run-id', NEW.run_id, 'details', NEW.details)));
    RETURN NULL;
END $$;

CREATE TRIGGER audit_events_feed AFTER INSERT ON audit_events
    FOR EACH ROW WHEN (NEW.event LIKE 'wap.%' AND NEW.table_name IS NOT NULL)
    EXECUTE FUNCTION floe_feed_wap();
