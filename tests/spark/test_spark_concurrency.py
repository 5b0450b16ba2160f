"""Two Spark writers appending to one table at the same time: both land.

Each writer has its own Iceberg catalog client (its own table cache and
REST session), so their commits race at floe: the loser's requirement
(main's snapshot) no longer holds, floe answers 409, the Iceberg client
refreshes and retries.  Every batch must land exactly once, and floe must
never answer 5xx.

* two threads of this test's SparkSession, each through its own catalog
  name (``floe_a``, ``floe_b``) pointing at floe;
* a second Spark application in its own JVM (a subprocess) appending while
  this one does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time

from conftest import CATALOG, catalog_conf, spark_conf

BATCHES = 5
ROWS_PER_BATCH = 3


def batch_sql(table, writer, seq):
    values = ", ".join(f"('{writer}', {seq}, {k})" for k in range(ROWS_PER_BATCH))
    return f"INSERT INTO {table} VALUES {values}"


def expected_rows(writers):
    return sorted((w, s, k) for w in writers for s in range(BATCHES) for k in range(ROWS_PER_BATCH))


def check_landed(spark, t, writers, table, log):
    rows = sorted(tuple(r) for r in spark.table(t).collect())
    assert rows == expected_rows(writers)
    appends = spark.sql(
        f"SELECT s.operation FROM {t}.history h JOIN {t}.snapshots s ON h.snapshot_id = s.snapshot_id "
        f"WHERE h.is_current_ancestor").collect()
    assert [a["operation"] for a in appends].count("append") == BATCHES * len(writers)
    assert table.head("main") == spark.sql(f"SELECT snapshot_id FROM {t}.refs WHERE name = 'main'").first()[0]
    server_errors = [e for e in log.entries() if e[2] >= 500]
    assert not server_errors, "floe answered 5xx:\n" + "\n".join(e[3] for e in server_errors)
    return [e for e in log.entries() if e[2] == 409]


def test_two_catalog_clients_append_concurrently(spark, floe, ns, rest, access_log):
    for name in ("floe_a", "floe_b"):
        for k, v in catalog_conf(name, floe.url, floe.credential).items():
            spark.conf.set(k, v)
    t = f"{CATALOG}.{ns}.events"
    spark.sql(f"CREATE TABLE {t} (writer string, seq int, k int) USING iceberg")
    # Both clients load the table (and cache it) before the race starts.
    for name in ("floe_a", "floe_b"):
        assert spark.table(f"{name}.{ns}.events").count() == 0

    log = access_log()
    barrier = threading.Barrier(2)
    errors = []

    def writer(catalog):
        try:
            barrier.wait(30)
            for seq in range(BATCHES):
                spark.sql(batch_sql(f"{catalog}.{ns}.events", catalog, seq))
        except Exception as e:  # reported below
            errors.append(f"{catalog}: {e}"[:3000])

    threads = [threading.Thread(target=writer, args=(c,)) for c in ("floe_a", "floe_b")]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    assert not any(th.is_alive() for th in threads), "a writer did not finish"
    assert not errors, errors

    spark.sql(f"REFRESH TABLE {t}")
    conflicts = check_landed(spark, t, ["floe_a", "floe_b"], rest(ns, "events"), log)
    print(f"commit conflicts answered 409: {len(conflicts)}")


WRITER = textwrap.dedent("""
    import json, os, sys, time
    from pyspark.sql import SparkSession

    conf, table, warmup, go_file, batches, rows = json.loads(sys.argv[1])
    builder = SparkSession.builder
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    # Warm up on another table, so that this JVM's appends are as quick as the other's.
    spark.sql(f"INSERT INTO {warmup} VALUES ('app2', -1, -1)")
    spark.table(table).count()
    print("ready", flush=True)
    deadline = time.time() + 120
    while not os.path.exists(go_file):
        if time.time() > deadline:
            sys.exit("no go signal")
        time.sleep(0.02)
    for seq in range(batches):
        values = ", ".join(f"('app2', {seq}, {k})" for k in range(rows))
        spark.sql(f"INSERT INTO {table} VALUES {values}")
    print("done", flush=True)
    spark.stop()
""")


def test_two_spark_applications_append_concurrently(spark, floe, ns, rest, access_log, tmp_path):
    t = f"{CATALOG}.{ns}.clicks"
    spark.sql(f"CREATE TABLE {t} (writer string, seq int, k int) USING iceberg")
    spark.sql(f"CREATE TABLE {t}_warmup (writer string, seq int, k int) USING iceberg")
    assert spark.table(t).count() == 0

    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    go = tmp_path / "go"
    local = tmp_path / "app2"
    local.mkdir()
    conf = spark_conf(floe.url, local, floe.credential)
    conf["spark.app.name"] = "floe-spark-tests-app2"
    conf["spark.driver.memory"] = "1g"
    args = json.dumps([conf, t, f"{t}_warmup", str(go), BATCHES, ROWS_PER_BATCH])
    out = open(tmp_path / "app2.log", "w+")
    proc = subprocess.Popen([sys.executable, str(script), args], stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 180
        while "ready" not in (tmp_path / "app2.log").read_text():
            assert proc.poll() is None, f"the second application exited early:\n{(tmp_path / 'app2.log').read_text()[-4000:]}"
            assert time.monotonic() < deadline, "the second application did not start"
            time.sleep(0.1)
        log = access_log()
        go.write_text("go")
        for seq in range(BATCHES):
            spark.sql(batch_sql(t, "app1", seq))
        assert proc.wait(300) == 0, (tmp_path / "app2.log").read_text()[-4000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        out.close()

    spark.sql(f"REFRESH TABLE {t}")
    conflicts = check_landed(spark, t, ["app1", "app2"], rest(ns, "clicks"), log)
    print(f"commit conflicts answered 409: {len(conflicts)}")
