"""The request shapes engines send, against the real daemon: DuckDB's create
commit, Trino's create transaction and namespace location, the one-slash
file:/ locations Java and Hadoop write, metadata files dropped after a
commit, and the names and schemas every create must accept or refuse.

Each body here is the one the engine sends (read from its sources), so a
test failing here is an engine statement failing for a user."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import assert_error, assert_ok_json, describe, make_shared_tmpdir, ns_path

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "name", "required": False, "type": "string"},
    ],
}


# --------------------------------------------------------------------------
# helpers


def warehouse_of(f) -> Path:
    return f.workdir / "data" / "warehouse"


def tables_url(ns) -> str:
    return f"/v1/namespaces/{ns_path(ns)}/tables"


def table_url(ns, name) -> str:
    return f"{tables_url(ns)}/{quote(name, safe='')}"


def files_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.exists() else []


@pytest.fixture
def ns(floe, uniq):
    floe.create_namespace([uniq])
    return [uniq]


def stage(f, ns, name, **extra) -> dict:
    body = {"name": name, "schema": SCHEMA, "stage-create": True}
    body.update(extra)
    return assert_ok_json(f.post(tables_url(ns), json=body))


def duckdb_create_updates(meta: dict, spec_fields=(), data=()) -> list:
    """The updates of DuckDB's create commit (IcebergTableSet::Create and
    StageSingleTableCommit): the spec and order come before
    set-current-schema, which is sent last, after any data."""
    return [
        {"action": "assign-uuid", "uuid": meta["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": meta["format-version"]},
        {"action": "add-schema", "schema": SCHEMA, "last-column-id": 2},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": list(spec_fields)}},
        {"action": "set-default-spec", "spec-id": 0},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": 0},
        {"action": "set-location", "location": meta["location"]},
        {"action": "set-properties", "updates": {}},
        *data,
        {"action": "set-current-schema", "schema-id": 0},
    ]


# --------------------------------------------------------------------------
# DuckDB: the spec before set-current-schema


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_duckdb_create_commit_spec_before_current_schema(floe, ns, partitioned):
    staged = stage(floe, ns, "duck")
    fields = [{"name": "id", "transform": "identity", "source-id": 1, "field-id": 1000}] if partitioned else []
    r = floe.post(table_url(ns, "duck"), json={
        "identifier": {"namespace": ns, "name": "duck"},
        "requirements": [{"type": "assert-create"}],
        "updates": duckdb_create_updates(staged["metadata"], fields),
    })
    body = assert_ok_json(r)
    meta = body["metadata"]
    assert meta["current-schema-id"] == 0
    assert meta["schemas"] == [SCHEMA]
    assert meta["partition-specs"] == [{"spec-id": 0, "fields": fields}]
    assert meta["last-partition-id"] == (1000 if partitioned else 999)
    assert meta["default-spec-id"] == 0 and meta["default-sort-order-id"] == 0
    loaded = assert_ok_json(floe.get(table_url(ns, "duck")))
    assert loaded["metadata-location"] == body["metadata-location"]
    assert loaded["metadata"] == meta


def test_duckdb_create_table_as_commit(floe, ns):
    staged = stage(floe, ns, "ctas")
    loc = staged["metadata"]["location"]
    sid = 4242
    data = [
        {"action": "add-snapshot", "snapshot": {
            "snapshot-id": sid, "sequence-number": 1, "timestamp-ms": 1767229100000,
            "manifest-list": f"{loc}/metadata/snap-{sid}.avro",
            "summary": {"operation": "append", "added-records": "3"}, "schema-id": 0}},
        {"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": sid, "type": "branch"},
    ]
    r = floe.post(table_url(ns, "ctas"), json={
        "requirements": [{"type": "assert-create"}],
        "updates": duckdb_create_updates(staged["metadata"], data=data),
    })
    meta = assert_ok_json(r)["metadata"]
    assert meta["current-snapshot-id"] == sid
    assert meta["refs"] == {"main": {"snapshot-id": sid, "type": "branch"}}


def test_partitioned_spec_without_any_schema_is_refused(floe, ns):
    staged = stage(floe, ns, "noschema")
    updates = [u for u in duckdb_create_updates(
        staged["metadata"], [{"name": "id", "transform": "identity", "source-id": 1, "field-id": 1000}])
        if u["action"] != "add-schema"]
    r = floe.post(table_url(ns, "noschema"), json={"requirements": [{"type": "assert-create"}],
                                                   "updates": updates})
    assert_error(r, 400, "BadRequestException", message_has="schema")
    assert floe.head(table_url(ns, "noschema")).status_code == 404, describe(r)


# --------------------------------------------------------------------------
# Trino: the namespace location, and a create transaction that fails


def java_create_updates(meta: dict, location: str) -> list:
    """The updates of the Java client's create transaction (RESTSessionCatalog
    createTransaction, which Trino's TrinoRestCatalog uses)."""
    return [
        {"action": "assign-uuid", "uuid": meta["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": SCHEMA, "last-column-id": 2},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": location},
        {"action": "set-properties", "updates": {"write.format.default": "PARQUET"}},
    ]


def test_namespace_without_location_answers_its_default_location(floe, uniq):
    wh = warehouse_of(floe)
    created = floe.create_namespace([uniq])
    assert created["properties"] == {"location": f"file://{wh}/{uniq}"}
    floe.create_namespace([uniq, "a b/c"], {"owner": "ana"})
    loaded = assert_ok_json(floe.get(f"/v1/namespaces/{ns_path([uniq, 'a b/c'])}"))
    # The levels are escaped as in a table's default location.
    assert loaded["properties"] == {"owner": "ana", "location": f"file://{wh}/{uniq}/a b%2Fc"}

    # A table created without a location lands below it.
    t = assert_ok_json(floe.post(tables_url([uniq, "a b/c"]), json={"name": "t", "schema": SCHEMA}))
    assert t["metadata"]["location"] == f"file://{wh}/{uniq}/a b%2Fc/t"

    # The default is not stored: a location set replaces it, and removing it
    # brings the default back.
    url = f"/v1/namespaces/{uniq}/properties"
    assert_ok_json(floe.post(url, json={"updates": {"location": "file:///elsewhere/x"}}))
    assert assert_ok_json(floe.get(f"/v1/namespaces/{uniq}"))["properties"] == {"location": "file:///elsewhere/x"}
    body = assert_ok_json(floe.post(url, json={"removals": ["location"]}))
    assert body["removed"] == ["location"]
    assert assert_ok_json(floe.get(f"/v1/namespaces/{uniq}"))["properties"] == {"location": f"file://{wh}/{uniq}"}


def trino_table_location(f, ns, name) -> str:
    """Where Trino puts a new table (TrinoRestCatalog.defaultTableLocation
    with iceberg.unique-table-location): below the namespace's location."""
    nsloc = assert_ok_json(f.get(f"/v1/namespaces/{ns_path(ns)}"))["properties"].get("location")
    assert nsloc, "no namespace location: Trino would create the table unstaged"
    return f"{nsloc}/{name}-{uuid.uuid4().hex}"


def local(location: str) -> Path:
    assert location.startswith("file://"), location
    return Path(location[len("file://"):])


def test_trino_create_table_in_a_schema_without_location(floe, ns):
    location = trino_table_location(floe, ns, "orders")
    staged = stage(floe, ns, "orders", location=location)
    assert staged["metadata-location"] is None
    assert staged["metadata"]["location"] == location
    # Trino refuses to create a table on a non-empty location: staging
    # must leave it without files, and register nothing. The empty
    # metadata/ directory is there for engines that write below it before
    # their commit (DuckDB).
    assert files_under(local(location)) == []
    assert (local(location) / "metadata").is_dir()
    assert floe.head(table_url(ns, "orders")).status_code == 404
    r = floe.post(table_url(ns, "orders"), json={
        "requirements": [{"type": "assert-create"}],
        "updates": java_create_updates(staged["metadata"], location)})
    body = assert_ok_json(r)
    assert body["metadata"]["location"] == location
    assert body["metadata-location"].startswith(f"{location}/metadata/00000-")
    assert [p.name for p in files_under(local(location))] == [body["metadata-location"].rsplit("/", 1)[1]]


def test_failed_create_commit_leaves_nothing_and_a_retry_works(floe, ns):
    location = trino_table_location(floe, ns, "retried")
    staged = stage(floe, ns, "retried", location=location)
    good = java_create_updates(staged["metadata"], location)

    # A create commit that fails: an invalid update, then a requirement
    # the create may not carry.
    bad = good + [{"action": "set-default-spec", "spec-id": 7}]
    assert_error(floe.post(table_url(ns, "retried"), json={
        "requirements": [{"type": "assert-create"}], "updates": bad}), 400, "BadRequestException")
    assert_error(floe.post(table_url(ns, "retried"), json={
        "requirements": [{"type": "assert-create"}, {"type": "assert-current-schema-id", "current-schema-id": 0}],
        "updates": good}), 400, "BadRequestException")
    assert floe.head(table_url(ns, "retried")).status_code == 404
    assert assert_ok_json(floe.get(tables_url(ns)))["identifiers"] == []
    assert files_under(local(location)) == []

    # The retry (Trino's next CREATE TABLE) is not told it already exists.
    staged = stage(floe, ns, "retried", location=location)
    body = assert_ok_json(floe.post(table_url(ns, "retried"), json={
        "requirements": [{"type": "assert-create"}],
        "updates": java_create_updates(staged["metadata"], location)}))
    assert body["metadata"]["location"] == location


def test_failed_create_at_a_taken_location_leaves_nothing(floe, ns):
    """A create whose location is another table's is refused before any
    file is written, and the other table's files are left as they were."""
    first = assert_ok_json(floe.post(tables_url(ns), json={"name": "first", "schema": SCHEMA}))
    taken = first["metadata"]["location"]
    before = files_under(local(taken))
    staged = stage(floe, ns, "second")
    r = floe.post(table_url(ns, "second"), json={
        "requirements": [{"type": "assert-create"}],
        "updates": java_create_updates(staged["metadata"], taken + "/inner")})
    assert_error(r, 400, "BadRequestException", message_has="overlaps")
    assert floe.head(table_url(ns, "second")).status_code == 404
    assert files_under(local(taken)) == before


# --------------------------------------------------------------------------
# file:/path, as Java and Hadoop write it, is file:///path


@pytest.fixture
def one_slash_floe(postgres, floe_factory):
    """A floe whose warehouse is given as file:/path."""
    scratch = make_shared_tmpdir("floe-it-oneslash-")
    wh = scratch / "wh"
    try:
        yield floe_factory(args=[f"--warehouse=file:{wh}/"],
                           env={"FLOE_DATABASE_URL": postgres.new_database()}), wh
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def snapshot_commit(f, ns, name, meta, sid):
    loc = meta["location"]
    return f.post(table_url(ns, name), json={
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}],
        "updates": [
            {"action": "add-snapshot", "snapshot": {
                "snapshot-id": sid, "sequence-number": meta["last-sequence-number"] + 1,
                "timestamp-ms": meta["last-updated-ms"], "manifest-list": f"{loc}/metadata/snap-{sid}.avro",
                "summary": {"operation": "append"}, "schema-id": 0}},
            {"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": sid, "type": "branch"}]})


def test_one_slash_file_locations_are_the_same_place(one_slash_floe):
    f, wh = one_slash_floe
    f.create_namespace(["db"])
    # The warehouse given as file:/path is file:///path.
    assert assert_ok_json(f.get("/v1/namespaces/db"))["properties"]["location"] == f"file://{wh}/db"
    made = assert_ok_json(f.post(tables_url(["db"]), json={"name": "plain", "schema": SCHEMA}))
    assert made["metadata"]["location"] == f"file://{wh}/db/plain"

    # A table created at file:/path is written there and takes commits.
    t = assert_ok_json(f.post(tables_url(["db"]), json={
        "name": "java", "schema": SCHEMA, "location": f"file:{wh}/db/java_t"}))
    assert t["metadata"]["location"] == f"file:{wh}/db/java_t", "the location is kept as the client wrote it"
    assert local(t["metadata-location"]).parent == wh / "db" / "java_t" / "metadata"
    after = assert_ok_json(snapshot_commit(f, ["db"], "java", t["metadata"], 101))
    assert local(after["metadata-location"]).is_file()
    assert after["metadata-location"].startswith(f"file://{wh}/db/java_t/metadata/00001-")

    # The same place in the other spelling, or inside it, is taken.
    for other in (f"file://{wh}/db/java_t", f"file:{wh}/db/java_t/", f"file:///{wh}/db/java_t/sub",
                  f"{wh}/db/java_t"):
        r = f.post(tables_url(["db"]), json={"name": "clash", "schema": SCHEMA, "location": other})
        assert_error(r, 400, "BadRequestException", message_has="overlaps")
    # And outside the warehouse is outside, in either spelling.
    r = f.post(tables_url(["db"]), json={"name": "out", "schema": SCHEMA, "location": f"file:{wh.parent}/elsewhere"})
    assert_error(r, 400, "BadRequestException", message_has="outside")

    # A staged create and its commit at file:/path (Trino below a namespace
    # location written file:/...).
    assert_ok_json(f.post("/v1/namespaces/db/properties", json={"updates": {"location": f"file:{wh}/db"}}))
    loc = trino_table_location(f, ["db"], "staged")
    assert loc.startswith(f"file:{wh}/db/staged-")
    staged = stage(f, ["db"], "staged", location=loc)
    assert_ok_json(f.post(table_url(["db"], "staged"), json={
        "requirements": [{"type": "assert-create"}],
        "updates": java_create_updates(staged["metadata"], loc)}))

    # Register a metadata file named file:/path: dropped without purge,
    # the table comes back from its own file.
    assert f.delete(table_url(["db"], "java")).status_code == 204
    one_slash = "file:" + after["metadata-location"][len("file://"):]
    reg = assert_ok_json(f.post("/v1/namespaces/db/register", json={"name": "java", "metadata-location": one_slash}))
    assert reg["metadata"]["table-uuid"] == t["metadata"]["table-uuid"]
    assert reg["metadata"]["current-snapshot-id"] == 101
    next_ = assert_ok_json(f.post(table_url(["db"], "java"), json={
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}))
    assert local(next_["metadata-location"]).parent == wh / "db" / "java_t" / "metadata"
    assert next_["metadata"]["metadata-log"][-1]["metadata-file"] == one_slash


# --------------------------------------------------------------------------
# write.metadata.delete-after-commit.enabled


def metadata_files(location: str) -> set[str]:
    d = local(location) / "metadata"
    return {f"file://{p}" for p in d.glob("*.metadata.json")} if d.exists() else set()


def set_props(f, ns, name, **props):
    return assert_ok_json(f.post(table_url(ns, name), json={
        "updates": [{"action": "set-properties", "updates": props}]}))


def kept_files(body) -> set[str]:
    return {body["metadata-location"]} | {e["metadata-file"] for e in body["metadata"]["metadata-log"]}


def test_delete_after_commit_keeps_only_the_log_on_disk(floe, ns):
    t = assert_ok_json(floe.post(tables_url(ns), json={"name": "t", "schema": SCHEMA, "properties": {
        "write.metadata.delete-after-commit.enabled": "true", "write.metadata.previous-versions-max": "2"}}))
    loc = t["metadata"]["location"]
    body = t
    for i in range(6):
        body = set_props(floe, ns, "t", n=str(i))
        assert len(body["metadata"]["metadata-log"]) == min(i + 1, 2)
        # On disk: the current file and the ones the log names, no more.
        assert metadata_files(loc) == kept_files(body), f"after commit {i}"
    # The transactions route deletes them too.
    r = floe.post("/v1/transactions/commit", json={"table-changes": [{
        "identifier": {"namespace": ns, "name": "t"}, "requirements": [],
        "updates": [{"action": "set-properties", "updates": {"n": "tx"}}]}]})
    assert r.status_code == 204, describe(r)
    body = assert_ok_json(floe.get(table_url(ns, "t")))
    assert metadata_files(loc) == kept_files(body)
    assert len(metadata_files(loc)) == 3


def test_without_delete_after_commit_every_file_is_kept(floe, ns):
    t = assert_ok_json(floe.post(tables_url(ns), json={"name": "t", "schema": SCHEMA, "properties": {
        "write.metadata.previous-versions-max": "2"}}))
    for i in range(4):
        body = set_props(floe, ns, "t", n=str(i))
    assert len(body["metadata"]["metadata-log"]) == 2
    assert len(metadata_files(t["metadata"]["location"])) == 5


def test_delete_after_commit_failure_is_logged_and_the_commit_stands(floe, ns):
    t = assert_ok_json(floe.post(tables_url(ns), json={"name": "t", "schema": SCHEMA, "properties": {
        "write.metadata.previous-versions-max": "1"}}))
    first = t["metadata-location"]
    second = set_props(floe, ns, "t", a="1")
    # The file the next commit drops cannot be deleted (a directory now).
    victim = local(first)
    victim.unlink()
    victim.mkdir()
    (victim / "keep").write_text("x")
    try:
        body = set_props(floe, ns, "t", **{"write.metadata.delete-after-commit.enabled": "true"})
        assert body["metadata"]["metadata-log"] == [
            {"timestamp-ms": second["metadata"]["last-updated-ms"], "metadata-file": second["metadata-location"]}]
        assert assert_ok_json(floe.get(table_url(ns, "t")))["metadata-location"] == body["metadata-location"]
        assert victim.is_dir()
        assert f"cannot remove {victim}" in floe.log()
        assert local(second["metadata-location"]).is_file() and local(body["metadata-location"]).is_file()
    finally:
        shutil.rmtree(victim, ignore_errors=True)


def test_delete_after_commit_never_deletes_another_tables_files(floe, ns):
    """A table registered from a copy of another's metadata names the
    other's files in its log: those are never its to delete."""
    a = assert_ok_json(floe.post(tables_url(ns), json={"name": "a", "schema": SCHEMA}))
    for i in range(3):
        a_now = set_props(floe, ns, "a", n=str(i))
    a_files = metadata_files(a["metadata"]["location"])
    assert len(a_files) == 4
    # b: a's current metadata, at a location of its own.
    b_loc = a["metadata"]["location"] + "_b"
    copy = dict(a_now["metadata"], location=b_loc)
    copy["table-uuid"] = str(uuid.uuid4())
    (local(b_loc) / "metadata").mkdir(parents=True)
    copy_file = local(b_loc) / "metadata" / "00009-copy.metadata.json"
    copy_file.write_text(json.dumps(copy))
    assert_ok_json(floe.post(f"/v1/namespaces/{ns_path(ns)}/register",
                             json={"name": "b", "metadata-location": f"file://{copy_file}"}))
    set_props(floe, ns, "b", **{"write.metadata.delete-after-commit.enabled": "true",
                                "write.metadata.previous-versions-max": "1"})
    set_props(floe, ns, "b", n="b")
    assert metadata_files(a["metadata"]["location"]) == a_files, "a's files were touched"
    # b's own dropped file is gone.
    assert not copy_file.exists()


# --------------------------------------------------------------------------
# names: a namespace a.b and a table a.b are different things


def test_table_in_namespace_a_b_while_table_a_b_exists(floe, uniq):
    floe.create_namespace([uniq])
    tab = assert_ok_json(floe.post(tables_url([uniq]), json={"name": "b", "schema": SCHEMA}))
    floe.create_namespace([uniq, "b"])
    inner = assert_ok_json(floe.post(tables_url([uniq, "b"]), json={"name": "t", "schema": SCHEMA}))
    # Neither location holds the other: a purge of one never takes the other's files.
    wh = warehouse_of(floe)
    a, b = tab["metadata"]["location"], inner["metadata"]["location"]
    assert a == f"file://{wh}/{uniq}/b"
    assert b == f"file://{wh}/{uniq}/b-ns/t", "the namespace's directory steps aside of table b"
    assert assert_ok_json(floe.get(f"/v1/namespaces/{ns_path([uniq, 'b'])}"))["properties"] == {
        "location": f"file://{wh}/{uniq}/b-ns"}
    assert assert_ok_json(floe.get(table_url([uniq], "b")))["metadata"]["table-uuid"] == tab["metadata"]["table-uuid"]
    assert assert_ok_json(floe.get(table_url([uniq, "b"], "t")))["metadata"]["table-uuid"] == \
        inner["metadata"]["table-uuid"]
    # Staged, as Trino and DuckDB create (the namespace's location is below the table's name).
    loc = trino_table_location(floe, [uniq, "b"], "staged")
    staged = stage(floe, [uniq, "b"], "staged", location=loc)
    assert_ok_json(floe.post(table_url([uniq, "b"], "staged"), json={
        "requirements": [{"type": "assert-create"}],
        "updates": java_create_updates(staged["metadata"], loc)}))
    # And the other order: namespace a.c with a table first, then the table
    # a.c, which takes a directory of its own.
    floe.create_namespace([uniq, "c"])
    c_t = assert_ok_json(floe.post(tables_url([uniq, "c"]), json={"name": "t", "schema": SCHEMA}))
    c = assert_ok_json(floe.post(tables_url([uniq]), json={"name": "c", "schema": SCHEMA}))
    assert c["metadata"]["location"].startswith(f"file://{wh}/{uniq}/c-"), c["metadata"]["location"]
    assert assert_ok_json(floe.get(f"/v1/namespaces/{ns_path([uniq, 'c'])}"))["properties"] == {
        "location": f"file://{wh}/{uniq}/c"}

    # Purging table a.b leaves the tables of namespace a.b alone.
    kept = files_under(local(b))
    assert floe.delete(table_url([uniq], "b"), params={"purgeRequested": "true"}).status_code == 204
    assert files_under(local(b)) == kept
    assert assert_ok_json(floe.get(table_url([uniq, "b"], "t")))["metadata-location"] == inner["metadata-location"]
    assert assert_ok_json(floe.get(table_url([uniq, "c"], "t")))["metadata-location"] == c_t["metadata-location"]


@pytest.mark.parametrize("root", [
    {"type": "list", "element-id": 1, "element": "long", "element-required": False},
    {"type": "map", "key-id": 1, "key": "string", "value-id": 2, "value": "long", "value-required": False},
    {"type": "long"},
    "long",
], ids=["list", "map", "primitive-object", "primitive-string"])
def test_root_schema_must_be_a_struct(floe, ns, root):
    r = floe.post(tables_url(ns), json={"name": "bad", "schema": root})
    # A non-object is "not an object"; an object of another type "not a struct".
    assert_error(r, 400, "BadRequestException", message_has=("not a struct type", "must be an object"))
    assert floe.head(table_url(ns, "bad")).status_code == 404
    assert_ok_json(floe.post(tables_url(ns), json={"name": "good", "schema": SCHEMA}))
    schema = root if isinstance(root, dict) else {"type": root}
    r = floe.post(table_url(ns, "good"), json={"updates": [
        {"action": "add-schema", "schema": dict(schema, **{"schema-id": 1})},
        {"action": "set-current-schema", "schema-id": -1}]})
    assert_error(r, 400, "BadRequestException", message_has="not a struct type")
    assert assert_ok_json(floe.get(table_url(ns, "good")))["metadata"]["schemas"] == [SCHEMA]
