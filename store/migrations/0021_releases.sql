-- 0021: releases, write-audit-publish over many tables at once.
--
-- A release is one staging branch name on every member table and one
-- audit of them all; its members are wap_runs rows that name it, each
-- with its own table, base and branch. The release holds the audit's
-- state and lease: while it is auditing, no member may be published or
-- abandoned on its own, and its publish moves every member's main in one
-- transaction or none.
CREATE TABLE releases (
    id           uuid PRIMARY KEY,
    seq          bigserial UNIQUE,      -- listing order
    warehouse    text COLLATE "C" NOT NULL DEFAULT '',
    branch       text NOT NULL,
    state        text NOT NULL CHECK (state IN ('staged', 'auditing', 'published',
                     'rejected', 'audit-failed', 'abandoned')),
    audits       jsonb NOT NULL DEFAULT '[]'::jsonb,
    lease_until  timestamptz,
    lease_owner  uuid,
    staged_by    text NOT NULL DEFAULT 'anonymous',
    published_by text,
    abandoned_by text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX releases_warehouse_idx ON releases (warehouse, seq);

ALTER TABLE wap_runs ADD COLUMN release_id uuid REFERENCES releases (id);
CREATE INDEX wap_runs_release_idx ON wap_runs (release_id) WHERE release_id IS NOT NULL;
