"""Spark SQL views kept in floe: Iceberg's Spark runtime uses floe's view
routes once /v1/config advertises them. CREATE VIEW, SELECT through a view
over an Iceberg table, a view over another view, CREATE OR REPLACE VIEW (a
new view version), SHOW VIEWS, ALTER VIEW ... SET TBLPROPERTIES and DROP
VIEW, each checked against what floe stores."""

from __future__ import annotations

from conftest import CATALOG


def view_metadata(floe, ns, name):
    r = floe.get(f"/v1/namespaces/{ns}/views/{name}")
    assert r.status_code == 200, r.text
    return r.json()["metadata"]


def catalog_views(spark, ns):
    """SHOW VIEWS of the namespace, without the session's temporary views
    (other tests of the session make some; Spark lists them everywhere)."""
    rows = spark.sql(f"SHOW VIEWS IN {CATALOG}.{ns}").collect()
    return {r["viewName"] for r in rows if not r["isTemporary"]}


def test_views_through_spark_sql(spark, floe, ns):
    t = f"{CATALOG}.{ns}.orders"
    spark.sql(f"CREATE TABLE {t} (id bigint, amount int, region string) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (1, 10, 'eu'), (2, 20, 'us'), (3, 30, 'eu')")

    v = f"{CATALOG}.{ns}.eu_orders"
    spark.sql(f"CREATE VIEW {v} AS SELECT id, amount FROM {t} WHERE region = 'eu'")
    assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {v}").collect()) == [(1, 10), (3, 30)]
    m = view_metadata(floe, ns, "eu_orders")
    assert m["current-version-id"] == 1
    rep = m["versions"][0]["representations"][0]
    assert rep["dialect"] == "spark" and "region = 'eu'" in rep["sql"]
    assert [f["name"] for f in m["schemas"][0]["fields"]] == ["id", "amount"]

    # A view over the view.
    big = f"{CATALOG}.{ns}.big_eu_orders"
    spark.sql(f"CREATE VIEW {big} AS SELECT id FROM {v} WHERE amount > 15")
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {big}").collect()] == [(3,)]

    # CREATE OR REPLACE: a second version, the first kept in the history.
    spark.sql(f"CREATE OR REPLACE VIEW {v} AS SELECT id, amount FROM {t} WHERE region = 'us'")
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {v}").collect()] == [(2, 20)]
    m = view_metadata(floe, ns, "eu_orders")
    assert m["current-version-id"] == 2
    assert sorted(x["version-id"] for x in m["versions"]) == [1, 2]
    assert [e["version-id"] for e in m["version-log"]] == [1, 2]
    # The view over it follows the new definition.
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {big}").collect()] == [(2,)]

    assert catalog_views(spark, ns) == {"eu_orders", "big_eu_orders"}

    spark.sql(f"ALTER VIEW {v} SET TBLPROPERTIES ('team' = 'finance')")
    assert view_metadata(floe, ns, "eu_orders")["properties"]["team"] == "finance"

    spark.sql(f"DROP VIEW {big}")
    spark.sql(f"DROP VIEW {v}")
    assert floe.get(f"/v1/namespaces/{ns}/views/eu_orders").status_code == 404
    assert catalog_views(spark, ns) == set()
    # The table under them is untouched.
    assert spark.sql(f"SELECT count(*) FROM {t}").first()[0] == 3
