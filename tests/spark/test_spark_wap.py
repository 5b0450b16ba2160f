"""Write-audit-publish from Spark: the SOX "audited publish" control.

First the exercise as a data engineer solves it in Spark SQL alone
(examples/spark_wap/solution.py: branch, insert into the branch, audit,
fast_forward, drop the branch), with a good and a bad batch.  Then the same
story through floe: Spark writes the staging branch, floe adopts it as a
write-audit-publish run and publishes it only after its audit hooks passed;
with ``floe.wap.required=true`` on the namespace, Spark's own ways of moving
main (INSERT INTO main, CALL fast_forward) are refused with 403.

Expected rows are computed here in plain Python, independently of Spark.
"""

from __future__ import annotations

import json

import pytest
from solution import write_audit_publish

from conftest import CATALOG, catalog_conf, it

AUDIT_SECRET = "spark-sox-control-4b1d"

COLUMNS = "id bigint, amount_eur double, currency string, status string, order_ts timestamp"

FIRST = [
    (1, 120.0, "EUR", "OPEN", "2024-03-01 09:00:00"),
    (2, 75.5, "CHF", "SHIPPED", "2024-03-01 10:30:00"),
    (3, 0.0, "EUR", "CANCELLED", "2024-03-02 08:15:00"),
]
GOOD = [
    (4, 19.99, "EUR", "OPEN", "2024-03-03 11:00:00"),
    (5, 250.0, "CHF", "SHIPPED", "2024-03-03 12:00:00"),
]
BAD = [
    (6, -40.0, "EUR", "OPEN", "2024-03-04 09:00:00"),     # negative amount, not cancelled
    (7, 10.0, "USD", "OPEN", "2024-03-04 09:05:00"),      # unknown currency
]
GOOD_2 = [
    (8, 5.0, "EUR", "OPEN", "2024-03-05 07:00:00"),
]


def values_sql(rows) -> str:
    return "VALUES " + ", ".join(
        f"({i}, {a!r}D, '{c}', '{s}', TIMESTAMP '{ts}')" for i, a, c, s, ts in rows)


def as_tuples(df):
    return sorted(
        (r["id"], r["amount_eur"], r["currency"], r["status"], r["order_ts"].strftime("%Y-%m-%d %H:%M:%S"))
        for r in df.collect())


def quality_gate(df) -> bool:
    """The audit: ids present, amounts positive unless cancelled, EUR or CHF."""
    bad = df.filter("id IS NULL OR NOT (amount_eur > 0 OR status = 'CANCELLED') "
                    "OR currency IS NULL OR currency NOT IN ('EUR', 'CHF')")
    return bad.count() == 0


def create_orders(spark, ns, rows=FIRST) -> str:
    t = f"{CATALOG}.{ns}.orders"
    spark.sql(f"CREATE TABLE {t} ({COLUMNS}) USING iceberg")
    if rows:
        spark.sql(f"INSERT INTO {t} {values_sql(rows)}")
    return t


def branch_names(spark, t):
    return sorted(r["name"] for r in spark.sql(f"SELECT name FROM {t}.refs").collect())


def spark_ref_snapshot(spark, t, ref):
    rows = spark.sql(f"SELECT snapshot_id FROM {t}.refs WHERE name = '{ref}'").collect()
    return rows[0]["snapshot_id"] if rows else None


# --------------------------------------------------------------------------
# the exercise: write-audit-publish in Spark SQL alone


def test_write_audit_publish_good_then_bad_batch(spark, ns, rest):
    t = create_orders(spark, ns)
    expected = sorted(FIRST)
    seen = []

    def audit(df):
        seen.append(sorted(r["id"] for r in df.select("id").collect()))
        return quality_gate(df)

    # A good batch: the audit sees main's rows plus the batch, passes; main grows.
    result = write_audit_publish(spark, t, values_sql(GOOD), audit)
    expected = sorted(expected + GOOD)
    assert result == {"published": True, "main_count": len(expected), "branch_count": len(FIRST) + len(GOOD)}
    assert seen[-1] == [r[0] for r in sorted(FIRST + GOOD)], "the audit must see the branch's rows"
    assert as_tuples(spark.table(t)) == expected
    assert branch_names(spark, t) == ["main"], "the staging branch must be dropped"

    head_after_good = rest(ns, "orders").head("main")
    assert head_after_good == spark_ref_snapshot(spark, t, "main")

    # A bad batch: the audit sees the bad rows on the branch, fails; main is unchanged.
    result = write_audit_publish(spark, t, values_sql(BAD), audit, branch="audit")
    assert result == {"published": False, "main_count": len(expected),
                      "branch_count": len(expected) + len(BAD)}
    assert seen[-1] == sorted([r[0] for r in expected] + [r[0] for r in BAD])
    assert as_tuples(spark.table(t)) == expected
    assert branch_names(spark, t) == ["main"]
    table = rest(ns, "orders")
    assert table.head("main") == head_after_good, "a failed audit must not move main"
    assert "audit" not in table.metadata().get("refs", {})

    # Another good batch with another branch name still lands.
    result = write_audit_publish(spark, t, values_sql(GOOD_2), audit, branch="staging_2")
    expected = sorted(expected + GOOD_2)
    assert result == {"published": True, "main_count": len(expected), "branch_count": len(expected)}
    assert as_tuples(spark.table(t)) == expected

    # main's history: first load, good batch, second good batch (bad batch absent).
    main_history = spark.sql(
        f"SELECT h.snapshot_id, s.summary['added-records'] AS added FROM {t}.history h "
        f"JOIN {t}.snapshots s ON h.snapshot_id = s.snapshot_id WHERE h.is_current_ancestor "
        f"ORDER BY h.made_current_at").collect()
    assert [int(r["added"]) for r in main_history] == [len(FIRST), len(GOOD), len(GOOD_2)]


def test_write_audit_publish_with_the_exercise_catalog_name(spark, floe, rest):
    """The exercise names its catalog ``local`` (local.db.orders): floe serves it too."""
    for k, v in catalog_conf("local", floe.url, floe.credential).items():
        spark.conf.set(k, v)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS local.db")
    t = "local.db.orders"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE TABLE {t} ({COLUMNS}) USING iceberg")
    spark.sql(f"INSERT INTO {t} {values_sql(FIRST)}")

    assert write_audit_publish(spark, t, values_sql(GOOD), quality_gate) == \
        {"published": True, "main_count": len(FIRST + GOOD), "branch_count": len(FIRST + GOOD)}
    assert write_audit_publish(spark, t, values_sql(BAD), quality_gate) == \
        {"published": False, "main_count": len(FIRST + GOOD), "branch_count": len(FIRST + GOOD + BAD)}
    assert as_tuples(spark.table(t)) == sorted(FIRST + GOOD)
    # floe holds the same table under the same name; Spark's catalog "floe" sees it as well.
    assert rest("db", "orders").head("main") == spark_ref_snapshot(spark, t, "main")
    assert as_tuples(spark.table(f"{CATALOG}.db.orders")) == sorted(FIRST + GOOD)


def test_write_audit_publish_audit_error_drops_branch(spark, ns, rest):
    """An audit that raises leaves main alone and still drops the branch."""
    t = create_orders(spark, ns)

    def broken_audit(df):
        raise RuntimeError("quality service down")

    with pytest.raises(RuntimeError, match="quality service down"):
        write_audit_publish(spark, t, values_sql(GOOD), broken_audit)
    assert as_tuples(spark.table(t)) == sorted(FIRST)
    assert branch_names(spark, t) == ["main"]
    assert list(rest(ns, "orders").metadata()["refs"]) == ["main"]


# --------------------------------------------------------------------------
# the same story through floe: Spark writes the branch, floe audits and publishes


def test_floe_adopts_spark_branch_and_publishes_after_webhook_passes(spark, ns, rest, webhooks, hooks, floe):
    t = create_orders(spark, ns)
    table = rest(ns, "orders")
    main_before = table.head("main")

    receiver = webhooks(secret=AUDIT_SECRET)
    hooks(floe, "spark-quality", receiver.url, scope={"namespace": [ns]}, secret=AUDIT_SECRET)

    # Spark: the staging branch and the candidate rows on it.
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {t}.branch_audit {values_sql(GOOD)}")
    branch_head = spark_ref_snapshot(spark, t, "audit")
    assert as_tuples(spark.sql(f"SELECT * FROM {t} VERSION AS OF 'audit'")) == sorted(FIRST + GOOD)
    assert as_tuples(spark.table(t)) == sorted(FIRST)

    # floe: adopt the branch as it stands, then publish.
    run = table.stage(branch="audit", adopt=True)
    assert run["branch"] == "audit" and run["state"] == "staged", run
    r = table.publish(run["id"])
    body = it.assert_ok_json(r)
    assert body["state"] == "published", body
    assert body["published-snapshot-id"] == branch_head, body
    assert [a["verdict"] for a in body["audits"]] == ["pass"], body

    # The hook audited exactly the snapshot Spark wrote on the branch.
    [req] = receiver.wait_for(1)
    assert req.signature_valid, "floe must sign the delivery with the hook's secret"
    payload = req.json()
    assert payload["event"] == "wap.audit"
    assert payload["branch"] == "audit"
    assert payload["snapshot-id"] == branch_head
    assert payload["main-snapshot-id"] == main_before
    assert payload["table"] == {"namespace": [ns], "name": "orders"}

    # main is the audited snapshot; the branch is gone; Spark reads the rows.
    assert table.head("main") == branch_head
    spark.sql(f"REFRESH TABLE {t}")
    assert as_tuples(spark.table(t)) == sorted(FIRST + GOOD)
    assert branch_names(spark, t) == ["main"]
    assert spark_ref_snapshot(spark, t, "main") == branch_head


def test_floe_publish_with_reference_auditor_good_and_bad_batch(spark, ns, rest, hooks, floe,
                                                                reference_auditor):
    shipped = json.loads((it.REPO / "examples" / "auditor" / "expectations.json").read_text())
    expectations = {f"{ns}.orders": shipped["sales.orders"]}
    auditor = reference_auditor(expectations, AUDIT_SECRET)
    hooks(floe, "reference-auditor", auditor.url, scope={"namespace": [ns]}, secret=AUDIT_SECRET,
          timeout_ms=60000)

    t = create_orders(spark, ns)
    table = rest(ns, "orders")

    # Good batch: the auditor reads the Spark-written snapshot and passes it.
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {t}.branch_audit {values_sql(GOOD)}")
    run = table.stage(branch="audit", adopt=True)
    body = it.assert_ok_json(table.publish(run["id"]))
    assert body["state"] == "published", (body, auditor.log())
    spark.sql(f"REFRESH TABLE {t}")
    assert as_tuples(spark.table(t)) == sorted(FIRST + GOOD)
    published_head = table.head("main")

    # Bad batch: rejected with the auditor's reason; main keeps its rows; the branch stays.
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {t}.branch_audit {values_sql(BAD)}")
    bad_head = spark_ref_snapshot(spark, t, "audit")
    run = table.stage(branch="audit", adopt=True)
    err = it.assert_error(table.publish(run["id"]), 422, "AuditRejectedException")
    assert "amount_positive" in err["message"] and "known_currency" in err["message"], err
    state = table.run(run["id"])
    assert state["state"] == "rejected", state
    assert table.head("main") == published_head
    assert table.head("audit") == bad_head, "a rejected branch is kept for inspection"
    spark.sql(f"REFRESH TABLE {t}")
    assert as_tuples(spark.table(t)) == sorted(FIRST + GOOD)
    assert as_tuples(spark.sql(f"SELECT * FROM {t} VERSION AS OF 'audit'")) == sorted(FIRST + GOOD + BAD)

    # Abandon the run: floe drops the branch.
    r = floe.delete(table.run_url(run["id"]))
    assert r.status_code == 200, it.describe(r)
    spark.sql(f"REFRESH TABLE {t}")
    assert branch_names(spark, t) == ["main"]


def test_wap_required_refuses_spark_writes_to_main(spark, ns, rest, webhooks, hooks, floe, access_log):
    t = create_orders(spark, ns)
    table = rest(ns, "orders")
    main_before = table.head("main")

    spark.sql(f"ALTER NAMESPACE {CATALOG}.{ns} SET PROPERTIES ('floe.wap.required' = 'true')")
    props = {r[0]: r[1] for r in spark.sql(f"DESCRIBE NAMESPACE EXTENDED {CATALOG}.{ns}").collect()}
    assert "floe.wap.required" in props.get("Properties", ""), props

    table_path = rf"/v1/namespaces/{ns}/tables/orders$"

    # INSERT INTO main: the Spark job fails, floe answered 403.
    log = access_log()
    with pytest.raises(Exception) as exc:
        spark.sql(f"INSERT INTO {t} {values_sql(GOOD)}")
    assert "ForbiddenException" in str(exc.value) and "floe.wap.required" in str(exc.value), str(exc.value)[:2000]
    assert log.find("POST", table_path, 403), f"floe did not answer 403:\n{log.text()}"
    assert table.head("main") == main_before

    # The exercise's own flow: the branch write is allowed, CALL fast_forward is refused.
    log = access_log()
    with pytest.raises(Exception) as exc:
        write_audit_publish(spark, t, values_sql(GOOD), quality_gate)
    assert "ForbiddenException" in str(exc.value), str(exc.value)[:2000]
    assert log.find("POST", table_path, 403), f"floe did not answer 403:\n{log.text()}"
    assert table.head("main") == main_before
    assert list(table.metadata()["refs"]) == ["main"], "the solution drops its branch even on failure"

    # A plain CALL fast_forward after a branch write: refused too.
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {t}.branch_audit {values_sql(GOOD)}")
    branch_head = spark_ref_snapshot(spark, t, "audit")
    log = access_log()
    with pytest.raises(Exception) as exc:
        spark.sql(f"CALL {CATALOG}.system.fast_forward('{ns}.orders', 'main', 'audit')")
    assert "ForbiddenException" in str(exc.value), str(exc.value)[:2000]
    assert log.find("POST", table_path, 403), f"floe did not answer 403:\n{log.text()}"
    assert table.head("main") == main_before
    spark.sql(f"REFRESH TABLE {t}")
    assert as_tuples(spark.table(t)) == sorted(FIRST)

    # Without a hook an adopted run cannot be published (412); with one that passes, it lands.
    run = table.stage(branch="audit", adopt=True)
    it.assert_error(table.publish(run["id"]), 412, "NoAuditHookException")
    receiver = webhooks(secret=AUDIT_SECRET)
    hooks(floe, "spark-quality", receiver.url, scope={"namespace": [ns]}, secret=AUDIT_SECRET)
    body = it.assert_ok_json(table.publish(run["id"]))
    assert body["state"] == "published" and body["published-snapshot-id"] == branch_head, body
    assert table.head("main") == branch_head
    spark.sql(f"REFRESH TABLE {t}")
    assert as_tuples(spark.table(t)) == sorted(FIRST + GOOD)
    assert branch_names(spark, t) == ["main"]

    # Still allowed under the rule: property and schema changes, and writes to other branches.
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('data-steward' = 'sales-eng')")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN channel string")
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH scratch")
    spark.sql(f"INSERT INTO {t}.branch_scratch VALUES (99, 1.0D, 'EUR', 'OPEN', TIMESTAMP '2024-03-09 00:00:00', 'web')")
    meta = table.metadata()
    assert meta["properties"]["data-steward"] == "sales-eng"
    assert meta["refs"]["main"]["snapshot-id"] == branch_head
    assert spark.sql(f"SELECT count(*) FROM {t} VERSION AS OF 'scratch'").first()[0] == len(FIRST + GOOD) + 1
    assert spark.table(t).count() == len(FIRST + GOOD)
