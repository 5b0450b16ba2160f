"""A release from Spark: three tables reach main together after one audit.

A Spark job writes a night's orders, their lines and the FX rates they are
priced in to one release branch; the reference auditor checks every table's
own expectations and the relations across them (every order line has its
order, every order's currency has a rate) and floe publishes all three in
one transaction. A second night with an orphan order line is rejected and
no table moves.
"""

from __future__ import annotations

import pytest

from conftest import CATALOG, it

AUDIT_SECRET = "spark-release-7c2e"

TABLES = {
    "orders": "id bigint, amount_eur double, currency string, status string",
    "order_lines": "line_id bigint, order_id bigint, sku string, qty int",
    "fx_rates": "currency string, rate double",
}
FIRST = {
    "orders": [(1, 120.0, "EUR", "OPEN"), (2, 75.5, "CHF", "SHIPPED")],
    "order_lines": [(10, 1, "A-1", 2), (11, 2, "B-7", 1)],
    "fx_rates": [("EUR", 1.0), ("CHF", 1.04)],
}
NIGHT_1 = {
    "orders": [(3, 19.99, "USD", "OPEN")],
    "order_lines": [(12, 3, "C-2", 4), (13, 3, "A-1", 1)],
    "fx_rates": [("USD", 0.92)],
}
NIGHT_2 = {
    "orders": [(4, 250.0, "EUR", "OPEN")],
    "order_lines": [(14, 4, "A-1", 1), (15, 77, "Z-9", 3)],  # order 77 does not exist
    "fx_rates": [("GBP", 1.17)],
}


def sql_value(v) -> str:
    if isinstance(v, str):
        return f"'{v}'"
    if isinstance(v, float):
        return f"{v!r}D"
    return str(v)


def insert(spark, table, rows):
    values = ", ".join("(" + ", ".join(sql_value(v) for v in r) + ")" for r in rows)
    spark.sql(f"INSERT INTO {table} VALUES {values}")


def rows_of(spark, table):
    return sorted(tuple(r) for r in spark.table(table).collect())


def expectations(ns: str) -> dict:
    return {
        f"{ns}.orders": {"amount_positive": "amount_eur > 0 OR status = 'CANCELLED'"},
        f"{ns}.order_lines": {"qty_positive": "qty > 0"},
        f"{ns}.fx_rates": {"rate_positive": "rate > 0"},
        "relations": [
            {"name": "line_has_order", "table": f"{ns}.order_lines", "columns": ["order_id"],
             "references": f"{ns}.orders", "referenced-columns": ["id"]},
            {"name": "currency_has_rate", "table": f"{ns}.orders", "columns": ["currency"],
             "references": f"{ns}.fx_rates"},
        ],
    }


@pytest.fixture
def spark_wap_branch(spark):
    """Sets spark.wap.branch for one test and unsets it after."""
    def set_branch(name):
        spark.conf.set("spark.wap.branch", name)
    yield set_branch
    spark.conf.unset("spark.wap.branch")


def test_a_spark_job_publishes_three_tables_as_one_audited_release(spark, ns, rest, floe, hooks,
                                                                  reference_auditor,
                                                                  spark_wap_branch):
    names = {t: f"{CATALOG}.{ns}.{t}" for t in TABLES}
    for t, cols in TABLES.items():
        spark.sql(f"CREATE TABLE {names[t]} ({cols}) USING iceberg "
                  "TBLPROPERTIES ('write.wap.enabled' = 'true')")
        insert(spark, names[t], FIRST[t])
    handles = {t: rest(ns, t) for t in TABLES}
    mains = {t: h.head("main") for t, h in handles.items()}

    auditor = reference_auditor(expectations(ns), AUDIT_SECRET)
    hooks(floe, "release-auditor", auditor.url, scope={"namespace": [ns]}, secret=AUDIT_SECRET,
          timeout_ms=60000)
    ident = [{"namespace": [ns], "name": t} for t in TABLES]

    # Night 1: one branch on all three tables; the job writes through spark.wap.branch.
    rel = it.assert_ok_json(floe.post("/v1/releases", json={"name": "night_1", "tables": ident}), 201)
    spark_wap_branch("night_1")
    for t in TABLES:
        insert(spark, names[t], NIGHT_1[t])
    spark.conf.unset("spark.wap.branch")
    for t in TABLES:
        assert rows_of(spark, names[t]) == sorted(FIRST[t]), f"{t}: the job wrote to main"
        assert handles[t].head("night_1") != mains[t], f"{t}: nothing was written to the branch"

    done = it.assert_ok_json(floe.post(f"/v1/releases/{rel['id']}/publish", json={}, timeout=120))
    assert done["state"] == "published", (done, auditor.log())
    assert [a["verdict"] for a in done["audits"]] == ["pass"], done["audits"]
    for t in TABLES:
        spark.sql(f"REFRESH TABLE {names[t]}")
        assert rows_of(spark, names[t]) == sorted(FIRST[t] + NIGHT_1[t]), t
        assert "night_1" not in handles[t].metadata()["refs"]
    mains = {t: h.head("main") for t, h in handles.items()}

    # Night 2: an order line whose order is not there. Rejected; no table moves.
    rel = it.assert_ok_json(floe.post("/v1/releases", json={"name": "night_2", "tables": ident}), 201)
    spark_wap_branch("night_2")
    for t in TABLES:
        insert(spark, names[t], NIGHT_2[t])
    spark.conf.unset("spark.wap.branch")
    err = it.assert_error(floe.post(f"/v1/releases/{rel['id']}/publish", json={}, timeout=120),
                          422, "AuditRejectedException")
    assert "line_has_order: 1 row of" in err["message"], (err, auditor.log())
    assert "currency_has_rate" not in err["message"], "EUR has its rate"
    got = it.assert_ok_json(floe.get(f"/v1/releases/{rel['id']}"))
    assert got["state"] == "rejected" and {m["state"] for m in got["tables"]} == {"rejected"}
    for t in TABLES:
        assert handles[t].head("main") == mains[t], f"{t} moved under a rejected release"
        spark.sql(f"REFRESH TABLE {names[t]}")
        assert rows_of(spark, names[t]) == sorted(FIRST[t] + NIGHT_1[t]), t
    # The rejected batch stays on its branch for inspection, then is abandoned.
    lines = spark.sql(f"SELECT order_id FROM {names['order_lines']} VERSION AS OF 'night_2'").collect()
    assert 77 in [r["order_id"] for r in lines]
    it.assert_ok_json(floe.delete(f"/v1/releases/{rel['id']}"))
    for t in TABLES:
        assert "night_2" not in handles[t].metadata()["refs"]
