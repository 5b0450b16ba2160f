-- 0016: signed checkpoints of the audit chain (0015).
--
-- A checkpoint records a position of the chain and its hash with a
-- signature by a key that is not in the database (--audit-signing-key);
-- with them, a chain recomputed after an edit no longer matches. The
-- relation is append-only like audit_events; floe's runtime role may add
-- checkpoints and read them, and may only read the chain.

CREATE TABLE audit_checkpoints (
    id         bigserial PRIMARY KEY,
    position   bigint NOT NULL,
    hash       bytea NOT NULL CHECK (octet_length(hash) = 32),
    signed_at  text NOT NULL,
    key_id     text NOT NULL,
    signature  bytea NOT NULL,
    UNIQUE (position, key_id)
);

CREATE TRIGGER audit_checkpoints_append_only
    BEFORE UPDATE OR DELETE ON audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change();
CREATE TRIGGER audit_checkpoints_no_truncate
    BEFORE TRUNCATE ON audit_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_refuse_change();

-- The runtime role: as before, and on the trail only SELECT (and INSERT
-- of checkpoints, which it signs).
CREATE OR REPLACE FUNCTION floe_grant_runtime(runtime name) RETURNS void
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
    EXECUTE format('REVOKE ALL ON audit_chain, audit_chain_head FROM %I', runtime);
    EXECUTE format('GRANT SELECT ON audit_chain, audit_chain_head TO %I', runtime);
    EXECUTE format('REVOKE ALL ON audit_checkpoints FROM %I', runtime);
    EXECUTE format('GRANT INSERT, SELECT ON audit_checkpoints TO %I', runtime);
    EXECUTE format('REVOKE ALL ON SEQUENCE audit_checkpoints_id_seq FROM %I', runtime);
    EXECUTE format('GRANT USAGE ON SEQUENCE audit_checkpoints_id_seq TO %I', runtime);
    EXECUTE format('REVOKE ALL ON floe_schema_version FROM %I', runtime);
    EXECUTE format('GRANT SELECT ON floe_schema_version TO %I', runtime);
END;
$$;
REVOKE ALL ON FUNCTION floe_grant_runtime(name) FROM PUBLIC;
