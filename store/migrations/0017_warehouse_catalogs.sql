-- 0017: a catalog of its own for each named warehouse.
--
-- Every namespace belongs to one warehouse: '' is the default warehouse
-- (--warehouse), any other value the name of a warehouse of
-- --warehouses. Namespace levels are unique within a warehouse, so two
-- warehouses may each have a namespace "sales"; tables and views belong
-- to their namespace's warehouse through namespace_id, and so do the
-- grants, runs and purges that name them by id. Existing rows are the
-- default warehouse's, which keeps its catalog unchanged.
ALTER TABLE namespaces ADD COLUMN warehouse text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE namespaces DROP CONSTRAINT namespaces_levels_key;
ALTER TABLE namespaces ADD CONSTRAINT namespaces_warehouse_levels_key UNIQUE (warehouse, levels);
DROP INDEX namespaces_parent_idx;
CREATE INDEX namespaces_parent_idx ON namespaces (warehouse, parent_id, levels);
-- A child is in its parent's warehouse.
ALTER TABLE namespaces ADD CONSTRAINT namespaces_warehouse_id_key UNIQUE (warehouse, id);
ALTER TABLE namespaces ADD CONSTRAINT namespaces_parent_same_warehouse
    FOREIGN KEY (warehouse, parent_id) REFERENCES namespaces (warehouse, id);

-- A grant on the catalog is a grant on one warehouse's catalog (its
-- warehouse column); a grant on a namespace or table is in the
-- warehouse of what it names, and the column repeats it so a listing
-- can say which. ADMIN, granted on the catalog, is floe's whole
-- administration and holds in every warehouse.
ALTER TABLE grants ADD COLUMN warehouse text COLLATE "C" NOT NULL DEFAULT '';
DROP INDEX grants_unique_idx;
CREATE UNIQUE INDEX grants_unique_idx ON grants (role_id, privilege, object_kind, warehouse,
    coalesce(namespace_id, 0), coalesce(table_id, 0));

-- An audit hook watches one warehouse's catalog: its scope (a
-- namespace, a table, or NULL for the whole catalog) is that warehouse's.
ALTER TABLE audit_hooks ADD COLUMN warehouse text COLLATE "C" NOT NULL DEFAULT '';

-- The runs and tombstones keep the warehouse of their table, as they
-- keep its namespace and name, for the events and listings they make.
ALTER TABLE wap_runs ADD COLUMN warehouse text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE purges ADD COLUMN warehouse text COLLATE "C" NOT NULL DEFAULT '';

-- An audit event of a further warehouse names it in its details
-- ({"warehouse": NAME}), which the hash chain covers; the default
-- warehouse's events are as before. Each warehouse's audit log is read
-- through this index.
CREATE INDEX audit_events_warehouse_idx ON audit_events ((coalesce(details->>'warehouse', '')), id);
