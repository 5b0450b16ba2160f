-- 0004: canonical table locations and purges as tombstones.
--
-- tables.location is the comparison key of the no-overlap rule: from now
-- on it holds the canonical form (file:///path, no '.', empty segments or
-- trailing '/'); the metadata JSON keeps the location as the client sent
-- it. Rows written before are brought to that form here ('..' segments
-- were refused already).
UPDATE tables SET location = 'file://' || coalesce(nullif(rtrim(
    regexp_replace(
        regexp_replace(
            regexp_replace(location, '^file:(//localhost)?', '', 'i'),
            '/+', '/', 'g'),
        '(/\.)+(?=/|$)', '', 'g'),
    '/'), ''), '/')
WHERE location ~* '^(file:|/)';

-- A drop with purge moves the table's location here in the same
-- statement that deletes its row: the files belong to no name any more,
-- the location stays taken (the no-overlap rule counts these rows) until
-- the janitor has removed the files, and a table created under the same
-- name meanwhile gets a location of its own.
CREATE TABLE purges (
    id               bigserial PRIMARY KEY,
    location         text NOT NULL,       -- canonical, as tables.location
    table_uuid       uuid NOT NULL,
    namespace        text[] NOT NULL,
    table_name       text NOT NULL,
    dropped_at       timestamptz NOT NULL DEFAULT now(),
    attempts         integer NOT NULL DEFAULT 0,
    last_error       text,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    -- pending: waiting or being retried; failed: given up (an operator
    -- removes the cause and the row, or resets it to pending)
    state            text NOT NULL DEFAULT 'pending'
                     CHECK (state IN ('pending', 'failed'))
);
CREATE INDEX purges_due_idx ON purges (next_attempt_at) WHERE state = 'pending';

-- The janitor removes metrics reports past their retention.
CREATE INDEX metrics_reports_received_idx ON metrics_reports (received_at);
