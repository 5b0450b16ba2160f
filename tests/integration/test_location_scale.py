"""The no-overlap rule of table locations at scale, against the real daemon
and a real PostgreSQL: a create costs the same in a catalog of 10,000
tables as in one of 1,000, and a create waits only for the creates whose
locations overlap its own, never for the rest of the catalog."""

from __future__ import annotations

import shutil
import statistics
import threading
import time

import psycopg
import pytest
import requests

from conftest import assert_error, assert_ok_json, database_url, describe, make_shared_tmpdir, wait_until

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "required": True, "type": "long"}],
}

# Tables per namespace in the bulk-loaded catalogs, as a catalog of many
# tables is laid out.
PER_NAMESPACE = 1000


def create(f, ns, name, session=None, timeout=60, **extra) -> requests.Response:
    body = {"name": name, "schema": SCHEMA, **extra}
    return (session or requests).post(f"{f.url}/v1/namespaces/{ns}/tables", json=body,
                                      timeout=timeout)


@pytest.fixture
def warehouse():
    scratch = make_shared_tmpdir("floe-it-locscale-")
    try:
        yield scratch / "wh"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def start_catalog(postgres, floe_factory, wh):
    return floe_factory(args=[f"--warehouse=file://{wh}"],
                        env={"FLOE_DATABASE_URL": postgres.new_database()})


def fill(f, wh, count: int):
    """Brings the catalog of f to `count` tables, PER_NAMESPACE to a
    namespace bulk<k>, written straight into floe's relations (its
    triggers run) with the metadata of a table created through the API:
    the rows a catalog that size holds, without an hour of creates."""
    with psycopg.connect(database_url(f), autocommit=True) as db:
        have = db.execute("SELECT count(*) FROM tables").fetchone()[0]
        db.execute(
            "INSERT INTO namespaces (levels) SELECT ARRAY['bulk' || g] "
            "FROM generate_series(0, (%(n)s - 1) / %(per)s) g ON CONFLICT DO NOTHING",
            {"n": count, "per": PER_NAMESPACE})
        db.execute(
            "INSERT INTO tables (namespace_id, name, table_uuid, location, metadata_location, "
            "  metadata, version) "
            "SELECT ns.id, 'b' || i, gen_random_uuid(), %(wh)s || '/bulk' || (i / %(per)s) || '/b' || i, "
            "  %(wh)s || '/bulk' || (i / %(per)s) || '/b' || i || '/metadata/00000-bulk.metadata.json', "
            "  src.metadata, 1 "
            "FROM generate_series(0, %(n)s - %(have)s - 1) i "
            "JOIN namespaces ns ON ns.levels = ARRAY['bulk' || (i / %(per)s)] "
            "CROSS JOIN (SELECT metadata FROM tables WHERE name = 'seed') src",
            {"wh": f"file://{wh}", "per": PER_NAMESPACE, "have": have, "n": count})
        db.execute("ANALYZE tables")
        assert db.execute("SELECT count(*) FROM tables").fetchone()[0] == count


@pytest.mark.scale
def test_create_costs_the_same_with_ten_times_the_tables(postgres, floe_factory, tmp_path):
    """Two catalogs side by side, one of 1,000 tables and one of 10,000;
    creates alternate between them so a busy machine slows both alike, and
    the medians compare. Each create lands in a namespace of 1,000 tables
    in both, so the size of the catalog is the only difference."""
    small_wh, big_wh = tmp_path / "small", tmp_path / "big"
    small = start_catalog(postgres, floe_factory, small_wh)
    big = start_catalog(postgres, floe_factory, big_wh)
    for f, wh, count in ((small, small_wh, 1_000), (big, big_wh, 10_000)):
        f.create_namespace(["template"])
        assert_ok_json(create(f, "template", "seed"))
        fill(f, wh, count)

    sessions = {id(small): requests.Session(), id(big): requests.Session()}
    times = {id(small): [], id(big): []}
    rounds, warmup = 80, 10
    for i in range(rounds + warmup):
        # Alternate which catalog goes first, so neither always follows
        # the other's fsync.
        order = (small, big) if i % 2 == 0 else (big, small)
        for f in order:
            t0 = time.perf_counter()
            r = create(f, "bulk0", f"new{i}", session=sessions[id(f)])
            elapsed = time.perf_counter() - t0
            assert r.status_code == 200, describe(r)
            if i >= warmup:
                times[id(f)].append(elapsed)
    small_p50 = statistics.median(times[id(small)])
    big_p50 = statistics.median(times[id(big)])
    print(f"createTable median: {small_p50 * 1000:.2f} ms at 1,000 tables, "
          f"{big_p50 * 1000:.2f} ms at 10,000 ({big_p50 / small_p50:.2f}x)")
    assert big_p50 <= 1.2 * small_p50, (
        f"createTable median {big_p50 * 1000:.1f} ms with 10,000 tables against "
        f"{small_p50 * 1000:.1f} ms with 1,000: a create's cost grows with the catalog")


def waiting(db, wait_event: str, query_part: str) -> int:
    """How many sessions of db's database wait on a lock of kind wait_event
    while running a statement containing query_part."""
    return db.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND wait_event = %s AND query LIKE %s",
        (wait_event, f"%{query_part}%")).fetchone()[0]


def test_a_create_waits_only_for_creates_whose_locations_overlap(postgres, floe_factory, warehouse):
    """A create held inside its transaction (its namespace's row locked by
    another session, so its insert waits after it has claimed its
    location): a create elsewhere in the catalog lands meanwhile; creates
    inside its location and holding it wait for it, and then are refused."""
    wh = warehouse
    f = floe_factory(args=[f"--warehouse=file://{wh}", "--threads=8", "--db-lock-timeout-ms=60000"],
                     env={"FLOE_DATABASE_URL": postgres.new_database()})
    for ns in ("held", "free", "near"):
        f.create_namespace([ns])
    results = {}

    def go(key, ns, name, **extra):
        results[key] = create(f, ns, name, **extra)

    with psycopg.connect(database_url(f), autocommit=True) as watcher, \
            psycopg.connect(database_url(f)) as holder:
        holder.execute("SELECT 1 FROM namespaces WHERE levels = ARRAY['held'] FOR UPDATE")
        held = threading.Thread(target=go, args=("held", "held", "t"))
        held.start()
        try:
            assert wait_until(lambda: waiting(watcher, "tuple", "INSERT INTO tables") +
                              waiting(watcher, "transactionid", "INSERT INTO tables") == 1, 10), \
                "the held create never reached its insert"

            # Disjoint: lands while the held create is in flight.
            for ns, name, extra in (("free", "u", {}),
                                    ("near", "v", {"location": f"file://{wh}/held-too/v"})):
                try:
                    r = create(f, ns, name, timeout=10, **extra)
                except requests.Timeout:
                    pytest.fail(f"create {ns}.{name} waited for a create at a disjoint location")
                assert r.status_code == 200, describe(r)
            assert held.is_alive(), "the held create finished early"

            # Overlapping, inside it and holding it: both wait for it. One
            # after the other, so neither is read by the HTTP thread the
            # other one holds while it waits.
            inside = threading.Thread(target=go, args=("inside", "near", "inside"),
                                      kwargs={"location": f"file://{wh}/held/t/inner"})
            holding = threading.Thread(target=go, args=("holding", "near", "holding"),
                                       kwargs={"location": f"file://{wh}/held"})
            for n, t in enumerate((inside, holding), 1):
                t.start()
                assert wait_until(lambda: waiting(watcher, "advisory", "") == n, 20), (
                    f"the overlapping creates did not wait for the held one: "
                    f"{ {k: describe(r) for k, r in results.items()} }")
            assert "inside" not in results and "holding" not in results
        finally:
            holder.rollback()
            held.join(30)
    inside.join(30)
    holding.join(30)
    assert_ok_json(results["held"])
    assert_error(results["inside"], 400, "BadRequestException", message_has="overlaps")
    assert_error(results["holding"], 400, "BadRequestException", message_has="overlaps")
