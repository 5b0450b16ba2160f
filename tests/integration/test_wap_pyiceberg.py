"""The SOX "audited publish" story through floe, with PyIceberg and the
reference auditor (examples/auditor/auditor.py) as the audit hook.

sales.orders gets a first batch on main; then floe.wap.required is set on
the namespace, so main only moves through /wap publish.  A good batch
written to a staging branch with PyIceberg passes the auditor's
expectations and lands on main; a bad batch is rejected and main keeps its
rows.  Expected row counts and rows are computed here in plain Python.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("pyiceberg")
pa = pytest.importorskip("pyarrow")

from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from pyiceberg.exceptions import ForbiddenError  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.types import DoubleType, LongType, NestedField, StringType  # noqa: E402

from conftest import REPO, TableHandle, assert_error, assert_ok_json, audit_events, free_port, register_hook  # noqa: E402

AUDITOR = REPO / "examples" / "auditor" / "auditor.py"
SECRET = "sox-control-7f3a9c"

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "amount_eur", DoubleType(), required=False),
    NestedField(3, "currency", StringType(), required=False),
    NestedField(4, "status", StringType(), required=False),
)
ARROW_SCHEMA = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("amount_eur", pa.float64()),
    pa.field("currency", pa.string()),
    pa.field("status", pa.string()),
])

EXPECTATIONS = {
    "sales.orders": {
        "id_present": "id IS NOT NULL",
        "amount_positive": "amount_eur > 0 OR status = 'CANCELLED'",
        "known_currency": "currency IN ('EUR', 'CHF')",
        "status_domain": "status IN ('OPEN', 'SHIPPED', 'CANCELLED')",
    }
}


def rows(start, specs):
    return [{"id": start + i, "amount_eur": a, "currency": c, "status": s} for i, (a, c, s) in enumerate(specs)]


FIRST = rows(1, [(120.0, "EUR", "SHIPPED"), (35.5, "CHF", "OPEN"), (9.99, "EUR", "OPEN")])
GOOD = rows(100, [(250.0, "EUR", "OPEN"), (0.0, "EUR", "CANCELLED"), (17.25, "CHF", "SHIPPED"),
                  (64.0, "EUR", "OPEN"), (3.5, "CHF", "OPEN")])
BAD = rows(200, [(80.0, "EUR", "OPEN"), (-12.0, "EUR", "OPEN"), (0.0, "CHF", "OPEN"),
                 (44.0, "USD", "SHIPPED"), (15.0, "CHF", "SHIPPED")])


def arrow(batch):
    return pa.Table.from_pylist(batch, schema=ARROW_SCHEMA)


def main_rows(cat) -> list[dict]:
    tbl = cat.load_table(("sales", "orders"))
    return sorted(tbl.scan().to_arrow().to_pylist(), key=lambda r: r["id"])


def branch_rows(cat, branch) -> list[dict]:
    tbl = cat.load_table(("sales", "orders"))
    return sorted(tbl.scan().use_ref(branch).to_arrow().to_pylist(), key=lambda r: r["id"])


class Auditor:
    """examples/auditor/auditor.py as a subprocess."""

    def __init__(self, workdir, expectations, secret):
        if not AUDITOR.is_file():
            pytest.fail(f"the reference auditor is missing: {AUDITOR}")
        self.port = free_port()
        self.exp_path = workdir / "expectations.json"
        self.exp_path.write_text(json.dumps(expectations))
        self.log_path = workdir / "auditor.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOE_", "AUDITOR_"))}
        if secret is not None:
            env["FLOE_AUDIT_SECRET"] = secret
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(AUDITOR), "--listen", f"127.0.0.1:{self.port}",
             "--expectations", str(self.exp_path)],
            env=env, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}/audit"
        self._wait_ready()

    def _wait_ready(self, timeout=30):
        import requests
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"the auditor exited with {self.proc.returncode}:\n{self.log()}")
            try:
                # any HTTP answer means it is serving (GET /healthz is 200)
                requests.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1)
                return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        pytest.fail(f"the auditor did not come up within {timeout}s:\n{self.log()}")

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()


@pytest.fixture
def auditor(tmp_path):
    a = Auditor(tmp_path, EXPECTATIONS, SECRET)
    yield a
    a.stop()


@pytest.fixture
def story(fresh_floe):
    """sales.orders with FIRST on main, created through PyIceberg."""
    cat = RestCatalog("floe", uri=fresh_floe.url)
    cat.create_namespace("sales")
    tbl = cat.create_table(("sales", "orders"), schema=SCHEMA)
    tbl.append(arrow(FIRST))
    assert main_rows(cat) == FIRST
    return cat, fresh_floe


def test_audited_publish_with_pyiceberg_and_the_reference_auditor(story, auditor):
    cat, floe = story
    t = TableHandle(floe, ["sales"], "orders")
    hook = register_hook(floe, "reference-auditor", auditor.url, scope={"namespace": ["sales"]}, secret=SECRET)
    cat.update_namespace_properties("sales", updates={"floe.wap.required": "true"})

    # Main is closed to direct writes.
    head_before = cat.load_table(("sales", "orders")).metadata.current_snapshot_id
    with pytest.raises(ForbiddenError) as exc:
        cat.load_table(("sales", "orders")).append(arrow(GOOD))
    assert "floe.wap.required" in str(exc.value), str(exc.value)
    assert main_rows(cat) == FIRST
    assert cat.load_table(("sales", "orders")).metadata.current_snapshot_id == head_before

    # Write: a good batch on a staging branch.
    run = t.stage()
    branch = run["branch"]
    cat.load_table(("sales", "orders")).append(arrow(GOOD), branch=branch)
    staged = cat.load_table(("sales", "orders"))
    branch_head = staged.metadata.refs[branch].snapshot_id
    assert staged.metadata.current_snapshot_id == head_before, "the branch write moved main"
    assert main_rows(cat) == FIRST
    assert branch_rows(cat, branch) == sorted(FIRST + GOOD, key=lambda r: r["id"])

    # Audit + publish.
    r = t.publish(run["id"])
    done = assert_ok_json(r)
    assert done["state"] == "published" and done["published-snapshot-id"] == branch_head, done
    assert [(a["hook-id"], a["verdict"]) for a in done["audits"]] == [(hook["id"], "pass")], done
    expected_main = sorted(FIRST + GOOD, key=lambda r: r["id"])
    got = main_rows(cat)
    assert len(got) == len(FIRST) + len(GOOD)
    assert got == expected_main
    assert cat.load_table(("sales", "orders")).metadata.current_snapshot_id == branch_head

    # A bad batch: rejected, main keeps exactly its rows.
    run2 = t.stage()
    cat.load_table(("sales", "orders")).append(arrow(BAD), branch=run2["branch"])
    bad_head = cat.load_table(("sales", "orders")).metadata.refs[run2["branch"]].snapshot_id
    r = t.publish(run2["id"])
    err = assert_error(r, 422, "AuditRejectedException")
    msg = err["message"]
    assert "reference-auditor" in msg, msg
    assert "amount_positive" in msg and "known_currency" in msg, msg
    assert "status_domain" not in msg and "id_present" not in msg, msg
    assert main_rows(cat) == expected_main
    assert len(main_rows(cat)) == len(FIRST) + len(GOOD)
    assert cat.load_table(("sales", "orders")).metadata.current_snapshot_id == branch_head
    got = assert_ok_json(floe.get(t.run_url(run2["id"])))
    assert got["state"] == "rejected" and got["audited-snapshot-id"] == bad_head, got
    # The bad rows are kept on the branch for inspection.
    assert len(branch_rows(cat, run2["branch"])) == len(expected_main) + len(BAD)

    events = audit_events(floe, namespace="sales", table="orders")
    runs = {}
    for e in events:
        if e["run-id"]:
            runs.setdefault(e["run-id"], []).append(e["event"])
    assert runs[run["id"]] == ["wap.staged", "wap.audit-started", "wap.hook-calling", "wap.hook-called", "wap.published"], runs
    assert runs[run2["id"]] == ["wap.staged", "wap.audit-started", "wap.hook-calling", "wap.hook-called", "wap.rejected"], runs


def test_a_hook_with_the_wrong_secret_fails_closed(story, auditor):
    cat, floe = story
    t = TableHandle(floe, ["sales"], "orders")
    bad = register_hook(floe, "reference-auditor", auditor.url, scope={"namespace": ["sales"]},
                        secret="not-the-shared-secret")
    run = t.stage()
    cat.load_table(("sales", "orders")).append(arrow(GOOD), branch=run["branch"])
    r = t.publish(run["id"])
    assert_error(r, 503, "AuditUnavailableException")
    assert main_rows(cat) == FIRST
    got = assert_ok_json(floe.get(t.run_url(run["id"])))
    assert got["state"] == "audit-failed"
    assert got["audits"][0]["http-status"] == 401, got

    # With the shared secret the same run is published.
    assert floe.delete(f"/v1/audit-hooks/{bad['id']}").status_code == 204
    register_hook(floe, "reference-auditor", auditor.url, scope={"namespace": ["sales"]}, secret=SECRET)
    assert assert_ok_json(t.publish(run["id"]))["state"] == "published"
    assert main_rows(cat) == sorted(FIRST + GOOD, key=lambda r: r["id"])
