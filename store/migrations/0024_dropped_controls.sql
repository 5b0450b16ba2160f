-- 0024: a table kept for an undrop remembers the control it had.
--
-- A table's effective control (catalog/effective.h) is what of the
-- audited-publish control is in force for it: each control property
-- (floe.wap.required, floe.wap.separation-of-duties,
-- floe.wap.release-required) set on the table or on a namespace above it,
-- and the audit hooks in scope. A drop without purge records it here, in
-- the statement's transaction, so that an undrop can refuse to bring the
-- table back weaker than it left (its namespace dropped and created again
-- without the property meanwhile, an auditor deleted), outside
-- POST /v1/controls/undrop. The form is
--   {"<property>": "the table" | "namespace <a.b>", ..., "hooks": [{"id", "name"}]}
-- with only the properties in force. NULL (a row a floe from before this
-- migration kept) cannot be decided, and an undrop of it needs the
-- control route.
ALTER TABLE dropped_tables ADD COLUMN controls jsonb;

-- The rows kept before this migration: their control as it is now, the
-- best that can be known of it.
UPDATE dropped_tables d SET controls = c.controls
FROM (
    SELECT d2.id,
        coalesce((SELECT jsonb_object_agg(p.name, w.shown)
                  FROM (VALUES ('floe.wap.required'), ('floe.wap.separation-of-duties'),
                               ('floe.wap.release-required')) AS p(name)
                  CROSS JOIN LATERAL (
                      SELECT CASE
                          WHEN lower(d2.metadata::jsonb->'properties'->>p.name) = 'true'
                          THEN 'the table'
                          ELSE (SELECT 'namespace ' || array_to_string(n.levels, '.')
                                FROM namespaces n
                                WHERE n.warehouse = d2.warehouse
                                  AND cardinality(n.levels) <= cardinality(d2.namespace)
                                  AND n.levels = d2.namespace[1:cardinality(n.levels)]
                                  AND lower(n.properties->>p.name) = 'true'
                                ORDER BY cardinality(n.levels) LIMIT 1)
                      END AS shown) w
                  WHERE w.shown IS NOT NULL), '{}'::jsonb)
        || jsonb_build_object('hooks', coalesce(
            (SELECT jsonb_agg(jsonb_build_object('id', h.id::text, 'name', h.name)
                              ORDER BY h.id::text COLLATE "C")
             FROM audit_hooks h
             WHERE h.warehouse = d2.warehouse
               AND (h.scope_namespace IS NULL
                    OR (h.scope_table IS NULL
                        AND cardinality(h.scope_namespace) <= cardinality(d2.namespace)
                        AND h.scope_namespace::text[] COLLATE "C"
                            = d2.namespace[1:cardinality(h.scope_namespace)])
                    OR (h.scope_table = d2.table_name
                        AND h.scope_namespace::text[] COLLATE "C" = d2.namespace))),
            '[]'::jsonb)) AS controls
    FROM dropped_tables d2
) c
WHERE c.id = d.id AND d.controls IS NULL;
