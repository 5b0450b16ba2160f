"""Spark on an s3:// warehouse, with no storage credentials of its own: it
reaches the table's objects only with what floe gives it, credentials from
STS (vended) or floe's signatures (remote signing).

The S3 server is moto's server mode with its IAM checks on (the set-up of
tests/integration/test_vended_credentials.py): every S3 request must be
signed by a key moto knows and allowed by that key's policies. floe runs
with authentication, ``--s3-vended-credentials=sts`` (moto's STS,
``AssumeRole`` of a role that may do anything in S3 for writers, of one
whose own policy only reads for readers) and ``--s3-remote-signing=on``.

Spark runs as an application of its own (tests/spark/spark_s3_app.py, a
process with a fresh JVM) whose environment holds no ``AWS_*`` variable and
whose home (``HOME`` and the JVM's ``user.home``) is an empty directory, so
no shared credentials file or profile can be found. What Spark is given,
per catalog (``spark.sql.catalog.<name>.*``):

* ``type=rest``, ``uri`` floe's, ``credential`` CLIENT_ID:SECRET with
  ``oauth2-server-uri`` floe's token endpoint (floe's own authentication);
* ``io-impl=org.apache.iceberg.aws.s3.S3FileIO`` (the jar
  iceberg-aws-bundle, from Maven Central through scripts/spark-deps.sh);
* ``header.X-Iceberg-Access-Delegation`` = ``vended-credentials`` or
  ``remote-signing``.

The S3 endpoint, path-style addressing and region come from floe's answer
(``s3.endpoint``, ``s3.path-style-access``, ``client.region`` in a table's
``config``), as do the keys or the signer endpoint. Only the catalog
``bare``, the control that asks floe for nothing, is given the endpoint,
path-style and region in its own settings, so that what it lacks is
credentials alone: its write must fail.

STS credentials expire; Iceberg refreshes them 5 minutes before, at the
``client.refresh-credentials-endpoint`` floe names. That comes 10 minutes
into floe's shortest lifetime (900 s), so the test has Iceberg's
``VendedCredentialsProvider``, built from the table's FileIO properties
as S3FileIO builds it, fetch credentials there at once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HERE, aws_bundle_jar, iceberg_jar, integration_module, it, spark_conf

vc = integration_module("test_vended_credentials")

M = "/management/v1"
BUCKET = "lake"


@pytest.fixture(scope="module")
def s3_floe(postgres):
    """moto (IAM checks on) and a floe vending STS credentials and signing;
    the namespaces ``sts`` and ``rs``, and the client ``spark-reader`` with
    TABLE_READ on both."""
    server = vc.iam_server()
    f = None
    try:
        f = vc.start(postgres, server, "sts", FLOE_AUTH="floe", FLOE_S3_REMOTE_SIGNING="on")
        f.authenticate()
        for ns in ("sts", "rs"):
            f.create_namespace([ns])
        assert f.post(f"{M}/roles", json={"name": "readers"}).status_code == 201
        for ns in ("sts", "rs"):
            grant = {"privilege": "TABLE_READ", "on": {"kind": "namespace", "namespace": [ns]}}
            assert f.post(f"{M}/roles/readers/grants", json=grant).status_code == 201
        f.reader = it.make_client(f, "spark-reader", roles=("readers",))
        f.s3 = server
        yield f
    finally:
        if f is not None:
            it._stop_and_check(f)
        server.stop()


def catalog(name: str, f, credential: str, delegation: str | None, **extra) -> dict:
    p = f"spark.sql.catalog.{name}"
    conf = {
        p: "org.apache.iceberg.spark.SparkCatalog",
        f"{p}.type": "rest",
        f"{p}.uri": f.url,
        f"{p}.credential": credential,
        f"{p}.oauth2-server-uri": f.url + "/v1/oauth/tokens",
        f"{p}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
    }
    if delegation is not None:
        conf[f"{p}.header.X-Iceberg-Access-Delegation"] = delegation
    conf.update({f"{p}.{k}": v for k, v in extra.items()})
    return conf


def clean_env(home: Path) -> dict:
    """The Spark application's environment: no AWS_* variable, an empty home."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "LANG": "C.UTF-8", "SPARK_LOCAL_IP": "127.0.0.1", "TMPDIR": str(home)}
    if os.environ.get("JAVA_HOME"):
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    assert not [k for k in env if k.upper().startswith("AWS")]
    return env


def run_spark(tmp_path: Path, conf: dict, steps: list[tuple[str, str]]) -> dict:
    """Runs the steps in a Spark application of its own; {step id: result}."""
    home = tmp_path / "home"
    home.mkdir()
    local = tmp_path / "spark"
    local.mkdir()
    base = {k: v for k, v in spark_conf("http://unused", local).items()
            if not k.startswith("spark.sql.catalog.")}
    base["spark.jars"] = f"{iceberg_jar()},{aws_bundle_jar()}"
    base["spark.app.name"] = "floe-spark-s3"
    base["spark.driver.memory"] = "1g"
    base["spark.driver.extraJavaOptions"] = f"-Dderby.system.home={local} -Duser.home={home}"
    base.update(conf)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"conf": base, "steps": [
        {"id": i, "refresh" if isinstance(s, list) else "sql": s} for i, s in steps]}))
    r = subprocess.run([sys.executable, str(HERE / "spark_s3_app.py"), str(plan)],
                       env=clean_env(home), cwd=tmp_path, capture_output=True, text=True,
                       timeout=900)
    results = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            doc = json.loads(line)
            results[doc["id"]] = doc
    assert r.returncode == 0 and len(results) == len(steps) + 1, \
        f"the Spark application exited with {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"
    return results


def rows(results: dict, step: str) -> list:
    got = results[step]
    assert "error" not in got, f"{step}: {got['error']}"
    return got["rows"]


def refused(results: dict, step: str) -> str:
    """The causes of a step's failure (the Java exceptions under Spark's)."""
    got = results[step]
    assert "error" in got, f"{step} was expected to fail, got rows {got.get('rows')}"
    return "\n".join(part.splitlines()[0] for part in got["error"].split(" | caused by "))


def table_objects(f, ns: str) -> tuple[list[str], list[str]]:
    """A table's data and metadata objects in the bucket; every object of
    the bucket lies in floe's warehouse."""
    wh = f.warehouse.removeprefix(f"s3://{BUCKET}/")
    keys = objects(f)
    assert all(k.startswith(f"{wh}/") for k in keys), sorted(keys)
    data = sorted(k for k in keys if k.startswith(f"{wh}/{ns}/orders/data/") and k.endswith(".parquet"))
    meta = sorted(k for k in keys if k.startswith(f"{wh}/{ns}/orders/metadata/"))
    return data, meta


def objects(f) -> set[str]:
    """The bucket's keys, listed with floe's own key (moto checks it)."""
    key_id, secret = f.s3.key
    cli = f.s3.client(key=key_id, secret=secret)
    out = set()
    for page in cli.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        out.update(o["Key"] for o in page.get("Contents", []))
    return out


@pytest.fixture(scope="module")
def run(s3_floe, tmp_path_factory):
    """One Spark application doing every step (a JVM starts once): the
    results by step, and floe's log lines written meanwhile."""
    f = s3_floe
    admin, reader = f.credential, f.reader
    s3 = {"s3.endpoint": f.s3.url, "s3.path-style-access": "true", "client.region": vc.REGION}
    conf = {
        **catalog("vended", f, admin, "vended-credentials"),
        **catalog("signed", f, admin, "remote-signing"),
        **catalog("reader", f, reader, "vended-credentials"),
        **catalog("reader_signed", f, reader, "remote-signing"),
        **catalog("bare", f, admin, None, **s3),
    }
    mark = len(f.log())
    results = run_spark(tmp_path_factory.mktemp("spark-s3"), conf, [
        # STS-vended credentials: create, write twice, read, rewrite.
        ("v_create", "CREATE TABLE vended.sts.orders (id BIGINT, city STRING) USING iceberg"),
        ("v_insert", "INSERT INTO vended.sts.orders VALUES (1, 'Oslo'), (2, 'Lima')"),
        ("v_insert2", "INSERT INTO vended.sts.orders VALUES (3, 'Pune')"),
        ("v_select", "SELECT id, city FROM vended.sts.orders ORDER BY id"),
        ("v_delete", "DELETE FROM vended.sts.orders WHERE id = 2"),
        ("v_refresh", ["vended", "sts.orders"]),
        # Remote signing: the same, every S3 request signed by floe.
        ("s_create", "CREATE TABLE signed.rs.orders (id BIGINT, city STRING) USING iceberg"),
        ("s_insert", "INSERT INTO signed.rs.orders VALUES (1, 'Oslo'), (2, 'Lima')"),
        ("s_insert2", "INSERT INTO signed.rs.orders VALUES (3, 'Pune')"),
        ("s_select", "SELECT id, city FROM signed.rs.orders ORDER BY id"),
        ("s_cross", "SELECT id, city FROM signed.sts.orders ORDER BY id"),
        # A reader: reads with read-only credentials; its write is refused by
        # S3 (vended) or by floe's signer (remote signing).
        ("r_select", "SELECT count(*) FROM reader.sts.orders"),
        ("r_insert", "INSERT INTO reader.sts.orders VALUES (9, 'Evil')"),
        ("rs_select", "SELECT count(*) FROM reader_signed.rs.orders"),
        ("rs_insert", "INSERT INTO reader_signed.rs.orders VALUES (9, 'Evil')"),
        # The control: asking floe for nothing, Spark has no way in.
        ("b_insert", "INSERT INTO bare.sts.orders VALUES (8, 'None')"),
        ("v_final", "SELECT id, city FROM vended.sts.orders ORDER BY id"),
        ("s_final", "SELECT id, city FROM signed.rs.orders ORDER BY id"),
    ])
    return results, f.log()[mark:]


def test_spark_has_no_storage_credentials_of_its_own(run, tmp_path_factory):
    results, _ = run
    env = results["environment"]
    assert env["python_aws"] == [] and env["jvm_aws"] == [] and env["jvm_aws_properties"] == [], env
    assert env["user_home"].endswith("/home") and not env["aws_dir"], env
    # The control: asking floe for nothing, the write finds no credentials
    # anywhere (AWS's default chain: properties, variables, profile files,
    # container and instance metadata).
    err = refused(results, "b_insert")
    assert "Unable to load credentials from any of the providers in the chain" in err, err


def test_spark_creates_writes_and_reads_with_sts_vended_credentials(run, s3_floe):
    results, log = run
    for step in ("v_create", "v_insert", "v_insert2", "v_delete"):
        rows(results, step)
    assert rows(results, "v_select") == [[1, "Oslo"], [2, "Lima"], [3, "Pune"]]
    assert rows(results, "v_final") == [[1, "Oslo"], [3, "Pune"]]
    # Spark asked for credentials when it created and loaded the table.
    assert re.search(r"\[access\] POST /v1/namespaces/sts/tables 200 ", log), log[-4000:]
    assert re.search(r"\[access\] GET /v1/namespaces/sts/tables/orders 200 ", log), log[-4000:]
    # The credentials expire (STS): Iceberg's S3FileIO would refresh them
    # at the endpoint floe named, its loadCredentials route.
    got = results["v_refresh"]
    assert "error" not in got, got["error"]
    assert got["endpoint"] == "v1/namespaces/sts/tables/orders/credentials", got
    assert got["provider"] == "org.apache.iceberg.aws.s3.VendedCredentialsProvider", got
    assert got["same-key"], got  # floe's cache: the same credentials again
    admin = re.escape(s3_floe.credential.split(":")[0])
    assert re.search(rf"\[access\] GET /v1/namespaces/sts/tables/orders/credentials 200 \S+ "
                     rf"principal={admin} ", log), log[-4000:]
    data, meta = table_objects(s3_floe, "sts")
    assert len(data) >= 3 and meta, (data, meta)
    # No credential reaches floe's log.
    assert s3_floe.s3.key[1] not in s3_floe.log()


def test_spark_creates_writes_and_reads_with_remote_signing(run, s3_floe):
    results, log = run
    for step in ("s_create", "s_insert", "s_insert2"):
        rows(results, step)
    assert rows(results, "s_select") == [[1, "Oslo"], [2, "Lima"], [3, "Pune"]]
    assert rows(results, "s_final") == [[1, "Oslo"], [2, "Lima"], [3, "Pune"]]
    # Signed by floe, and reading the other table the same way.
    assert rows(results, "s_cross") == [[1, "Oslo"], [3, "Pune"]]
    admin = re.escape(s3_floe.credential.split(":")[0])
    signed = re.findall(rf"\[access\] POST /v1/namespaces/rs/tables/orders/sign 200 \S+ "
                        rf"principal={admin} ", log)
    assert len(signed) >= 4, log[-4000:]
    data, meta = table_objects(s3_floe, "rs")
    assert len(data) >= 2 and meta, (data, meta)


def test_a_readers_spark_reads_and_its_write_is_refused(run, s3_floe):
    results, log = run
    assert rows(results, "r_select") == [[2]]
    assert rows(results, "rs_select") == [[3]]
    # Vended: read-only credentials (the role that only reads); S3 refuses
    # the data file's PUT.
    err = refused(results, "r_insert")
    assert "S3Exception: Access Denied (Service: S3, Status Code: 403" in err, err
    # Signed: floe's signer refuses to sign the PUT.
    err = refused(results, "rs_insert")
    assert ("ForbiddenException: Forbidden: Principal spark-reader lacks TABLE_WRITE "
            "on table rs.orders") in err, err
    assert re.search(r"\[access\] POST /v1/namespaces/rs/tables/orders/sign 403 \S+ "
                     r"principal=spark-reader ", log), log[-4000:]
    # Nothing was committed by the reader.
    assert not re.search(r"\[access\] POST /v1/namespaces/\w+/tables/orders 200 \S+ "
                         r"principal=spark-reader ", log), log[-4000:]
