-- 0003: audit hooks, write-audit-publish runs and the append-only audit log.

CREATE TABLE audit_hooks (
    id               uuid PRIMARY KEY,
    name             text NOT NULL,
    url              text NOT NULL,
    secret           text,
    scope_namespace  text[],   -- NULL: every table
    scope_table      text,     -- with scope_namespace: one table
    timeout_ms       integer NOT NULL DEFAULT 10000,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (scope_table IS NULL OR scope_namespace IS NOT NULL)
);

CREATE TABLE wap_runs (
    id                     uuid PRIMARY KEY,
    seq                    bigserial UNIQUE,  -- listing order
    table_uuid             uuid NOT NULL,
    namespace              text[] NOT NULL,
    table_name             text NOT NULL,
    branch                 text NOT NULL,
    state                  text NOT NULL CHECK (state IN ('staged', 'auditing',
                               'published', 'rejected', 'audit-failed', 'abandoned')),
    base_snapshot_id       bigint,
    audited_snapshot_id    bigint,
    published_snapshot_id  bigint,
    audits                 jsonb NOT NULL DEFAULT '[]'::jsonb,
    -- while auditing: when the audit must be over (the longest hook
    -- timeout and a margin); past it, the floe that audited is gone
    lease_until            timestamptz,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX wap_runs_table_idx ON wap_runs (table_uuid, seq);

-- The audit log: rows are only ever added. The trigger makes UPDATE,
-- DELETE and TRUNCATE fail for every role, the table owner included.
CREATE TABLE audit_events (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    event       text NOT NULL,
    principal   text NOT NULL DEFAULT 'anonymous',
    request_id  text,
    namespace   text[],
    table_name  text,
    run_id      uuid,
    details     jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_events_run_idx ON audit_events (run_id, id);
CREATE INDEX audit_events_at_idx ON audit_events (at);

CREATE FUNCTION audit_events_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER audit_events_append_only
    BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change();
CREATE TRIGGER audit_events_no_truncate
    BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_refuse_change();
