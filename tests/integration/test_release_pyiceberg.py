"""A release written with PyIceberg: three tables reach main together after
one audit, or none does.

sales.orders, sales.order_lines and sales.fx_rates are made and seeded on
main with PyIceberg. A release stages one branch on the three; PyIceberg
appends the night's rows to that branch of every table, and the reference
auditor (examples/auditor/auditor.py) checks each table's expectations and
the relations across them (every order line has its order, every order's
currency has a rate), reading each table at the snapshot PyIceberg wrote. A
second hook records the release.audit payload. The tests cover:

* while the release is staged, PyIceberg reading main sees only main's
  rows, and reading the branch sees main's rows plus the staged ones;
* a passing audit moves every table's main to exactly the snapshot
  PyIceberg wrote on its branch, main then holds exactly the seeded plus
  the staged rows, and the one release.audit call listed all three tables
  with those snapshots;
* a night with an orphan order line is rejected: no table's main moves
  (same snapshot, same rows), the release and its members say rejected, and
  the rejected rows stay readable on the branch until it is abandoned;
* a table with no snapshot yet gets its first rows through a release.

Expected rows are computed here in plain Python.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pyiceberg")
pa = pytest.importorskip("pyarrow")

from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType  # noqa: E402

from conftest import assert_error, assert_ok_json, audit_events  # noqa: E402
from test_wap_pyiceberg import Auditor  # noqa: E402
from webhook import PASS  # noqa: E402

NS = "sales"
SECRET = "release-pyiceberg-41d8"

SCHEMAS = {
    "orders": Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "amount_eur", DoubleType(), required=False),
        NestedField(3, "currency", StringType(), required=False),
        NestedField(4, "status", StringType(), required=False),
    ),
    "order_lines": Schema(
        NestedField(1, "line_id", LongType(), required=False),
        NestedField(2, "order_id", LongType(), required=False),
        NestedField(3, "sku", StringType(), required=False),
        NestedField(4, "qty", IntegerType(), required=False),
    ),
    "fx_rates": Schema(
        NestedField(1, "currency", StringType(), required=False),
        NestedField(2, "rate", DoubleType(), required=False),
    ),
}
ARROW = {
    "orders": pa.schema([("id", pa.int64()), ("amount_eur", pa.float64()),
                         ("currency", pa.string()), ("status", pa.string())]),
    "order_lines": pa.schema([("line_id", pa.int64()), ("order_id", pa.int64()),
                              ("sku", pa.string()), ("qty", pa.int32())]),
    "fx_rates": pa.schema([("currency", pa.string()), ("rate", pa.float64())]),
}
TABLES = tuple(SCHEMAS)

FIRST = {
    "orders": [(1, 120.0, "EUR", "OPEN"), (2, 75.5, "CHF", "SHIPPED")],
    "order_lines": [(10, 1, "A-1", 2), (11, 2, "B-7", 1)],
    "fx_rates": [("EUR", 1.0), ("CHF", 1.04)],
}
NIGHT_1 = {  # consistent: lines 12, 13 belong to order 3, priced in USD, whose rate comes too
    "orders": [(3, 19.99, "USD", "OPEN"), (4, 0.0, "EUR", "CANCELLED")],
    "order_lines": [(12, 3, "C-2", 4), (13, 3, "A-1", 1), (14, 4, "B-7", 2)],
    "fx_rates": [("USD", 0.92)],
}
NIGHT_2 = {  # line 16 names order 77, which no table has
    "orders": [(5, 250.0, "EUR", "OPEN")],
    "order_lines": [(15, 5, "A-1", 1), (16, 77, "Z-9", 3)],
    "fx_rates": [("GBP", 1.17)],
}

EXPECTATIONS = {
    f"{NS}.orders": {"amount_positive": "amount_eur > 0 OR status = 'CANCELLED'"},
    f"{NS}.order_lines": {"qty_positive": "qty > 0"},
    f"{NS}.fx_rates": {"rate_positive": "rate > 0"},
    f"{NS}.fx_rates_eu": {"rate_positive": "rate > 0"},
    "relations": [
        {"name": "line_has_order", "table": f"{NS}.order_lines", "columns": ["order_id"],
         "references": f"{NS}.orders", "referenced-columns": ["id"]},
        {"name": "currency_has_rate", "table": f"{NS}.orders", "columns": ["currency"],
         "references": f"{NS}.fx_rates"},
    ],
}


def arrow(table: str, rows) -> "pa.Table":
    names = ARROW[table].names
    return pa.Table.from_pylist([dict(zip(names, r)) for r in rows], schema=ARROW[table])


def rows_at(cat, table: str, ref: str | None = None) -> list[tuple]:
    """The rows of a table as PyIceberg reads them: main, or ref."""
    scan = cat.load_table((NS, table)).scan()
    if ref is not None:
        scan = scan.use_ref(ref)
    return sorted(tuple(r.values()) for r in scan.to_arrow().to_pylist())


def main_snapshot(cat, table: str):
    snap = cat.load_table((NS, table)).current_snapshot()
    return None if snap is None else snap.snapshot_id


def branch_head(cat, table: str, branch: str):
    ref = cat.load_table((NS, table)).metadata.refs.get(branch)
    return None if ref is None else ref.snapshot_id


def stage(floe, branch: str, tables=TABLES) -> dict:
    body = {"name": branch, "tables": [{"namespace": [NS], "name": t} for t in tables]}
    rel = assert_ok_json(floe.post("/v1/releases", json=body), 201)
    assert rel["state"] == "staged" and rel["branch"] == branch, rel
    return rel


def publish(floe, rid):
    return floe.post(f"/v1/releases/{rid}/publish", json={}, timeout=120)


def write_night(cat, branch: str, night: dict) -> dict:
    """Appends each table's rows to branch with PyIceberg; the heads it wrote."""
    heads = {}
    for t in TABLES:
        before = branch_head(cat, t, branch)
        cat.load_table((NS, t)).append(arrow(t, night[t]), branch=branch)
        heads[t] = branch_head(cat, t, branch)
        assert heads[t] is not None and heads[t] != before, f"{t}: PyIceberg's append did not move {branch}"
    return heads


@pytest.fixture(scope="module")
def auditor(tmp_path_factory):
    a = Auditor(tmp_path_factory.mktemp("release-auditor"), EXPECTATIONS, SECRET)
    yield a
    a.stop()


@pytest.fixture
def sales(fresh_floe, auditor, hooks, webhooks):
    """The three tables with FIRST on main, made through PyIceberg, audited by
    the reference auditor; a second hook records what floe sends."""
    cat = RestCatalog("floe", uri=fresh_floe.url)
    cat.create_namespace(NS)
    for t in TABLES:
        cat.create_table((NS, t), schema=SCHEMAS[t]).append(arrow(t, FIRST[t]))
        assert rows_at(cat, t) == sorted(FIRST[t])
    recorder = webhooks(PASS, secret=SECRET)
    hooks(fresh_floe, "release-auditor", auditor.url, scope={"namespace": [NS]}, secret=SECRET,
          timeout_ms=60000)
    hooks(fresh_floe, "recorder", recorder.url, scope={"namespace": [NS]}, secret=SECRET)
    return cat, fresh_floe, recorder


def test_while_staged_pyiceberg_reads_main_without_the_branch_rows(sales):
    cat, floe, _ = sales
    seeded = {t: main_snapshot(cat, t) for t in TABLES}
    early = {t: cat.load_table((NS, t)) for t in TABLES}  # loaded before the release exists
    rel = stage(floe, "night_1")
    for t in TABLES:
        # The branch starts at main's snapshot; main itself did not move.
        assert branch_head(cat, t, "night_1") == seeded[t], t
        assert main_snapshot(cat, t) == seeded[t], t

    heads = write_night(cat, "night_1", NIGHT_1)
    for t in TABLES:
        tbl = cat.load_table((NS, t))
        assert tbl.current_snapshot().snapshot_id == seeded[t], f"{t}: a branch write moved main"
        assert tbl.snapshot_by_name("night_1").parent_snapshot_id == seeded[t], t
        assert rows_at(cat, t) == sorted(FIRST[t]), f"{t}: main shows staged rows"
        assert rows_at(cat, t, "night_1") == sorted(FIRST[t] + NIGHT_1[t]), t
        # A table object loaded before staging, refreshed, still reads main.
        assert sorted(tuple(r.values()) for r in early[t].refresh().scan().to_arrow().to_pylist()) \
            == sorted(FIRST[t]), t
        assert early[t].refresh().metadata.refs["night_1"].snapshot_id == heads[t], t

    got = assert_ok_json(floe.get(f"/v1/releases/{rel['id']}"))
    assert got["state"] == "staged" and {m["state"] for m in got["tables"]} == {"staged"}, got
    assert {m["table"]["name"]: m["base-snapshot-id"] for m in got["tables"]} == seeded, got


def test_an_audited_release_moves_every_main_to_what_pyiceberg_wrote(sales, auditor):
    cat, floe, recorder = sales
    seeded = {t: main_snapshot(cat, t) for t in TABLES}
    rel = stage(floe, "night_1")
    heads = write_night(cat, "night_1", NIGHT_1)

    done = assert_ok_json(publish(floe, rel["id"]))
    assert done["state"] == "published", (done, auditor.log())
    assert sorted((a["hook-name"], a["verdict"]) for a in done["audits"]) == [
        ("recorder", "pass"), ("release-auditor", "pass")], done["audits"]
    published = {m["table"]["name"]: m for m in done["tables"]}
    assert set(published) == set(TABLES), done
    for t in TABLES:
        assert published[t]["state"] == "published" and published[t]["published-snapshot-id"] == heads[t], \
            published[t]
        # main is now exactly the snapshot PyIceberg wrote, with exactly these rows.
        assert main_snapshot(cat, t) == heads[t], t
        got = rows_at(cat, t)
        assert len(got) == len(FIRST[t]) + len(NIGHT_1[t]), t
        assert got == sorted(FIRST[t] + NIGHT_1[t]), t
        assert "night_1" not in cat.load_table((NS, t)).metadata.refs, f"{t}: the branch was not dropped"

    # One signed release.audit call, listing the three tables at the snapshots PyIceberg wrote.
    assert recorder.count() == 1
    req = recorder.requests[0]
    assert req.header("X-Floe-Event") == "release.audit" and req.signature_valid is True
    payload = req.json()
    assert payload["event"] == "release.audit" and payload["release-id"] == rel["id"], payload
    listed = {(tuple(m["table"]["namespace"]), m["table"]["name"]): m for m in payload["tables"]}
    assert set(listed) == {((NS,), t) for t in TABLES}, listed.keys()
    for t in TABLES:
        m = listed[((NS,), t)]
        assert m["snapshot-id"] == heads[t] and m["main-snapshot-id"] == seeded[t], (t, m)
        assert m["parent-snapshot-id"] == seeded[t], (t, m)
        assert m["snapshot"]["summary"]["added-records"] == str(len(NIGHT_1[t])), (t, m["snapshot"])
        assert [f["name"] for f in m["schema"]["fields"]] == ARROW[t].names, (t, m["schema"])
        assert m["metadata-location"], (t, m)

    events = [e["event"] for e in audit_events(floe, run=rel["id"])]
    assert events[0] == "release.staged" and events[-1] == "release.published", events
    assert events.count("release.hook-called") == 2, events


def test_an_orphan_order_line_rejects_the_release_and_no_main_moves(sales, auditor):
    cat, floe, recorder = sales
    rel = stage(floe, "night_1")
    write_night(cat, "night_1", NIGHT_1)
    assert assert_ok_json(publish(floe, rel["id"]))["state"] == "published", auditor.log()
    before = {t: (main_snapshot(cat, t), rows_at(cat, t)) for t in TABLES}
    recorder.clear()

    rel = stage(floe, "night_2")
    heads = write_night(cat, "night_2", NIGHT_2)
    err = assert_error(publish(floe, rel["id"]), 422, "AuditRejectedException")
    msg = err["message"]
    assert "release-auditor" in msg and "line_has_order: 1 row of" in msg, (msg, auditor.log())
    assert "currency_has_rate" not in msg and "qty_positive" not in msg, msg
    for t in TABLES:
        assert main_snapshot(cat, t) == before[t][0], f"{t}: main moved under a rejected release"
        assert rows_at(cat, t) == before[t][1] == sorted(FIRST[t] + NIGHT_1[t]), t
        assert branch_head(cat, t, "night_2") == heads[t], f"{t}: the rejected branch moved"

    got = assert_ok_json(floe.get(f"/v1/releases/{rel['id']}"))
    assert got["state"] == "rejected" and {m["state"] for m in got["tables"]} == {"rejected"}, got
    verdicts = {a["hook-name"]: a["verdict"] for a in got["audits"]}
    assert verdicts["release-auditor"] == "reject", got["audits"]
    assert "line_has_order" in next(a for a in got["audits"] if a["hook-name"] == "release-auditor")["reason"]
    assert "release.rejected" in [e["event"] for e in audit_events(floe, run=rel["id"])]
    # The auditor was shown the snapshots PyIceberg wrote.
    listed = {m["table"]["name"]: m["snapshot-id"] for m in recorder.wait_for(1)[0].json()["tables"]}
    assert listed == heads, listed

    # The rejected night stays on its branch for inspection, then is abandoned.
    assert 77 in [r[1] for r in rows_at(cat, "order_lines", "night_2")]
    assert assert_ok_json(floe.delete(f"/v1/releases/{rel['id']}"))["state"] == "abandoned"
    for t in TABLES:
        assert "night_2" not in cat.load_table((NS, t)).metadata.refs, t
        assert main_snapshot(cat, t) == before[t][0] and rows_at(cat, t) == before[t][1], t


def test_a_table_without_a_snapshot_gets_its_first_rows_through_a_release(sales, auditor):
    cat, floe, recorder = sales
    cat.create_table((NS, "fx_rates_eu"), schema=SCHEMAS["fx_rates"])
    assert main_snapshot(cat, "fx_rates_eu") is None
    rel = stage(floe, "first_load", tables=("fx_rates_eu",))
    # The empty table's branch starts at an empty snapshot PyIceberg can read and append to.
    empty = branch_head(cat, "fx_rates_eu", "first_load")
    assert empty is not None and rows_at(cat, "fx_rates_eu", "first_load") == []
    assert rows_at(cat, "fx_rates_eu") == [] and main_snapshot(cat, "fx_rates_eu") is None

    rates = [("SEK", 0.087), ("NOK", 0.085)]
    cat.load_table((NS, "fx_rates_eu")).append(arrow("fx_rates", rates), branch="first_load")
    head = branch_head(cat, "fx_rates_eu", "first_load")
    assert cat.load_table((NS, "fx_rates_eu")).snapshot_by_name("first_load").parent_snapshot_id == empty
    assert main_snapshot(cat, "fx_rates_eu") is None, "a branch write moved main"

    done = assert_ok_json(publish(floe, rel["id"]))
    assert done["state"] == "published", (done, auditor.log())
    assert main_snapshot(cat, "fx_rates_eu") == head
    assert rows_at(cat, "fx_rates_eu") == sorted(rates)
    assert "first_load" not in cat.load_table((NS, "fx_rates_eu")).metadata.refs
    (member,) = recorder.wait_for(1)[0].json()["tables"]
    assert member["table"]["name"] == "fx_rates_eu" and member["snapshot-id"] == head, member
    assert member["parent-snapshot-id"] == empty and member.get("main-snapshot-id") is None, member
