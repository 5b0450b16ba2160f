"""Concurrent writers against floe: one daemon, and two daemons sharing one
PostgreSQL database and one warehouse.

Every commit that floe acknowledges must be in the table, exactly once, and
the history must stay a single line: each snapshot's parent is the one
before it, each metadata file's predecessor is the one before it.
"""

from __future__ import annotations

import collections
import json
import multiprocessing
import queue
import random
import re
import shutil
import threading
import time
import traceback
from pathlib import Path

import pytest
import requests

from conftest import assert_ok_json, describe, make_shared_tmpdir

WRITERS = 16
MAX_CLIENT_RETRIES = 60
METADATA_FILE_RE = re.compile(r"/metadata/(\d{5})-[0-9a-f-]{36}\.metadata\.json$")


@pytest.fixture(params=[1, 2], ids=["one-daemon", "two-daemons"])
def daemons(request, postgres, floe_factory):
    """One or two floe daemons on one fresh database and one warehouse."""
    db = postgres.new_database()
    scratch = make_shared_tmpdir("floe-it-conc-")
    wh = scratch / "wh"
    try:
        yield [floe_factory(args=[f"--warehouse=file://{wh}"], env={"FLOE_DATABASE_URL": db})
               for _ in range(request.param)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def local_path(uri: str) -> Path:
    assert uri.startswith("file:///"), uri
    return Path(uri[len("file://"):])


def file_number(uri: str) -> int:
    m = METADATA_FILE_RE.search(uri)
    assert m, f"not a numbered metadata file: {uri}"
    return int(m.group(1))


def check_linear_history(body: dict, commits: int):
    """The metadata file chain 00000 .. NNNNN has no gap and no fork."""
    meta = body["metadata"]
    log = [e["metadata-file"] for e in meta["metadata-log"]]
    assert len(log) == commits, f"metadata-log has {len(log)} entries, expected {commits}"
    assert [file_number(u) for u in log] == list(range(commits)), log
    assert file_number(body["metadata-location"]) == commits
    assert len(set(log + [body["metadata-location"]])) == commits + 1
    on_disk = json.loads(local_path(body["metadata-location"]).read_text())
    assert on_disk == meta
    for uri in log:
        assert local_path(uri).is_file(), uri


def start_together(n, fn):
    """Run fn(i) in n threads released at the same moment; returns results by index."""
    barrier = threading.Barrier(n)
    results = [None] * n

    def run(i):
        try:
            barrier.wait(30)
            results[i] = fn(i)
        except BaseException as e:  # noqa: BLE001 - reported by the caller
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return results


# --------------------------------------------------------------------------
# raw HTTP: commits without requirements land through floe's own retry


def test_concurrent_property_commits_all_land(daemons):
    head = daemons[0]
    head.create_namespace(["conc"])
    r = head.post("/v1/namespaces/conc/tables", json={"name": "props", "schema": {
        "type": "struct", "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}})
    assert r.status_code == 200, describe(r)

    def writer(i):
        target = daemons[i % len(daemons)]
        session = requests.Session()
        conflicts = 0
        for _ in range(MAX_CLIENT_RETRIES + 1):
            resp = session.post(f"{target.url}/v1/namespaces/conc/tables/props",
                                json={"requirements": [],
                                      "updates": [{"action": "set-properties", "updates": {f"w{i:02d}": str(i)}}]},
                                timeout=60)
            assert resp.status_code < 500, f"writer {i}: {describe(resp)}"
            if resp.status_code == 200:
                return conflicts
            assert resp.status_code == 409, f"writer {i}: {describe(resp)}"
            conflicts += 1
            time.sleep(random.uniform(0.01, 0.1))
        raise AssertionError(f"writer {i} gave up after {conflicts} conflicts")

    results = start_together(WRITERS, writer)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors
    print(f"\n{len(daemons)} daemon(s): client retries per property commit: {results}")

    body = assert_ok_json(head.get("/v1/namespaces/conc/tables/props"))
    props = body["metadata"]["properties"]
    missing = [i for i in range(WRITERS) if props.get(f"w{i:02d}") != str(i)]
    assert not missing, f"acknowledged commits lost: writers {missing}; properties {props}"
    check_linear_history(body, WRITERS)
    for d in daemons[1:]:
        assert assert_ok_json(d.get("/v1/namespaces/conc/tables/props")) == body


def test_concurrent_create_of_one_name(daemons):
    head = daemons[0]
    head.create_namespace(["race"])
    schema = {"type": "struct", "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}

    def creator(i):
        target = daemons[i % len(daemons)]
        resp = requests.post(f"{target.url}/v1/namespaces/race/tables",
                             json={"name": "once", "schema": schema, "properties": {"creator": str(i)}}, timeout=60)
        return resp.status_code, resp.text

    results = start_together(WRITERS, creator)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors
    codes = collections.Counter(code for code, _ in results)
    assert codes == {200: 1, 409: WRITERS - 1}, results
    winner = next(i for i, (code, _) in enumerate(results) if code == 200)
    body = assert_ok_json(head.get("/v1/namespaces/race/tables/once"))
    assert body["metadata"]["properties"]["creator"] == str(winner)
    assert json.loads(results[winner][1])["metadata"]["table-uuid"] == body["metadata"]["table-uuid"]
    assert json.loads(local_path(body["metadata-location"]).read_text()) == body["metadata"]


# --------------------------------------------------------------------------
# PyIceberg appends, one process per writer


def _append_worker(uri, identifier, index, rows, barrier, out):
    """One writer process: its own RestCatalog, one append of `rows` rows."""
    import logging

    import pyarrow as pa
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import CommitFailedException

    class CountRetries(logging.Handler):
        count = 0

        def emit(self, record):
            if "retrying" in record.getMessage():
                CountRetries.count += 1

    logging.getLogger("pyiceberg").addHandler(CountRetries())
    result = {"index": index, "ok": False, "client_retries": 0, "pyiceberg_retries": 0, "error": None}
    try:
        catalog = RestCatalog(f"writer{index}", uri=uri)
        table = catalog.load_table(identifier)
        data = pa.table({"writer": pa.array([index] * rows, pa.int64()),
                         "n": pa.array(list(range(rows)), pa.int64())})
        barrier.wait(120)
        while True:
            try:
                table.append(data)
                break
            except CommitFailedException:
                result["client_retries"] += 1
                if result["client_retries"] > MAX_CLIENT_RETRIES:
                    raise
                time.sleep(random.uniform(0.02, 0.2))
                table = catalog.load_table(identifier)
        result["ok"] = True
    except BaseException:  # noqa: BLE001 - sent to the parent
        result["error"] = traceback.format_exc()
    result["pyiceberg_retries"] = CountRetries.count
    out.put(result)


def test_concurrent_pyiceberg_appends(daemons):
    pytest.importorskip("pyiceberg")
    pytest.importorskip("pyarrow")
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    catalog = RestCatalog("setup", uri=daemons[0].url)
    catalog.create_namespace("conc")
    catalog.create_table(("conc", "appends"), schema=Schema(
        NestedField(1, "writer", LongType(), required=False),
        NestedField(2, "n", LongType(), required=False)))

    rows = {i: i % 3 + 1 for i in range(WRITERS)}
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WRITERS)
    out = ctx.Queue()
    procs = [ctx.Process(target=_append_worker,
                         args=(daemons[i % len(daemons)].url, ("conc", "appends"), i, rows[i], barrier, out))
             for i in range(WRITERS)]
    for p in procs:
        p.start()
    results = []
    deadline = time.monotonic() + 600
    try:
        while len(results) < WRITERS:
            try:
                results.append(out.get(timeout=max(1.0, deadline - time.monotonic())))
            except queue.Empty:
                break
    finally:
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
    assert len(results) == WRITERS, f"only {len(results)} of {WRITERS} writers reported"
    failed = [r for r in results if not r["ok"]]
    assert not failed, "\n".join(r["error"] or "" for r in failed)
    retries = {r["index"]: (r["pyiceberg_retries"], r["client_retries"]) for r in results}
    first_time = sum(1 for a, b in retries.values() if a == 0 and b == 0)
    print(f"\n{len(daemons)} daemon(s): {first_time}/{WRITERS} appends landed on the first attempt; "
          f"(pyiceberg retries, client retries) per writer: {dict(sorted(retries.items()))}")

    table = RestCatalog("check", uri=daemons[-1].url).load_table(("conc", "appends"))
    data = table.scan().to_arrow().to_pylist()
    assert len(data) == sum(rows.values())
    per_writer = collections.Counter(r["writer"] for r in data)
    assert per_writer == collections.Counter(rows), "each writer's batch must be there exactly once"
    for i in range(WRITERS):
        assert sorted(r["n"] for r in data if r["writer"] == i) == list(range(rows[i]))

    snapshots = {s.snapshot_id: s for s in table.snapshots()}
    assert len(snapshots) == WRITERS, f"{len(snapshots)} snapshots for {WRITERS} appends"
    chain = []
    snap = table.current_snapshot()
    while snap is not None:
        chain.append(snap)
        snap = snapshots.get(snap.parent_snapshot_id) if snap.parent_snapshot_id is not None else None
    assert len(chain) == WRITERS, "following main's parents must reach every snapshot"
    assert chain[-1].parent_snapshot_id is None
    assert [s.sequence_number for s in chain] == list(range(WRITERS, 0, -1))
    assert table.metadata.refs["main"].snapshot_id == chain[0].snapshot_id
    assert [e.snapshot_id for e in table.metadata.snapshot_log] == [s.snapshot_id for s in reversed(chain)]
    added = collections.Counter(int(s.summary["added-records"]) for s in chain)
    assert added == collections.Counter(rows.values())

    body = assert_ok_json(daemons[0].get("/v1/namespaces/conc/tables/appends"))
    check_linear_history(body, WRITERS)
    for d in daemons[1:]:
        assert assert_ok_json(d.get("/v1/namespaces/conc/tables/appends")) == body
