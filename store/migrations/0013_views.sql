-- 0013: views.
--
-- A view lives in the relation of tables, told apart by kind: so a name
-- is one object's in its namespace (the unique (namespace_id, name) holds
-- for both, and no race between a table and a view of one name can make
-- two), a view's location takes part in the no-overlap rule of locations,
-- a namespace holding a view is not empty, and a view commit is the same
-- compare-and-swap with its commit_log row. Privileges granted on a
-- table's name are the view's when the name is a view's.
ALTER TABLE tables ADD COLUMN kind text NOT NULL DEFAULT 'table'
    CHECK (kind IN ('table', 'view'));
