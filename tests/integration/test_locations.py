"""Table locations and purges against the real daemon: canonical locations,
symbolic links, the no-overlap rule under concurrency, purges as tombstones
run by the janitor (retried, visible, never deleting a table that replaced
the dropped one), register's file checks, and the janitor's other upkeep."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from conftest import (
    TableHandle,
    assert_error,
    assert_ok_json,
    audit_events,
    database_url,
    describe,
    make_shared_tmpdir,
    wait_until,
)

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "data", "required": False, "type": "string"},
    ],
}


# --------------------------------------------------------------------------
# helpers


def tables_url(ns) -> str:
    return f"/v1/namespaces/{'%1F'.join(quote(l, safe='') for l in ns)}/tables"


def table_url(ns, name) -> str:
    return f"{tables_url(ns)}/{quote(name, safe='')}"


def create(f, ns, name, **extra) -> requests.Response:
    body = {"name": name, "schema": SCHEMA}
    body.update(extra)
    return f.post(tables_url(ns), json=body)


def create_ok(f, ns, name, **extra) -> dict:
    return assert_ok_json(create(f, ns, name, **extra))


def commit(f, ns, name, updates, requirements=()) -> requests.Response:
    return f.post(table_url(ns, name), json={"requirements": list(requirements), "updates": list(updates)})


def set_prop(f, ns, name, key, value) -> dict:
    return assert_ok_json(commit(f, ns, name, [{"action": "set-properties", "updates": {key: value}}]))


def drop_purge(f, ns, name):
    r = f.delete(table_url(ns, name), params={"purgeRequested": "true"})
    assert r.status_code == 204, describe(r)


def local(uri: str) -> Path:
    assert uri.startswith("file:///"), uri
    return Path(uri[len("file://"):])


def listing(directory: Path) -> dict:
    out = {}
    for root, _dirs, files in os.walk(directory):
        for name in files:
            p = Path(root) / name
            out[str(p.relative_to(directory))] = p.read_bytes()
    return out


def purges(f, base="/v1") -> list:
    return assert_ok_json(f.get(f"{base}/purges"))["purges"]


def wait_no_purges(f, timeout=20.0):
    assert wait_until(lambda: purges(f) == [], timeout), f"purges left: {purges(f)}"


def psql(psql_bin, url, sql) -> str:
    res = subprocess.run([str(psql_bin), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-d", url, "-c", sql],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, f"psql failed: {res.stderr}"
    return res.stdout.strip()


def assert_victim_intact(f, ns, name, created, files_before, table_dir):
    body = assert_ok_json(f.get(table_url(ns, name)))
    assert body["metadata-location"] == created["metadata-location"]
    assert local(body["metadata-location"]).is_file(), "the victim's current metadata file is gone"
    assert listing(table_dir) == files_before, "the victim's files changed"


@pytest.fixture
def wh_floe(postgres, floe_factory):
    """A floe with --warehouse in a scratch directory and a janitor that runs
    every second. Returns (floe, scratch, warehouse)."""
    scratch = make_shared_tmpdir("floe-it-loc-")
    wh = scratch / "wh"
    try:
        f = floe_factory(args=[f"--warehouse=file://{wh}", "--janitor-interval-seconds=1"],
                         env={"FLOE_DATABASE_URL": postgres.new_database()})
        yield f, scratch, wh
    finally:
        subprocess.run(["chattr", "-R", "-i", str(scratch)], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


def make_victim(f, wh, ns=("ns",)):
    f.create_namespace(list(ns))
    created = create_ok(f, list(ns), "victim")
    loc = created["metadata"]["location"]
    assert loc == f"file://{wh}/{'/'.join(ns)}/victim"
    set_prop(f, list(ns), "victim", "k", "v")
    created = assert_ok_json(f.get(table_url(list(ns), "victim")))
    table_dir = local(loc)
    (table_dir / "data").mkdir()
    (table_dir / "data" / "part-0.parquet").write_bytes(b"PAR1 victim PAR1")
    return created, table_dir, listing(table_dir)


# --------------------------------------------------------------------------
# 1. canonical locations


def alias_forms(wh):
    v = f"{wh}/ns/victim"
    return [
        f"file://{wh}/ns/./victim",
        f"file://{wh}/ns//victim",
        f"{v}",                                  # a bare path
        f"file:{v}",                             # one slash, as Java and Hadoop write it
        f"file://{wh}/ns/other/../victim",
        f"file:////{wh}/ns/victim/",
        f"file://localhost{v}",
        f"file://{wh}/ns/./victim/inner",        # inside the victim
        f"file://{wh}/./ns",                     # holding the victim
        f"{wh}//ns",
    ]


def test_every_alias_of_a_location_is_refused_and_the_victim_survives(wh_floe):
    f, _scratch, wh = wh_floe
    created, table_dir, before = make_victim(f, wh)
    for i, loc in enumerate(alias_forms(wh)):
        r = create(f, ["ns"], f"alias{i}", location=loc)
        if r.status_code == 200:
            # The bug this guards against: purge the alias, then look.
            drop_purge(f, ["ns"], f"alias{i}")
            time.sleep(3)
        assert_error(r, 400, "BadRequestException", message_has="overlaps")
        assert_victim_intact(f, ["ns"], "victim", created, before, table_dir)

    # A commit that moves another table onto an alias is refused the same way.
    create_ok(f, ["ns"], "mover")
    for loc in alias_forms(wh):
        r = commit(f, ["ns"], "mover", [{"action": "set-location", "location": loc}])
        assert_error(r, 400, "BadRequestException", message_has="overlaps")
    assert_victim_intact(f, ["ns"], "victim", created, before, table_dir)

    # Dropping and purging the other table leaves the victim alone.
    drop_purge(f, ["ns"], "mover")
    wait_no_purges(f)
    assert_victim_intact(f, ["ns"], "victim", created, before, table_dir)


def test_locations_in_any_spelling_are_stored_canonically(wh_floe):
    f, _scratch, wh = wh_floe
    f.create_namespace(["ns"])
    given = f"file:{wh}/ns/./java//style/"
    body = create_ok(f, ["ns"], "java", location=given)
    # The metadata keeps the client's spelling (without the trailing '/');
    # the files are where the canonical form says.
    assert body["metadata"]["location"] == given.rstrip("/")
    assert body["metadata-location"].startswith(f"file://{wh}/ns/java/style/metadata/"), body["metadata-location"]
    assert local(body["metadata-location"]).is_file()
    assert_error(create(f, ["ns"], "again", location=f"file://{wh}/ns/java/style"), 400,
                 "BadRequestException", message_has="overlaps")
    # '..' above '/' is refused, as are other hosts and schemes.
    for bad in ("file:///../../etc", "/..", "file://otherhost/x", "s3://bucket/x"):
        assert_error(create(f, ["ns"], "bad", location=bad), 400, "BadRequestException")


def test_purge_of_a_legacy_aliasing_table_keeps_the_victims_files(wh_floe, psql_bin):
    """A table that shares a location from before canonical locations (put
    there behind floe's back): its purge must not take the victim's files."""
    f, _scratch, wh = wh_floe
    created, table_dir, before = make_victim(f, wh)
    url = database_url(f)
    psql(psql_bin, url,
         "INSERT INTO tables (namespace_id, name, table_uuid, location, metadata_location, metadata, version) "
         f"SELECT id, 'legacy', '{uuid.uuid4()}', 'file://{wh}/ns/./victim', "
         f"'file://{wh}/ns/victim/metadata/none.json', '{{}}', 1 FROM namespaces WHERE levels = ARRAY['ns']")
    drop_purge(f, ["ns"], "legacy")
    assert wait_until(lambda: [p for p in purges(f) if p["state"] == "failed"], 15), purges(f)
    (p,) = purges(f)
    assert "victim" in p["last-error"], p
    assert_victim_intact(f, ["ns"], "victim", created, before, table_dir)


# --------------------------------------------------------------------------
# symbolic links


def test_symlink_out_of_the_warehouse_is_refused_everywhere(wh_floe):
    f, scratch, wh = wh_floe
    f.create_namespace(["ns"])
    create_ok(f, ["ns"], "plain")             # makes <wh>/ns exist
    outside = scratch / "outside"
    outside.mkdir()
    (outside / "precious").write_text("never touch")
    link = wh / "ns" / "link"
    link.symlink_to(outside, target_is_directory=True)

    # create
    for loc in (f"file://{link}", f"file://{link}/t", f"{link}/deeper/t"):
        assert_error(create(f, ["ns"], "escape", location=loc), 400, "BadRequestException",
                     message_has="symbolic link")
    # commit with a new location
    r = commit(f, ["ns"], "plain", [{"action": "set-location", "location": f"file://{link}/moved"}])
    assert_error(r, 400, "BadRequestException", message_has="symbolic link")
    assert assert_ok_json(f.get(table_url(["ns"], "plain")))["metadata"]["location"] == f"file://{wh}/ns/plain"

    # register: a metadata file reached through the link, and a file inside
    # the warehouse whose location goes through the link
    plain = assert_ok_json(f.get(table_url(["ns"], "plain")))
    meta = json.loads(local(plain["metadata-location"]).read_text())
    meta["table-uuid"] = str(uuid.uuid4())
    (outside / "m.metadata.json").write_text(json.dumps(meta))
    r = f.post("/v1/namespaces/ns/register", json={"name": "reg1", "metadata-location": f"file://{link}/m.metadata.json"})
    assert_error(r, 400, "BadRequestException")
    meta["location"] = f"file://{link}/reg2"
    inside = wh / "ns" / "reg2.metadata.json"
    inside.write_text(json.dumps(meta))
    r = f.post("/v1/namespaces/ns/register", json={"name": "reg2", "metadata-location": f"file://{inside}"})
    assert_error(r, 400, "BadRequestException", message_has="symbolic link")
    # the metadata file itself a symbolic link
    (wh / "ns" / "m-link.metadata.json").symlink_to(outside / "m.metadata.json")
    r = f.post("/v1/namespaces/ns/register",
               json={"name": "reg3", "metadata-location": f"file://{wh}/ns/m-link.metadata.json"})
    assert_error(r, 400, "BadRequestException")
    assert sorted(p.name for p in outside.iterdir()) == ["m.metadata.json", "precious"], "floe wrote outside"

    # purge: the table directory replaced by a link to the outside, and a
    # link inside a table directory
    target = scratch / "target"
    target.mkdir()
    (target / "data.parquet").write_bytes(b"outside data")
    swapped = create_ok(f, ["ns"], "swapped")
    sdir = local(swapped["metadata"]["location"])
    shutil.rmtree(sdir)
    sdir.symlink_to(target, target_is_directory=True)
    inner = create_ok(f, ["ns"], "inner")
    idir = local(inner["metadata"]["location"])
    target2 = scratch / "target2"
    target2.mkdir()
    (target2 / "keep").write_text("keep")
    (idir / "data").symlink_to(target2, target_is_directory=True)

    drop_purge(f, ["ns"], "swapped")
    drop_purge(f, ["ns"], "inner")
    assert wait_until(lambda: not idir.exists() and len(purges(f)) == 1
                      and purges(f)[0]["state"] == "failed", 15), purges(f)
    (p,) = purges(f)
    assert p["location"] == swapped["metadata"]["location"], p
    assert "symbolic link" in p["last-error"], p
    assert (target / "data.parquet").read_bytes() == b"outside data"
    assert (target2 / "keep").read_text() == "keep"
    assert (outside / "precious").read_text() == "never touch"
    assert "WARN" in f.log() and str(sdir) in f.log()


# --------------------------------------------------------------------------
# 2. the no-overlap rule under concurrency


def test_concurrent_nested_creates_one_wins(postgres, floe_factory):
    """Several replicas, many threads, nested locations at once: exactly one
    create wins each round."""
    scratch = make_shared_tmpdir("floe-it-loc-race-")
    wh = scratch / "wh"
    try:
        db = postgres.new_database()
        replicas = [floe_factory(args=[f"--warehouse=file://{wh}", "--threads=8"],
                                 env={"FLOE_DATABASE_URL": db}) for _ in range(2)]
        replicas[0].create_namespace(["race"])
        n = 12
        for rnd in range(6):
            same_name = rnd % 3 == 2
            base = f"{wh}/race/r{rnd}"
            locs = [base + "".join(f"/d{k}" for k in range(i)) for i in range(n)]
            barrier = threading.Barrier(n)
            results = [None] * n

            def go(i):
                f = replicas[i % len(replicas)]
                name = f"same{rnd}" if same_name else f"t{rnd}_{i}"
                barrier.wait()
                results[i] = requests.post(f.url + tables_url(["race"]), timeout=30,
                                           json={"name": name, "schema": SCHEMA, "location": locs[i]})

            threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            statuses = [r.status_code for r in results]
            assert statuses.count(200) == 1, f"round {rnd}: {statuses} {[r.text[:200] for r in results]}"
            for r in results:
                if r.status_code != 200:
                    if same_name:
                        assert r.status_code == 409, describe(r)
                        assert_error(r, r.status_code,
                                     "BadRequestException" if r.status_code == 400 else "AlreadyExistsException")
                    else:
                        assert_error(r, 400, "BadRequestException", message_has="overlaps")
            # Every loser's metadata file is gone: only the winner's exists.
            metas = [p for p in Path(base).rglob("*.metadata.json")]
            assert len(metas) == 1, metas
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def race_pair(replicas, ns, names, locs):
    """Creates names[i] at locs[i] on replicas[i], both at once."""
    barrier = threading.Barrier(2)
    results = [None, None]

    def go(i):
        f = replicas[i]
        barrier.wait()
        results[i] = requests.post(f.url + tables_url(ns), timeout=30,
                                   json={"name": names[i], "schema": SCHEMA, "location": locs[i]})

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def test_overlapping_pairs_race_across_two_replicas(postgres, floe_factory):
    """Two replicas each create one of a pair of locations at once, round
    after round: when one location holds the other (one level or many
    apart, equal, spelled with the characters an array literal quotes,
    deeper than the levels a create locks one by one) exactly one create
    lands and the other is refused; neighbours whose paths only share a
    string prefix both land."""
    scratch = make_shared_tmpdir("floe-it-loc-pairs-")
    wh = scratch / "wh"
    try:
        db = postgres.new_database()
        replicas = [floe_factory(args=[f"--warehouse=file://{wh}", "--threads=8"],
                                 env={"FLOE_DATABASE_URL": db}) for _ in range(2)]
        replicas[0].create_namespace(["pairs"])
        deep = "/".join(f"l{k}" for k in range(80))
        shapes = [
            ("b", "b/c", True),
            ("b", "b/c/d/e/f", True),
            ("b", "b", True),
            ('q"u,o{t}e \\x', 'q"u,o{t}e \\x/in"ner', True),
            ("b", f"b/{deep}", True),
            (f"b/{deep}", f"b/{deep}/z", True),
            ("b", "b-c", False),
            ("b", "b.c/d", False),
        ]
        rnd = 0
        for outer, inner, overlap in shapes:
            for k in range(6):
                rnd += 1
                base = f"{wh}/pairs/r{rnd}"
                locs = [f"file://{base}/{outer}", f"file://{base}/{inner}"]
                if k % 2:
                    locs.reverse()
                results = race_pair(replicas, ["pairs"], [f"a{rnd}", f"b{rnd}"], locs)
                statuses = [r.status_code for r in results]
                what = f"{locs}: {statuses} {[r.text[:200] for r in results]}"
                if not overlap:
                    assert statuses == [200, 200], what
                    continue
                assert sorted(statuses) == [200, 400], what
                loser = results[statuses.index(400)]
                assert_error(loser, 400, "BadRequestException", message_has="overlaps")
                metas = list(Path(base).rglob("*.metadata.json"))
                assert len(metas) == 1, metas
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# --------------------------------------------------------------------------
# 3. drop with purge racing a re-create of the same name


def test_drop_purge_racing_recreate_loses_no_commit(wh_floe):
    f, _scratch, wh = wh_floe
    f.create_namespace(["hot"])
    # Enough files that the purge takes a moment: the re-create and its
    # commits land while it runs.
    for rnd in range(5):
        old = create_ok(f, ["hot"], "t")
        old_dir = local(old["metadata"]["location"])
        for k in range(20000):
            (old_dir / "metadata" / f"snap-{k}.avro").write_bytes(b"")
        for k in range(3):
            set_prop(f, ["hot"], "t", "old", str(k))

        acked = []
        errors = []

        def recreate():
            try:
                body = None
                for _ in range(2000):
                    r = create(f, ["hot"], "t")
                    if r.status_code == 200:
                        body = r.json()
                        break
                    assert r.status_code == 409, describe(r)
                assert body is not None, "could not re-create"
                acked.append(body["metadata-location"])
                for k in range(5):
                    b = set_prop(f, ["hot"], "t", "new", f"{rnd}-{k}")
                    acked.append(b["metadata-location"])
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        th = threading.Thread(target=recreate)
        th.start()
        drop_purge(f, ["hot"], "t")
        th.join(60)
        assert not errors, errors
        wait_no_purges(f)
        cur = assert_ok_json(f.get(table_url(["hot"], "t")))
        assert cur["metadata"]["properties"]["new"] == f"{rnd}-4"
        # Every acknowledged commit's metadata file is still there.
        for loc in acked:
            assert local(loc).is_file(), f"round {rnd}: acknowledged {loc} is gone"
        assert cur["metadata-location"] == acked[-1]
        # The re-created table is dropped (without purge) for the next round.
        assert f.delete(table_url(["hot"], "t")).status_code == 204


def test_recreate_while_purge_pending_gets_its_own_location(wh_floe):
    """While a dropped table's files wait for their purge, its location is
    taken: the new table under the same name goes to <default>-<uuid>."""
    f, _scratch, wh = wh_floe
    f.create_namespace(["p"])
    old = create_ok(f, ["p"], "t")
    old_dir = local(old["metadata"]["location"])
    (old_dir / "blocker").write_text("x")
    if subprocess.run(["chattr", "+i", str(old_dir / "blocker")], capture_output=True).returncode != 0:
        pytest.skip("the file system has no immutable attribute (chattr +i)")
    try:
        drop_purge(f, ["p"], "t")
        new = create_ok(f, ["p"], "t")
        assert new["metadata"]["location"].startswith(f"file://{wh}/p/t-"), new["metadata"]["location"]
        assert new["metadata"]["location"].endswith(new["metadata"]["table-uuid"])
        # The pending location is refused to explicit creates too.
        assert_error(create(f, ["p"], "x", location=f"file://{wh}/p/t"), 400, "BadRequestException",
                     message_has="not purged yet")
    finally:
        subprocess.run(["chattr", "-i", str(old_dir / "blocker")], capture_output=True)
    wait_no_purges(f)
    assert not old_dir.exists()
    assert local(assert_ok_json(f.get(table_url(["p"], "t")))["metadata-location"]).is_file()


# --------------------------------------------------------------------------
# a purge that fails is retried and visible


def test_failed_purge_is_retried_visible_and_finishes_when_fixed(postgres, floe_factory):
    scratch = make_shared_tmpdir("floe-it-loc-fail-")
    wh = scratch / "wh"
    stuck = []
    try:
        f = floe_factory(args=[f"--warehouse=file://{wh}", "--janitor-interval-seconds=1",
                               "--purge-max-attempts=3"],
                         env={"FLOE_DATABASE_URL": postgres.new_database()})
        f.create_namespace(["db"])
        dirs = {}
        for name in ("retried", "abandoned"):
            body = create_ok(f, ["db"], name)
            d = local(body["metadata"]["location"])
            (d / "data").mkdir()
            (d / "data" / "part-0.parquet").write_bytes(b"data")
            # root ignores file modes; the immutable attribute stops root too.
            res = subprocess.run(["chattr", "+i", str(d / "data" / "part-0.parquet")], capture_output=True)
            if res.returncode != 0:
                pytest.skip(f"the file system has no immutable attribute: {res.stderr!r}")
            stuck.append(d / "data" / "part-0.parquet")
            dirs[name] = (body, d)
        drop_purge(f, ["db"], "retried")
        drop_purge(f, ["db"], "abandoned")

        def by_uuid():
            return {p["table-uuid"]: p for p in purges(f)}

        r_uuid = dirs["retried"][0]["metadata"]["table-uuid"]
        a_uuid = dirs["abandoned"][0]["metadata"]["table-uuid"]
        assert wait_until(lambda: by_uuid().get(r_uuid, {}).get("attempts", 0) >= 1, 15), purges(f)
        p = by_uuid()[r_uuid]
        assert p["state"] == "pending" and p["attempts"] < 3, p
        assert p["location"] == dirs["retried"][0]["metadata"]["location"]
        assert "part-0.parquet" in p["last-error"], p
        assert set(p) == {"location", "table-uuid", "dropped-at", "attempts", "last-error", "state"}, p
        # The same list under a prefix.
        assert r_uuid in {q["table-uuid"] for q in purges(f, "/v1/warehouse")}
        log = f.log()
        assert "WARN" in log and str(dirs["retried"][1]) in log and "part-0.parquet" in log, log[-3000:]
        assert dirs["retried"][1].exists()

        # The fault goes: the next attempt succeeds.
        subprocess.run(["chattr", "-i", str(stuck[0])], check=True)
        assert wait_until(lambda: r_uuid not in by_uuid(), 20), purges(f)
        assert not dirs["retried"][1].exists()

        # The other one runs out of attempts and stays, failed, for an operator.
        assert wait_until(lambda: by_uuid().get(a_uuid, {}).get("state") == "failed", 30), purges(f)
        p = by_uuid()[a_uuid]
        assert p["attempts"] == 3, p
        subprocess.run(["chattr", "-i", str(stuck[1])], check=True)
        time.sleep(3)
        assert by_uuid()[a_uuid]["state"] == "failed"
        assert dirs["abandoned"][1].exists(), "a failed purge is not retried behind the operator's back"
        assert "failed for good" in f.log()
    finally:
        for s in stuck:
            subprocess.run(["chattr", "-i", str(s)], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


# --------------------------------------------------------------------------
# 5. register reads only regular files, of a bounded size


def test_register_refuses_a_fifo_fast(wh_floe):
    f, _scratch, wh = wh_floe
    f.create_namespace(["reg"])
    (wh / "reg").mkdir(parents=True, exist_ok=True)
    fifo = wh / "reg" / "pipe.metadata.json"
    os.mkfifo(fifo)
    started = time.monotonic()
    results = []

    def one():
        results.append(f.post("/v1/namespaces/reg/register",
                              json={"name": "pipe", "metadata-location": f"file://{fifo}"}, timeout=10))

    # More requests than HTTP workers: a worker stuck on the FIFO would
    # block the rest.
    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert time.monotonic() - started < 5, "register blocked on a FIFO"
    assert len(results) == 8
    for r in results:
        assert_error(r, 400, "BadRequestException", message_has="regular file")
    assert_ok_json(f.get("/v1/config"))
    # A directory is not a metadata file either.
    (wh / "reg" / "dir.metadata.json").mkdir()
    assert_error(f.post("/v1/namespaces/reg/register",
                        json={"name": "d", "metadata-location": f"file://{wh}/reg/dir.metadata.json"}),
                 400, "BadRequestException", message_has="regular file")


def test_register_refuses_an_oversized_file_before_reading_it(wh_floe):
    f, _scratch, wh = wh_floe
    f.create_namespace(["reg"])
    (wh / "reg").mkdir(parents=True, exist_ok=True)
    big = wh / "reg" / "big.metadata.json"
    with open(big, "wb") as fh:
        fh.write(b"{")
        fh.truncate(64 * 1024 * 1024 + 1)      # sparse: costs no disk
    started = time.monotonic()
    r = f.post("/v1/namespaces/reg/register", json={"name": "big", "metadata-location": f"file://{big}"})
    assert_error(r, 400, "BadRequestException", message_has="larger than")
    assert time.monotonic() - started < 2


# --------------------------------------------------------------------------
# 4. the janitor's other upkeep


def test_janitor_removes_expired_keys_old_metrics_and_orphan_tmp_files(wh_floe, psql_bin):
    f, _scratch, wh = wh_floe
    url = database_url(f)
    f.create_namespace(["jan"])
    body = create_ok(f, ["jan"], "t")
    old_key, new_key = str(uuid.uuid4()), str(uuid.uuid4())
    for key, name in ((old_key, "k1"), (new_key, "k2")):
        r = f.post("/v1/namespaces", json={"namespace": [f"idem_{name}"]}, headers={"Idempotency-Key": key})
        assert r.status_code == 200, describe(r)
    report = {"report-type": "scan-report", "table-name": "jan.t", "snapshot-id": 1,
              "filter": {"type": "true"}, "schema-id": 0, "projected-field-ids": [1],
              "projected-field-names": ["id"], "metrics": {}}
    for _ in range(2):
        r = f.post(table_url(["jan"], "t") + "/metrics", json=report)
        assert r.status_code == 204, describe(r)
    assert psql(psql_bin, url, "SELECT count(*) FROM metrics_reports") == "2"
    psql(psql_bin, url, f"UPDATE idempotency_keys SET created_at = now() - interval '2 hours' WHERE key = '{old_key}'")
    psql(psql_bin, url, "UPDATE metrics_reports SET received_at = now() - interval '8 days' "
                        "WHERE id = (SELECT min(id) FROM metrics_reports)")
    meta_dir = local(body["metadata-location"]).parent
    old_tmp = meta_dir / "00007-0b3c.metadata.json.tmp"
    new_tmp = meta_dir / "00008-0b3d.metadata.json.tmp"
    other = meta_dir / "notes.tmp"
    for p in (old_tmp, new_tmp, other):
        p.write_text("partial")
    past = time.time() - 3600
    os.utime(old_tmp, (past, past))
    os.utime(other, (past, past))

    def done():
        keys = psql(psql_bin, url, "SELECT string_agg(key, ',') FROM idempotency_keys")
        metrics = psql(psql_bin, url, "SELECT count(*) FROM metrics_reports")
        return old_key not in keys and metrics == "1" and not old_tmp.exists()

    assert wait_until(done, 15), (psql(psql_bin, url, "SELECT key, created_at FROM idempotency_keys"),
                                  psql(psql_bin, url, "SELECT id, received_at FROM metrics_reports"),
                                  sorted(p.name for p in meta_dir.iterdir()))
    assert new_key in psql(psql_bin, url, "SELECT string_agg(key, ',') FROM idempotency_keys")
    assert new_tmp.exists(), "a fresh temporary file may belong to a commit in flight"
    assert other.exists(), "only *.metadata.json.tmp files are floe's"
    assert local(body["metadata-location"]).is_file()


def test_janitor_stops_cleanly_on_sigterm(wh_floe):
    f, _scratch, _wh = wh_floe
    import signal
    assert f.stop(signal.SIGTERM, timeout=15) == 0
    assert "janitor" in f.log()


# --------------------------------------------------------------------------
# several janitors, and a floe killed in the middle of a purge


def test_janitors_of_two_replicas_share_the_purges(postgres, floe_factory):
    scratch = make_shared_tmpdir("floe-it-loc-jan2-")
    wh = scratch / "wh"
    try:
        db = postgres.new_database()
        a, b = (floe_factory(args=[f"--warehouse=file://{wh}", "--janitor-interval-seconds=1"],
                             env={"FLOE_DATABASE_URL": db}) for _ in range(2))
        a.create_namespace(["many"])
        dirs = []
        for i in range(20):
            body = create_ok(a, ["many"], f"t{i}")
            d = local(body["metadata"]["location"])
            for k in range(50):
                (d / f"f{k}").write_bytes(b"x")
            dirs.append(d)
        for i in range(20):
            drop_purge(a if i % 2 else b, ["many"], f"t{i}")
        wait_no_purges(a)
        assert not any(d.exists() for d in dirs), [str(d) for d in dirs if d.exists()]
        done = [line for f in (a, b) for line in f.log().splitlines() if "[janitor] purged" in line]
        assert len(done) == 20, done
        assert len({line.split("purged ")[1].split(" ")[0] for line in done}) == 20, "a purge ran twice"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_kill_during_a_purge_keeps_the_tombstone(postgres, floe_factory, psql_bin):
    """kill -9 while the janitor purges: the location is never left with
    neither a table nor a tombstone, and the next floe finishes the job."""
    scratch = make_shared_tmpdir("floe-it-loc-kill-")
    wh = scratch / "wh"
    try:
        db = postgres.new_database()
        args = [f"--warehouse=file://{wh}", "--janitor-interval-seconds=1"]
        f = floe_factory(args=args, env={"FLOE_DATABASE_URL": db})
        f.create_namespace(["k"])
        body = create_ok(f, ["k"], "big")
        d = local(body["metadata"]["location"])
        (d / "data").mkdir()
        for k in range(30000):
            (d / "data" / f"f{k}").write_bytes(b"")
        drop_purge(f, ["k"], "big")
        time.sleep(0.05)
        f.kill()
        rows = psql(psql_bin, db, "SELECT count(*) FROM purges")
        if d.exists():
            assert rows == "1", "files left behind with no tombstone"
        g = floe_factory(args=args, env={"FLOE_DATABASE_URL": db})
        wait_no_purges(g, 60)
        assert not d.exists()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_janitor_fails_runs_left_auditing_past_their_lease(wh_floe, psql_bin, webhooks, hooks):
    """A floe that stopped mid-audit leaves its run 'auditing': once the
    lease is over the janitor fails it, with its audit event, and the run
    can be published again."""
    f, _scratch, _wh = wh_floe
    url = database_url(f)
    f.create_namespace(["stale"])
    t = TableHandle(f, ["stale"], "t")
    t.create()
    t.add_snapshot()
    run = t.stage()
    t.add_snapshot(ref=run["branch"])
    live = t.stage()
    # As a stopped floe leaves it: auditing, its lease over. And one whose
    # lease still runs, which the janitor must leave alone.
    psql(psql_bin, url, "UPDATE wap_runs SET state = 'auditing', lease_owner = gen_random_uuid(), "
                        f"lease_until = now() - interval '1 minute' WHERE id = '{run['id']}'")
    psql(psql_bin, url, "UPDATE wap_runs SET state = 'auditing', lease_owner = gen_random_uuid(), "
                        f"lease_until = now() + interval '1 hour' WHERE id = '{live['id']}'")
    assert wait_until(lambda: t.run(run["id"])["state"] == "audit-failed", 15), t.run(run["id"])
    events = [e for e in audit_events(f, run=run["id"]) if e["event"] == "wap.lease-expired"]
    assert len(events) == 1 and events[0]["details"]["state"] == "audit-failed", events
    assert t.run(live["id"])["state"] == "auditing"
    receiver = webhooks()
    hooks(f, "pass", receiver.url, scope={"namespace": ["stale"]})
    r = t.publish(run["id"])
    assert r.status_code == 200, describe(r)
    assert r.json()["state"] == "published"
