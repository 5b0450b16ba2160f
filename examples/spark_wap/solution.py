"""Write-audit-publish with an Iceberg branch, in Spark SQL.

New rows reach a table's ``main`` only after they passed a quality gate on a
staging branch:

1. write: create (or reset) the staging branch at main's head and insert the
   candidate rows into it, never into main;
2. audit: read the branch's rows and hand them to ``audit_fn``;
3. publish: only when the audit passed, fast-forward main to the branch;
4. always drop the staging branch.

With floe as the catalog and ``floe.wap.required=true`` on the table or its
namespace, step 3 is refused (403): there main moves only through floe's own
``/wap/{id}/publish``, after floe's audit hooks passed (see README.md).
"""

from __future__ import annotations


def _split_ident(table_ident: str) -> tuple[str, str]:
    """``catalog.db.table`` -> (``catalog``, ``db.table``)."""
    catalog, sep, rest = table_ident.partition(".")
    if not sep or not rest:
        raise ValueError(f"table_ident must be catalog.namespace.table, got {table_ident!r}")
    return catalog, rest


def _count(spark, relation: str) -> int:
    return spark.sql(f"SELECT count(*) AS n FROM {relation}").first()["n"]


def write_audit_publish(spark, table_ident, insert_values_sql, audit_fn, branch="audit"):
    """Stage ``insert_values_sql`` on ``branch``, audit it, publish it if it passed.

    Returns ``{"published": bool, "main_count": int, "branch_count": int}``:
    whether main was fast-forwarded, main's row count after the flow, and the
    row count the branch held during the audit.
    """
    catalog, db_table = _split_ident(table_ident)
    t = table_ident
    branch_rel = f"{t}.branch_{branch}"

    # 1. Write: the branch starts at main's head; the rows go to the branch only.
    spark.sql(f"ALTER TABLE {t} CREATE OR REPLACE BRANCH {branch}")
    try:
        spark.sql(f"INSERT INTO {branch_rel} {insert_values_sql}")

        # 2. Audit the branch's snapshot (main does not hold the new rows yet).
        staged = spark.sql(f"SELECT * FROM {branch_rel}")
        branch_count = staged.count()
        passed = bool(audit_fn(staged))

        # 3. Publish only after a passing audit.
        if passed:
            spark.sql(f"CALL {catalog}.system.fast_forward('{db_table}', 'main', '{branch}')")
    finally:
        # 4. Always drop the staging branch.
        spark.sql(f"ALTER TABLE {t} DROP BRANCH IF EXISTS {branch}")

    return {"published": passed, "main_count": _count(spark, t), "branch_count": branch_count}
