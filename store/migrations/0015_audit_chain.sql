-- 0015: the tamper-evident audit trail.
--
-- Every audit event gets a place in one hash chain: audit_chain row n
-- holds SHA-256(hash of row n-1 || the event's canonical form), the first
-- row chained to 32 zero bytes. The row is written in the transaction
-- that writes the event, at its commit (a deferred constraint trigger), so
-- the chain's order is the order transactions commit in and the lock on
-- the head is held only for the instant of the commit, after every other
-- lock the transaction takes.
--
-- The canonical form (trail/chain.c computes the same bytes to verify):
-- "floe-audit-event/1\n", then each field as "<byte length>:<bytes>\n",
-- or "-\n" for a NULL, in this order: position, id, at (UTC,
-- YYYY-MM-DDTHH:MI:SS.ffffffZ), event, principal, client id, request id,
-- namespace (levels joined by U+001F), table, run id, details (the jsonb
-- text).
--
-- audit_chain is append-only like audit_events, and floe's runtime role
-- may only read it and its head (0016): the chain is written by
-- audit_chain_link, which runs as the owner.

CREATE TABLE audit_chain (
    position  bigint PRIMARY KEY,
    event_id  bigint NOT NULL UNIQUE,
    hash      bytea NOT NULL CHECK (octet_length(hash) = 32)
);

CREATE TABLE audit_chain_head (
    only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    position  bigint NOT NULL,
    hash      bytea NOT NULL CHECK (octet_length(hash) = 32)
);
INSERT INTO audit_chain_head VALUES (true, 0, decode(repeat('00', 32), 'hex'));

CREATE FUNCTION audit_field(v text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN v IS NULL THEN '-'
                ELSE octet_length(convert_to(v, 'UTF8'))::text || ':' || v END || E'\n'
$$;

CREATE FUNCTION audit_canonical(pos bigint, e audit_events) RETURNS bytea
LANGUAGE sql STABLE AS $$
    SELECT convert_to('floe-audit-event/1' || E'\n'
        || audit_field(pos::text)
        || audit_field(e.id::text)
        || audit_field(to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
        || audit_field(e.event)
        || audit_field(e.principal)
        || audit_field(e.client_id)
        || audit_field(e.request_id)
        || audit_field(array_to_string(e.namespace, E'\x1f'))
        || audit_field(e.table_name)
        || audit_field(e.run_id::text)
        || audit_field(e.details::text), 'UTF8')
$$;

-- Links one event into the chain (the head row serialises the writers).
CREATE FUNCTION audit_chain_link() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    head audit_chain_head%ROWTYPE;
    next_hash bytea;
BEGIN
    SELECT * INTO head FROM audit_chain_head FOR UPDATE;
    next_hash := sha256(head.hash || audit_canonical(head.position + 1, NEW));
    INSERT INTO audit_chain (position, event_id, hash)
        VALUES (head.position + 1, NEW.id, next_hash);
    UPDATE audit_chain_head SET position = head.position + 1, hash = next_hash;
    RETURN NULL;
END;
$$;

-- The events written before this migration, in the order the log serves
-- them.
DO $$
DECLARE
    e audit_events%ROWTYPE;
    pos bigint := 0;
    h bytea := decode(repeat('00', 32), 'hex');
BEGIN
    FOR e IN SELECT * FROM audit_events ORDER BY xid, id LOOP
        pos := pos + 1;
        h := sha256(h || audit_canonical(pos, e));
        INSERT INTO audit_chain (position, event_id, hash) VALUES (pos, e.id, h);
    END LOOP;
    UPDATE audit_chain_head SET position = pos, hash = h;
END;
$$;

CREATE CONSTRAINT TRIGGER audit_events_chain
    AFTER INSERT ON audit_events
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION audit_chain_link();

CREATE TRIGGER audit_chain_append_only
    BEFORE UPDATE OR DELETE ON audit_chain
    FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change();
CREATE TRIGGER audit_chain_no_truncate
    BEFORE TRUNCATE ON audit_chain
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_refuse_change();
