"""A table's past: GET .../commits and loadTable as of a time or a version.

Each commit floe acknowledged is a commit_log row naming the metadata file
it wrote; a load as of a point must answer exactly that file, and a point
with no commit, a bad point, or a file that is gone must each get a clear
Iceberg error.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pytest

from conftest import TableHandle, assert_error, assert_ok_json


@pytest.fixture
def table(floe, uniq):
    floe.create_namespace([uniq])
    t = TableHandle(floe, [uniq], "events")
    t.create()
    return t


def commits(floe, t, **params):
    return assert_ok_json(floe.get(t.url + "/commits", params=params))


def file_of(location: str) -> dict:
    assert location.startswith("file://"), location
    return json.loads(Path(location[len("file://"):]).read_text())


def test_commits_list_every_version_newest_first(floe, table):
    first = table.load()
    sids = [table.add_snapshot() for _ in range(3)]
    body = commits(floe, table)
    got = body["commits"]
    assert [c["version"] for c in got] == [4, 3, 2, 1]
    assert body["next-page-token"] is None
    assert got[-1]["metadata-location"] == first["metadata-location"]
    assert got[-1]["previous-metadata-location"] is None
    assert got[0]["metadata-location"] == table.load()["metadata-location"]
    # Each commit names the one before it, and its file holds that state.
    for newer, older in zip(got, got[1:]):
        assert newer["previous-metadata-location"] == older["metadata-location"]
        assert newer["committed-at-ms"] >= older["committed-at-ms"]
    assert file_of(got[0]["metadata-location"])["current-snapshot-id"] == sids[-1]
    for c in got:
        assert c["table-uuid"] == first["metadata"]["table-uuid"]
        assert c["principal"] == "anonymous"
        assert c["committed-at"].endswith("Z")


def test_commits_paged(floe, table):
    for _ in range(4):
        table.add_snapshot()
    seen, token = [], None
    while True:
        params = {"pageSize": 2}
        if token:
            params["pageToken"] = token
        body = commits(floe, table, **params)
        assert len(body["commits"]) <= 2
        seen += [c["version"] for c in body["commits"]]
        token = body["next-page-token"]
        if token is None:
            break
    assert seen == [5, 4, 3, 2, 1]
    assert_error(floe.get(table.url + "/commits", params={"pageToken": "x"}), 400,
                 "BadRequestException")


def test_load_as_of_version_answers_that_commit(floe, table):
    s1 = table.add_snapshot()
    s2 = table.add_snapshot()
    by_version = {c["version"]: c for c in commits(floe, table)["commits"]}
    old = assert_ok_json(floe.get(table.url, params={"as-of-version": 2}))
    assert old["metadata-location"] == by_version[2]["metadata-location"]
    assert old["metadata"]["current-snapshot-id"] == s1
    assert old["metadata"] == file_of(by_version[2]["metadata-location"])
    assert "config" in old
    assert table.metadata()["current-snapshot-id"] == s2
    empty = assert_ok_json(floe.get(table.url, params={"as-of-version": 1}))
    assert empty["metadata"].get("current-snapshot-id", -1) in (-1, None)
    r = floe.get(table.url, params={"as-of-version": 9})
    assert_error(r, 404, "NoSuchTableException")
    assert "no commit of version 9" in r.json()["error"]["message"]


def test_load_as_of_time(floe, table):
    s1 = table.add_snapshot()
    time.sleep(0.05)
    c2 = commits(floe, table)["commits"][0]
    between = c2["committed-at-ms"] + 20
    time.sleep(0.1)
    table.add_snapshot()
    # Milliseconds since the epoch.
    old = assert_ok_json(floe.get(table.url, params={"as-of": str(between)}))
    assert old["metadata-location"] == c2["metadata-location"]
    assert old["metadata"]["current-snapshot-id"] == s1
    # RFC 3339, in UTC and with an offset: the same instant.
    at = dt.datetime.fromtimestamp(between / 1000, dt.timezone.utc)
    for text in (at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                 at.astimezone(dt.timezone(dt.timedelta(hours=5, minutes=30)))
                 .strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+05:30"):
        same = assert_ok_json(floe.get(table.url, params={"as-of": text}))
        assert same["metadata-location"] == c2["metadata-location"], text
    # Before the table was created: no commit by then.
    r = floe.get(table.url, params={"as-of": "2001-01-01T00:00:00Z"})
    assert_error(r, 404, "NoSuchTableException")
    assert "no commit at or before" in r.json()["error"]["message"]


@pytest.mark.parametrize("params", [
    {"as-of": "yesterday"},
    {"as-of": "2026-12-05T10:00:00"},          # no zone
    {"as-of": "2026-13-05T10:00:00Z"},
    {"as-of": "2026-02-30T10:00:00Z"},         # not a day PostgreSQL knows
    {"as-of-version": "0"},
    {"as-of-version": "-3"},
    {"as-of-version": "2x"},
    {"as-of": "1700000000000", "as-of-version": "1"},
    {"as-of-version": "1", "snapshots": "refs"},
])
def test_load_as_of_bad_points(floe, table, params):
    assert_error(floe.get(table.url, params=params), 400, "BadRequestException")


def test_missing_table_and_namespace(floe, uniq):
    floe.create_namespace([uniq])
    t = TableHandle(floe, [uniq], "nope")
    assert_error(floe.get(t.url, params={"as-of-version": 1}), 404, "NoSuchTableException")
    assert_error(floe.get(t.url + "/commits"), 404, "NoSuchTableException")
    gone = TableHandle(floe, [uniq + "_missing"], "nope")
    r = floe.get(gone.url + "/commits")
    assert r.status_code == 404, r.text


def test_gone_file_is_a_clear_404(floe, table):
    table.add_snapshot()
    c1 = commits(floe, table)["commits"][-1]
    Path(c1["metadata-location"][len("file://"):]).unlink()
    r = floe.get(table.url, params={"as-of-version": 1})
    assert_error(r, 404, "NoSuchTableException")
    assert "no longer readable" in r.json()["error"]["message"]
    # The current state is untouched.
    assert table.load()["metadata"]["current-snapshot-id"] is not None


def test_history_survives_a_rename(floe, table, uniq):
    table.add_snapshot()
    r = floe.post("/v1/tables/rename", json={
        "source": {"namespace": [uniq], "name": "events"},
        "destination": {"namespace": [uniq], "name": "renamed"}})
    assert r.status_code == 204, r.text
    moved = TableHandle(floe, [uniq], "renamed")
    assert [c["version"] for c in commits(floe, moved)["commits"]] == [2, 1]
    assert_ok_json(floe.get(moved.url, params={"as-of-version": 1}))


# --------------------------------------------------------------------------
# undrop: a table dropped without purge is kept for the retention


def drop(floe, t, purge=False):
    r = floe.delete(t.url, params={"purgeRequested": "true"} if purge else None)
    assert r.status_code == 204, r.text


def undrop(floe, t):
    return floe.post(t.url + "/undrop")


def dropped(floe, ns, **params):
    return assert_ok_json(floe.get(f"/v1/namespaces/{ns[0]}/dropped-tables", params=params))


def test_undrop_puts_the_table_back_as_it_was(floe, table):
    sid = table.add_snapshot()
    before = table.load()
    drop(floe, table)
    assert_error(floe.get(table.url), 404, "NoSuchTableException")
    kept = dropped(floe, table.namespace)["dropped-tables"]
    assert [d["name"] for d in kept] == ["events"]
    assert kept[0]["table-uuid"] == before["metadata"]["table-uuid"]
    assert kept[0]["metadata-location"] == before["metadata-location"]
    assert kept[0]["dropped-by"] == "anonymous"

    back = assert_ok_json(undrop(floe, table))
    assert back["metadata-location"] == before["metadata-location"]
    assert back["metadata"] == before["metadata"]
    assert table.load()["metadata"] == before["metadata"]
    assert table.metadata()["current-snapshot-id"] == sid
    # The history goes on: the same versions, then the next commit.
    assert [c["version"] for c in commits(floe, table)["commits"]] == [2, 1]
    table.add_snapshot()
    assert commits(floe, table)["commits"][0]["version"] == 3
    assert dropped(floe, table.namespace)["dropped-tables"] == []
    # Listed again in its namespace, and the audit log says what happened.
    names = assert_ok_json(floe.get(table.ns_url + "/tables"))["identifiers"]
    assert {"namespace": table.namespace, "name": "events"} in names
    log = assert_ok_json(floe.get("/v1/audit-log", params={"namespace": table.namespace[0]}))
    events = [e["event"] for e in log["events"]]
    assert "table.dropped" in events and "table.undropped" in events
    un = [e for e in log["events"] if e["event"] == "table.undropped"][0]
    assert un["table"] == "events"
    assert un["details"]["table-uuid"] == before["metadata"]["table-uuid"]
    # Undropped once: a second undrop finds nothing kept.
    assert_error(undrop(floe, table), 404, "NoSuchTableException")


def test_undrop_without_a_kept_drop(floe, uniq):
    floe.create_namespace([uniq])
    t = TableHandle(floe, [uniq], "never")
    r = undrop(floe, t)
    assert_error(r, 404, "NoSuchTableException")
    assert "no drop of it is kept" in r.json()["error"]["message"]
    missing = TableHandle(floe, [uniq + "_nope"], "t")
    assert_error(undrop(floe, missing), 404, "NoSuchNamespaceException")
    assert_error(floe.get(f"/v1/namespaces/{uniq}_nope/dropped-tables"), 404,
                 "NoSuchNamespaceException")


def test_a_purged_table_is_not_kept(floe, table):
    drop(floe, table, purge=True)
    assert dropped(floe, table.namespace)["dropped-tables"] == []
    assert_error(undrop(floe, table), 404, "NoSuchTableException")


def test_a_new_table_under_the_name_wins(floe, table):
    old_uuid = table.metadata()["table-uuid"]
    drop(floe, table)
    table.create()
    new_uuid = table.metadata()["table-uuid"]
    r = undrop(floe, table)
    assert_error(r, 409, "AlreadyExistsException")
    assert table.metadata()["table-uuid"] == new_uuid
    # Once the new one is dropped too, an undrop brings back the newest drop.
    drop(floe, table)
    kept = dropped(floe, table.namespace)["dropped-tables"]
    assert [d["table-uuid"] for d in kept] == [new_uuid, old_uuid]
    assert assert_ok_json(undrop(floe, table))["metadata"]["table-uuid"] == new_uuid
    assert [d["table-uuid"] for d in dropped(floe, table.namespace)["dropped-tables"]] == [old_uuid]


def test_a_location_taken_since_refuses_the_undrop(floe, table):
    location = table.metadata()["location"]
    drop(floe, table)
    other = TableHandle(floe, table.namespace, "squatter")
    other.create(location=location)
    r = undrop(floe, table)
    assert_error(r, 409, "AlreadyExistsException")
    assert_error(floe.get(table.url), 404, "NoSuchTableException")
    assert len(dropped(floe, table.namespace)["dropped-tables"]) == 1


def test_dropped_list_is_paged(floe, uniq):
    floe.create_namespace([uniq])
    for i in range(3):
        t = TableHandle(floe, [uniq], f"t{i}")
        t.create()
        drop(floe, t)
    seen, token = [], None
    while True:
        params = {"pageSize": 2}
        if token:
            params["pageToken"] = token
        body = dropped(floe, [uniq], **params)
        seen += [d["name"] for d in body["dropped-tables"]]
        token = body["next-page-token"]
        if token is None:
            break
    assert seen == ["t2", "t1", "t0"]


def test_retention_off_keeps_nothing(postgres):
    from conftest import _start_floe_on_fresh_db, _stop_and_check
    f = _start_floe_on_fresh_db(postgres, env={"FLOE_UNDROP_RETENTION_SECONDS": "0"})
    try:
        f.create_namespace(["n"])
        t = TableHandle(f, ["n"], "t")
        t.create()
        drop(f, t)
        assert dropped(f, ["n"])["dropped-tables"] == []
        assert_error(undrop(f, t), 404, "NoSuchTableException")
    finally:
        _stop_and_check(f)


def test_janitor_forgets_drops_past_the_retention(postgres):
    import psycopg
    from conftest import _start_floe_on_fresh_db, _stop_and_check, database_url, wait_until
    f = _start_floe_on_fresh_db(postgres, env={"FLOE_UNDROP_RETENTION_SECONDS": "1",
                                                "FLOE_JANITOR_INTERVAL_SECONDS": "1"})
    try:
        f.create_namespace(["n"])
        t = TableHandle(f, ["n"], "t")
        t.create()
        drop(f, t)

        def kept_rows():
            with psycopg.connect(database_url(f), autocommit=True) as conn:
                return conn.execute("SELECT count(*) FROM dropped_tables").fetchone()[0]
        assert wait_until(lambda: kept_rows() == 0, 15), "the janitor kept the drop"
        assert_error(undrop(f, t), 404, "NoSuchTableException")
        metrics = f.get("/metrics").text
        assert 'floe_janitor_rows_total{kind="dropped_tables"} 1' in metrics, \
            [l for l in metrics.splitlines() if "janitor_rows" in l]
    finally:
        _stop_and_check(f)
