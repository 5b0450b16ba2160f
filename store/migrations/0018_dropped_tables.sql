-- 0018: tables dropped without purge are kept for a while, to be undropped.
--
-- A drop without purge leaves the files where they are; the row moves
-- here in the same statement that deletes it from tables, with its
-- metadata as it was, so an undrop within the retention
-- (--undrop-retention-seconds) puts back exactly that table: the same id
-- (its commit log goes on), uuid, location and current metadata. The
-- janitor removes rows past the retention. A kept table does not hold its
-- name or its location: a table created there meanwhile wins, and the
-- undrop is refused.
CREATE TABLE dropped_tables (
    id                 bigint PRIMARY KEY,  -- the row's id in tables
    warehouse          text COLLATE "C" NOT NULL DEFAULT '',
    namespace          text[] COLLATE "C" NOT NULL,
    table_name         text COLLATE "C" NOT NULL,
    table_uuid         uuid NOT NULL,
    location           text NOT NULL,
    metadata_location  text NOT NULL,
    metadata           text NOT NULL,
    refs_metadata      text,
    version            bigint NOT NULL,
    created_at         timestamptz NOT NULL,
    dropped_at         timestamptz NOT NULL DEFAULT now(),
    dropped_by         text NOT NULL DEFAULT 'anonymous'
);
ALTER TABLE dropped_tables ALTER COLUMN metadata SET COMPRESSION lz4;
ALTER TABLE dropped_tables ALTER COLUMN refs_metadata SET COMPRESSION lz4;
CREATE INDEX dropped_tables_name_idx
    ON dropped_tables (warehouse, namespace, table_name, dropped_at DESC);
CREATE INDEX dropped_tables_age_idx ON dropped_tables (dropped_at);
