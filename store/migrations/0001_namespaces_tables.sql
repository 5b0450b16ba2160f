-- 0001: namespaces, tables and the commit log.
--
-- Namespaces form a tree: parent_id points at the namespace one level up,
-- so a namespace cannot be dropped while children or tables reference it.
-- levels are compared byte-wise ("C") so listings are stable and paginate.

CREATE TABLE namespaces (
    id          bigserial PRIMARY KEY,
    parent_id   bigint REFERENCES namespaces (id),
    levels      text[] COLLATE "C" NOT NULL UNIQUE,
    properties  jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (cardinality(levels) >= 1),
    CHECK (jsonb_typeof(properties) = 'object')
);
CREATE INDEX namespaces_parent_idx ON namespaces (parent_id, levels);

CREATE TABLE tables (
    id                 bigserial PRIMARY KEY,
    namespace_id       bigint NOT NULL REFERENCES namespaces (id),
    name               text COLLATE "C" NOT NULL,
    table_uuid         uuid NOT NULL UNIQUE,
    location           text NOT NULL,     -- the table's base location
    metadata_location  text,
    metadata           text NOT NULL,
    -- the metadata with only the snapshots refs point at (loadTable with
    -- snapshots=refs); NULL when that is the whole metadata
    refs_metadata      text,
    version            bigint NOT NULL DEFAULT 0,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (namespace_id, name)
);
ALTER TABLE tables ALTER COLUMN metadata SET COMPRESSION lz4;
ALTER TABLE tables ALTER COLUMN refs_metadata SET COMPRESSION lz4;

-- One row per successful commit. table_id is the tables row the commit
-- went to (a table dropped and registered again is a new row, so its
-- versions start over without clashing with the old ones).
CREATE TABLE commit_log (
    id                 bigserial PRIMARY KEY,
    table_id           bigint NOT NULL,
    table_uuid         uuid NOT NULL,
    version            bigint NOT NULL,
    metadata_location  text NOT NULL,
    previous_location  text,
    principal          text NOT NULL DEFAULT 'anonymous',
    request_id         text,
    committed_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (table_id, version)
);
CREATE INDEX commit_log_uuid_idx ON commit_log (table_uuid, version);
