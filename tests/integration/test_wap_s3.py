"""Write-audit-publish on an s3:// warehouse, end to end, with every party
reaching the data only through what floe vends: an engine (PyIceberg, as a
principal that may write the table) writes a batch to a staged branch with
read-write credentials; the reference auditor (examples/auditor/auditor.py,
a real webhook process with no storage credentials of its own) loads the
table as a principal that may only read it and reads the branch's rows with
the credentials floe vends it; publish moves main. A second batch that
breaks an expectation is rejected by the auditor and main stays.

On moto with --s3-vended-credentials=sts (IAM checks on, so a request with
no or wrong credentials is refused): the auditor's credentials are
read-only, and the S3 server refuses a write with them. On versitygw with
static vending: the same run, the auditor reading with floe's own key (the
documented weaker mode, not scoped)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pyarrow as pa
import pytest
import requests
from botocore.exceptions import ClientError
from pyiceberg.catalog import load_catalog

from conftest import (
    TableHandle,
    _start_floe_on_fresh_db,
    _stop_and_check,
    assert_error,
    assert_ok_json,
    audit_events,
    client_token,
    free_port,
    make_client,
    register_hook,
)
from s3_servers import S3Server, VersityServer, s3_env
from test_vended_credentials import DELEGATION, floe_env, iam_server, s3_as
from test_wap_pyiceberg import (
    ARROW_SCHEMA,
    AUDITOR,
    BAD,
    EXPECTATIONS,
    FIRST,
    GOOD,
    SECRET,
    Auditor,
)

M = "/management/v1"


class VendedAuditor(Auditor):
    """The reference auditor loading tables from floe as CREDENTIAL's
    principal, with no AWS_* variable, no shared credentials file and no
    instance metadata: whatever it reads, it reads with what floe vends."""

    def __init__(self, workdir, expectations, secret, catalog_uri, credential):
        import json
        self.port = free_port()
        self.exp_path = workdir / "expectations.json"
        self.exp_path.write_text(json.dumps(expectations))
        self.log_path = workdir / "auditor.log"
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("FLOE_", "AUDITOR_", "AWS_"))}
        env.update(FLOE_AUDIT_SECRET=secret, AUDITOR_CATALOG_CREDENTIAL=credential,
                   AWS_SHARED_CREDENTIALS_FILE=str(workdir / "none"),
                   AWS_CONFIG_FILE=str(workdir / "none"), AWS_EC2_METADATA_DISABLED="true")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(AUDITOR), "--listen", f"127.0.0.1:{self.port}",
             "--expectations", str(self.exp_path), "--catalog-uri", catalog_uri],
            env=env, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}/audit"
        self._wait_ready()


@pytest.fixture
def no_aws_env(monkeypatch, tmp_path):
    """The test process (the engine) holds no storage credentials."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def catalog(f, credential):
    """PyIceberg as CREDENTIAL's principal; it asks for vended credentials
    (its default, said here as well)."""
    return load_catalog(f"wap-{uuid.uuid4().hex[:6]}", type="rest", uri=f.url,
                        credential=credential, **{"oauth2-server-uri": f"{f.url}/v1/oauth/tokens"},
                        **{"header.X-Iceberg-Access-Delegation": "vended-credentials"})


def rows_of(table, ref=None) -> list[dict]:
    scan = table.scan() if ref is None else table.scan().use_ref(ref)
    return sorted(scan.to_arrow().to_pylist(), key=lambda r: r["id"])


def setup_principals(f):
    """An engine that may write sales.* and an auditor that may only read
    it; returns their CLIENT_ID:SECRET."""
    for role, privileges in (("engines", ("TABLE_READ", "TABLE_WRITE")),
                             ("auditors", ("TABLE_READ",))):
        assert f.post(f"{M}/roles", json={"name": role}).status_code == 201
        for privilege in privileges:
            grant = {"privilege": privilege, "on": {"kind": "namespace", "namespace": ["sales"]}}
            r = f.post(f"{M}/roles/{role}/grants", json=grant)
            assert r.status_code == 201, r.text
    return (make_client(f, "etl-engine", roles=("engines",)),
            make_client(f, "quality-auditor", roles=("auditors",)))


def run_story(f, s3, tmp_path, read_only: bool):
    """The whole run on floe f; read_only: the auditor's credentials must
    be refused a write by the S3 server (sts)."""
    f.authenticate()
    admin = catalog(f, f.credential)
    admin.create_namespace("sales")
    admin.create_table("sales.orders", schema=ARROW_SCHEMA).append(
        pa.Table.from_pylist(FIRST, schema=ARROW_SCHEMA))
    engine_cred, auditor_cred = setup_principals(f)
    auditor = VendedAuditor(tmp_path, EXPECTATIONS, SECRET, f.url, auditor_cred)
    try:
        hook = register_hook(f, "reference-auditor", auditor.url, scope={"namespace": ["sales"]},
                             secret=SECRET, timeout_ms=60000)
        r = f.post("/v1/namespaces/sales/properties",
                   json={"updates": {"floe.wap.required": "true"}, "removals": []})
        assert r.status_code == 200, r.text
        t = TableHandle(f, ["sales"], "orders")
        main_before = t.metadata()["current-snapshot-id"]

        # 1. Stage; the engine writes the good batch to the run's branch.
        run = t.stage()
        engine = catalog(f, engine_cred)
        table = engine.load_table("sales.orders")
        assert table.io.properties.get("s3.access-key-id"), "the engine got no credentials"
        table.append(pa.Table.from_pylist(GOOD, schema=ARROW_SCHEMA), branch=run["branch"])
        staged = engine.load_table("sales.orders")
        branch_head = staged.metadata.refs[run["branch"]].snapshot_id
        assert staged.metadata.current_snapshot_id == main_before, "the branch write moved main"
        assert rows_of(staged, run["branch"]) == sorted(FIRST + GOOD, key=lambda r: r["id"])

        # 2. Publish: floe calls the auditor, which reads every row of the
        # branch's snapshot from S3 with its vended credentials, and passes.
        done = assert_ok_json(t.publish(run["id"]))
        assert done["state"] == "published", done
        assert done["published-snapshot-id"] == branch_head, done
        assert [(a["hook-id"], a["verdict"]) for a in done["audits"]] == [(hook["id"], "pass")]
        log = auditor.log()
        assert f"table=sales.orders snapshot={branch_head} status=200 verdict=pass " \
               f"rows={len(FIRST) + len(GOOD)}" in log, log
        main = catalog(f, auditor_cred).load_table("sales.orders")
        assert main.metadata.current_snapshot_id == branch_head
        assert rows_of(main) == sorted(FIRST + GOOD, key=lambda r: r["id"])

        # 3. A batch that breaks two expectations: rejected, main stays.
        run2 = t.stage()
        engine.load_table("sales.orders").append(pa.Table.from_pylist(BAD, schema=ARROW_SCHEMA),
                                                 branch=run2["branch"])
        bad_head = engine.load_table("sales.orders").metadata.refs[run2["branch"]].snapshot_id
        err = assert_error(t.publish(run2["id"]), 422, "AuditRejectedException")
        assert "amount_positive: 2 rows" in err["message"], err
        assert "known_currency: 1 row" in err["message"], err
        assert "status_domain" not in err["message"], err
        assert f"snapshot={bad_head} status=200 verdict=reject " \
               f"rows={len(FIRST) + len(GOOD) + len(BAD)}" in auditor.log(), auditor.log()
        assert t.metadata()["current-snapshot-id"] == branch_head
        assert rows_of(catalog(f, auditor_cred).load_table("sales.orders")) == \
            sorted(FIRST + GOOD, key=lambda r: r["id"])
        assert t.run(run2["id"])["state"] == "rejected"

        # What the auditor's principal is vended: floe keeps credentials
        # per table and principal, so these are the auditor's own.
        token = client_token(f, auditor_cred)
        r = requests.get(f"{f.url}/v1/namespaces/sales/tables/orders", timeout=30,
                         headers={**DELEGATION, "Authorization": f"Bearer {token}"})
        body = assert_ok_json(r)
        key = body["metadata"]["location"][len("s3://lake/"):] + "/data/auditor-was-here.parquet"
        cli = s3_as(s3, body["config"])
        cli.get_object(Bucket="lake", Key=body["metadata-location"][len("s3://lake/"):])
        if read_only:
            with pytest.raises(ClientError) as refused:
                cli.put_object(Bucket="lake", Key=key, Body=b"x")
            assert refused.value.response["Error"]["Code"] == "AccessDenied"
            with pytest.raises(ClientError) as refused:
                cli.delete_object(Bucket="lake", Key=body["metadata-location"][len("s3://lake/"):])
            assert refused.value.response["Error"]["Code"] == "AccessDenied"
            # The engine's are read-write: it wrote, and may write.
            wr = requests.get(f"{f.url}/v1/namespaces/sales/tables/orders/credentials",
                              timeout=30, headers={
                                  "Authorization": f"Bearer {client_token(f, engine_cred)}"})
            rw = assert_ok_json(wr)["storage-credentials"][0]["config"]
            assert rw["s3.access-key-id"] != body["config"]["s3.access-key-id"]
            s3_as(s3, rw).put_object(Bucket="lake", Key=key.replace("auditor", "engine"),
                                     Body=b"x")

        # The audit log has every step, by whom.
        events = audit_events(f, namespace="sales", table="orders")
        steps = {}
        for e in events:
            if e.get("run-id"):
                steps.setdefault(e["run-id"], []).append(e["event"])
        assert steps[run["id"]] == ["wap.staged", "wap.audit-started", "wap.hook-calling", "wap.hook-called",
                                    "wap.published"], steps
        assert steps[run2["id"]] == ["wap.staged", "wap.audit-started", "wap.hook-calling", "wap.hook-called",
                                     "wap.rejected"], steps
        by = {(e["run-id"], e["event"]): e for e in events if e.get("run-id")}
        assert by[(run["id"], "wap.audit-started")]["details"]["snapshot-id"] == branch_head
        called = by[(run["id"], "wap.hook-called")]["details"]
        assert (called["hook-name"], called["verdict"], called["http-status"]) == \
            ("reference-auditor", "pass", 200), called
        assert by[(run["id"], "wap.published")]["details"]["snapshot-id"] == branch_head
        assert by[(run["id"], "wap.published")]["details"]["previous-main-snapshot-id"] == \
            main_before
        called = by[(run2["id"], "wap.hook-called")]["details"]
        assert (called["verdict"], called["snapshot-id"]) == ("reject", bad_head), called
        assert called["reason"] == "amount_positive: 2 rows, known_currency: 1 row", called
        assert by[(run2["id"], "wap.rejected")]["details"]["reason"] == called["reason"]
        # Who did what: the admin staged and published, the engine wrote.
        assert all(e["principal"] == "admin" for e in by.values()), by
        for r in (t.run(run["id"]), t.run(run2["id"])):
            assert r["written-by"] == ["etl-engine"] and r["staged-by"] == "admin", r
        return events
    finally:
        auditor.stop()


def test_wap_on_s3_with_sts_vended_credentials(postgres, tmp_path, no_aws_env):
    s3 = iam_server()
    f = None
    try:
        warehouse = f"s3://lake/wh-{uuid.uuid4().hex[:8]}"
        f = _start_floe_on_fresh_db(postgres, env=floe_env(s3, warehouse, "sts",
                                                           FLOE_AUTH="floe"))
        run_story(f, s3, tmp_path, read_only=True)
    finally:
        if f is not None:
            _stop_and_check(f)
        s3.stop()


def test_wap_on_versitygw_with_static_vending(postgres, tmp_path, no_aws_env):
    s3 = VersityServer()
    f = None
    try:
        s3.client().create_bucket(Bucket="lake")
        warehouse = f"s3://lake/wh-{uuid.uuid4().hex[:8]}"
        f = _start_floe_on_fresh_db(postgres, env=s3_env(
            s3.url, warehouse, AWS_ACCESS_KEY_ID=s3.key, AWS_SECRET_ACCESS_KEY=s3.secret,
            FLOE_S3_VENDED_CREDENTIALS="static", FLOE_AUTH="floe"))
        run_story(f, s3, tmp_path, read_only=False)
    finally:
        if f is not None:
            _stop_and_check(f)
        s3.stop()


def test_the_auditor_fails_closed_when_floe_vends_nothing(postgres, tmp_path, no_aws_env):
    # Vending off: the load answers no credentials, and the auditor does
    # not fall back to whatever storage access its machine might have.
    s3 = S3Server()
    f = None
    try:
        s3.client().create_bucket(Bucket="lake")
        f = _start_floe_on_fresh_db(postgres, env=s3_env(
            s3.url, f"s3://lake/wh-{uuid.uuid4().hex[:8]}", FLOE_AUTH="floe"))
        f.authenticate()
        f.create_namespace(["sales"])
        t = TableHandle(f, ["sales"], "orders")
        t.create()
        main_head = t.add_snapshot()
        _, auditor_cred = setup_principals(f)
        auditor = VendedAuditor(tmp_path, EXPECTATIONS, SECRET, f.url, auditor_cred)
        try:
            register_hook(f, "reference-auditor", auditor.url, scope={"namespace": ["sales"]},
                          secret=SECRET, timeout_ms=60000)
            run = t.stage()
            t.add_snapshot(ref=run["branch"])
            err = assert_error(t.publish(run["id"]), 503, "AuditUnavailableException")
            assert "reference-auditor" in err["message"], err
            got = t.run(run["id"])
            assert got["state"] == "audit-failed" and got["audits"][0]["http-status"] == 500, got
            assert "floe answered no storage credentials for the table" in auditor.log()
            assert t.head() == main_head
        finally:
            auditor.stop()
    finally:
        if f is not None:
            _stop_and_check(f)
        s3.stop()
