"""The change feed: POST /v1/events, the Iceberg REST events endpoint.

Every change is an event written in the change's own transaction (by the
database's triggers), so each acknowledged change must be in the feed,
once, in order, with filters and a continuation token that resumes
exactly after the last event read.
"""

from __future__ import annotations

import threading
import time

import pytest

from conftest import TableHandle, assert_error, assert_ok_json, database_url


def read_all(f, **body):
    """Every event matching body, page by page; and the final token."""
    events, token = [], None
    while True:
        req = dict(body)
        if token:
            req["continuation-token"] = token
        page = assert_ok_json(f.post("/v1/events", json=req))
        assert isinstance(page["next-page-token"], str)
        assert isinstance(page["highest-processed-timestamp-ms"], int)
        events += page["events"]
        if not page["events"]:
            return events, page["next-page-token"]
        token = page["next-page-token"]


def ops(events):
    return [e["operation"]["operation-type"] for e in events]


@pytest.fixture
def fresh(fresh_floe):
    return fresh_floe


def test_every_kind_of_change_is_an_event_in_order(fresh):
    f = fresh
    f.create_namespace(["sales"])
    t = TableHandle(f, ["sales"], "orders")
    created = t.create()
    sid = t.add_snapshot()
    committed = t.load()["metadata-location"]
    r = f.post("/v1/namespaces/sales/properties", json={"updates": {"owner": "ops"}})
    assert r.status_code == 200, r.text
    r = f.post("/v1/tables/rename", json={"source": {"namespace": ["sales"], "name": "orders"},
                                          "destination": {"namespace": ["sales"], "name": "o2"}})
    assert r.status_code == 204, r.text
    assert f.delete("/v1/namespaces/sales/tables/o2").status_code == 204
    assert f.delete("/v1/namespaces/sales").status_code == 204

    events, _ = read_all(f)
    assert ops(events) == ["create-namespace", "create-table", "update-table",
                           "update-namespace-properties", "rename-table", "drop-table",
                           "drop-namespace"]
    uuid = created["metadata"]["table-uuid"]
    ct = events[1]["operation"]
    assert ct["identifier"] == {"namespace": ["sales"], "name": "orders"}
    assert ct["table-uuid"] == uuid
    assert ct["metadata-location"] == created["metadata-location"]
    up = events[2]["operation"]
    assert up["previous-metadata-location"] == created["metadata-location"]
    assert up["metadata-location"] == committed
    assert up["version"] == 2
    rn = events[4]["operation"]
    assert rn["source"] == {"namespace": ["sales"], "name": "orders"}
    assert rn["destination"] == {"namespace": ["sales"], "name": "o2"}
    assert events[6]["operation"] == {"operation-type": "drop-namespace", "namespace": ["sales"]}
    # Ids are unique and rising; each event says how many its transaction wrote.
    ids = [int(e["event-id"]) for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    for e in events:
        assert e["request-event-count"] >= 1
        assert e["timestamp-ms"] > 0
    assert events[2]["actor"] == {"principal": "anonymous"}
    assert sid is not None


def test_the_token_resumes_after_the_last_event(fresh):
    f = fresh
    f.create_namespace(["a"])
    first, token = read_all(f)
    assert ops(first) == ["create-namespace"]
    # Nothing new: the same token back, and no events.
    again = assert_ok_json(f.post("/v1/events", json={"continuation-token": token}))
    assert again["events"] == [] and again["next-page-token"] == token
    f.create_namespace(["b"])
    later = assert_ok_json(f.post("/v1/events", json={"continuation-token": token}))
    assert [e["operation"]["namespace"] for e in later["events"]] == [["b"]]


def test_paging_reads_each_event_once(fresh):
    f = fresh
    for i in range(7):
        f.create_namespace([f"n{i}"])
    events, _ = read_all(f, **{"page-size": 3})
    assert [e["operation"]["namespace"] for e in events] == [[f"n{i}"] for i in range(7)]


def test_filters(fresh):
    f = fresh
    f.create_namespace(["x"])
    f.create_namespace(["x", "deep"])
    f.create_namespace(["y"])
    tx = TableHandle(f, ["x", "deep"], "t")
    tx.create()
    ty = TableHandle(f, ["y"], "t")
    made = ty.create()
    ty.add_snapshot()
    by_op, _ = read_all(f, **{"operation-types": ["create-table"]})
    assert [e["operation"]["identifier"]["namespace"] for e in by_op] == [["x", "deep"], ["y"]]
    # A namespace names everything below it.
    under_x, _ = read_all(f, **{"catalog-objects-by-name": [["x"]]})
    assert ops(under_x) == ["create-namespace", "create-namespace", "create-table"]
    one_table, _ = read_all(f, **{"catalog-objects-by-name": [["y", "t"]]})
    assert ops(one_table) == ["create-table", "update-table"]
    by_id, _ = read_all(f, **{"catalog-objects-by-id": [
        {"uuid": made["metadata"]["table-uuid"], "type": "table"}]})
    assert ops(by_id) == ["create-table", "update-table"]
    tables_only, _ = read_all(f, **{"object-types": ["namespace"]})
    assert set(ops(tables_only)) == {"create-namespace"}
    now = int(time.time() * 1000) + 60_000
    future, _ = read_all(f, **{"after-timestamp-ms": now})
    assert future == []
    # A bound past any time PostgreSQL holds names nothing, not an error.
    for far in (253402300800000, 2**63 - 2):
        r = f.post("/v1/events", json={"after-timestamp-ms": far})
        assert r.status_code == 200, r.text
        assert r.json()["events"] == []
        assert r.json()["highest-processed-timestamp-ms"] == far


@pytest.mark.parametrize("body", [
    [],
    {"continuation-token": "nope"},
    {"continuation-token": 5},
    # past what PostgreSQL's columns hold (xid8, bigint, int)
    {"continuation-token": "18446744073709551616.1"},
    {"continuation-token": "1.9223372036854775808"},
    {"continuation-token": "1.1.2147483648.1"},
    {"page-size": 0},
    {"page-size": "10"},
    {"after-timestamp-ms": -1},
    {"operation-types": ["explode-table"]},
    {"operation-types": "create-table"},
    {"object-types": ["bucket"]},
    {"catalog-objects-by-name": [[]]},
    {"catalog-objects-by-name": ["x"]},
    {"catalog-objects-by-id": [{"uuid": "x", "type": "table"}]},
    {"custom-filters": {"k": "v"}},
])
def test_bad_requests(floe, body):
    assert_error(floe.post("/v1/events", json=body), 400, "BadRequestException")


def test_a_change_in_flight_is_not_passed(fresh):
    """An event written by a transaction still open is not read past: a
    reader's token never skips it once it commits."""
    import psycopg
    f = fresh
    f.create_namespace(["early"])
    with psycopg.connect(database_url(f)) as conn:
        conn.execute("INSERT INTO namespaces (levels, warehouse) VALUES ('{inflight}', '')")
        # Open; a change committed after it began is held back too.
        f.create_namespace(["after"])
        seen, token = read_all(f)
        assert [e["operation"]["namespace"] for e in seen] == [["early"]]
        conn.commit()
    rest, _ = read_all(f, **{"continuation-token": token})
    assert [e["operation"]["namespace"] for e in rest] == [["inflight"], ["after"]]


def test_wap_state_changes_are_custom_events(fresh):
    f = fresh
    f.create_namespace(["w"])
    t = TableHandle(f, ["w"], "t")
    t.create()
    t.add_snapshot()
    r = f.post(t.wap_url, json={})
    assert r.status_code == 201, r.text
    run = r.json()
    assert f.delete(t.run_url(run["id"])).status_code == 200
    events, _ = read_all(f, **{"catalog-objects-by-name": [["w", "t"]]})
    custom = [e["operation"] for e in events if e["operation"]["operation-type"] == "custom"]
    assert [c["custom-type"] for c in custom] == ["x-floe-wap-staged", "x-floe-wap-abandoned"]
    assert custom[0]["run-id"] == run["id"]
    assert custom[0]["identifier"] == {"namespace": ["w"], "name": "t"}


def test_concurrent_commits_all_appear(fresh):
    f = fresh
    f.create_namespace(["c"])
    tables = [TableHandle(f, ["c"], f"t{i}") for i in range(4)]
    for t in tables:
        t.create()
    errors = []

    def work(t):
        try:
            for _ in range(5):
                t.add_snapshot()
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in tables]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    events, _ = read_all(f, **{"operation-types": ["update-table"], "page-size": 4})
    per_table = {}
    for e in events:
        op = e["operation"]
        per_table.setdefault(op["identifier"]["name"], []).append(op["version"])
    # Every commit once, in version order per table.
    assert per_table == {t.name: [2, 3, 4, 5, 6] for t in tables}


def test_view_changes_are_view_events(fresh):
    from test_views import create_view
    f = fresh
    f.create_namespace(["v"])
    made = assert_ok_json(create_view(f, ["v"], "daily"))
    assert f.delete("/v1/namespaces/v/views/daily").status_code == 204
    events, _ = read_all(f, **{"object-types": ["view"]})
    assert ops(events) == ["create-view", "drop-view"]
    assert events[0]["operation"]["view-uuid"] == made["metadata"]["view-uuid"]
    assert "table-uuid" not in events[0]["operation"]
    assert events[0]["operation"]["identifier"] == {"namespace": ["v"], "name": "daily"}


def test_reading_the_feed_needs_audit_read(postgres):
    from conftest import _start_floe_on_fresh_db, _stop_and_check
    from test_authorization import As, principal
    f = _start_floe_on_fresh_db(postgres, env={"FLOE_AUTH": "floe"})
    try:
        f.authenticate()
        f.create_namespace(["s"])
        reader = principal(f, "feedreader", [("AUDIT_READ",)])
        other = principal(f, "tablereader", [("TABLE_READ",)])
        with As(f, other):
            assert_error(f.post("/v1/events", json={}), 403, "ForbiddenException")
        with As(f, reader):
            events, _ = read_all(f)
        assert ["s"] in [e["operation"].get("namespace") for e in events]
    finally:
        _stop_and_check(f)


def test_a_register_is_a_register_table_event(fresh):
    f = fresh
    f.create_namespace(["r"])
    t = TableHandle(f, ["r"], "src")
    made = t.create()
    assert f.delete(t.url).status_code == 204
    r = f.post("/v1/namespaces/r/register",
               json={"name": "again", "metadata-location": made["metadata-location"]})
    assert r.status_code == 200, r.text
    t2 = TableHandle(f, ["r"], "again")
    t2.add_snapshot()
    events, _ = read_all(f, **{"object-types": ["table"]})
    assert ops(events) == ["create-table", "drop-table", "register-table", "update-table"]
    assert events[2]["operation"]["identifier"] == {"namespace": ["r"], "name": "again"}
    assert events[2]["operation"]["metadata-location"] == made["metadata-location"]


def test_janitor_removes_events_past_the_retention(postgres):
    import psycopg
    from conftest import _start_floe_on_fresh_db, _stop_and_check, wait_until
    f = _start_floe_on_fresh_db(postgres, env={"FLOE_EVENTS_RETENTION_DAYS": "1",
                                                "FLOE_JANITOR_INTERVAL_SECONDS": "1"})
    try:
        f.create_namespace(["old"])
        f.create_namespace(["new"])
        with psycopg.connect(database_url(f), autocommit=True) as conn:
            conn.execute("UPDATE change_events SET occurred_at = now() - interval '2 days' "
                         "WHERE namespace = '{old}'")

        def left():
            events, _ = read_all(f)
            return [e["operation"]["namespace"] for e in events]
        assert wait_until(lambda: left() == [["new"]], 15), left()
        metrics = f.get("/metrics").text
        assert 'floe_janitor_rows_total{kind="feed_events"} 1' in metrics
    finally:
        _stop_and_check(f)


def test_the_longest_retention_keeps_events(postgres):
    """--events-retention-days 36500, the documented maximum, is
    3,153,600,000 seconds: past an int, so a 32-bit product wrapped to a
    negative age and the janitor removed every event each round."""
    import psycopg
    from conftest import _start_floe_on_fresh_db, _stop_and_check, wait_until
    f = _start_floe_on_fresh_db(postgres, env={"FLOE_JANITOR_INTERVAL_SECONDS": "1"},
                                args=["--events-retention-days", "36500"])
    try:
        f.create_namespace(["kept_old"])
        f.create_namespace(["kept_new"])
        with psycopg.connect(database_url(f), autocommit=True) as conn:
            conn.execute("UPDATE change_events SET occurred_at = now() - interval '2 days' "
                         "WHERE namespace = '{kept_old}'")

        def rounds():
            for line in f.get("/metrics").text.splitlines():
                if line.startswith("floe_janitor_rounds_total"):
                    return int(float(line.split()[-1]))
            return 0
        start = rounds()
        assert wait_until(lambda: rounds() >= start + 2, 15), rounds()
        events, _ = read_all(f)
        assert [e["operation"]["namespace"] for e in events] == [["kept_old"], ["kept_new"]]
        assert 'floe_janitor_rows_total{kind="feed_events"} 0' in f.get("/metrics").text
    finally:
        _stop_and_check(f)
