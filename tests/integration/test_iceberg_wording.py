"""Error messages in Iceberg's words.

Iceberg's clients and tools (its own catalog test suite among them) match on
the messages its catalogs give: "Table does not exist: a.b.t", "Requirement
failed: branch main has changed: expected id 1 != 2". floe answers each type
with the same words, and its own resources in the same pattern."""

from __future__ import annotations

import uuid

import pytest

from conftest import TableHandle, assert_error, assert_ok_json, ns_path


def message(r, status, type_):
    return assert_error(r, status, type_)["message"]


@pytest.fixture
def ns(floe, uniq):
    name = f"iw_{uniq}"
    floe.create_namespace([name])
    return name


@pytest.fixture
def table(floe, ns):
    t = TableHandle(floe, [ns], "t")
    t.create()
    return t


def ident(ns, name):
    return {"namespace": [ns], "name": name}


# --- namespaces ---

def test_no_such_namespace(floe, ns):
    r = floe.get(f"/v1/namespaces/{ns_path([ns, 'b'])}")
    assert message(r, 404, "NoSuchNamespaceException") == f"Namespace does not exist: {ns}.b"
    r = floe.delete(f"/v1/namespaces/{ns_path([ns, 'b'])}")
    assert message(r, 404, "NoSuchNamespaceException") == f"Namespace does not exist: {ns}.b"
    r = floe.post(f"/v1/namespaces/{ns_path([ns, 'b'])}/properties", json={"updates": {"a": "1"}})
    assert message(r, 404, "NoSuchNamespaceException") == f"Namespace does not exist: {ns}.b"
    r = floe.get(f"/v1/namespaces/{ns_path([ns, 'b'])}/tables")
    assert message(r, 404, "NoSuchNamespaceException") == f"Namespace does not exist: {ns}.b"


def test_namespace_already_exists(floe, ns):
    r = floe.post("/v1/namespaces", json={"namespace": [ns]})
    assert message(r, 409, "AlreadyExistsException") == f"Namespace already exists: {ns}"


def test_namespace_not_empty(floe, table, ns):
    r = floe.delete(f"/v1/namespaces/{ns_path([ns])}")
    assert message(r, 409, "NamespaceNotEmptyException") == f"Namespace {ns} is not empty."


# --- tables ---

def test_no_such_table(floe, ns):
    for method in ("GET", "DELETE"):
        r = floe.request(method, f"/v1/namespaces/{ns_path([ns])}/tables/none")
        assert message(r, 404, "NoSuchTableException") == f"Table does not exist: {ns}.none"
    r = floe.post(f"/v1/namespaces/{ns_path([ns])}/tables/none",
                  json={"requirements": [], "updates": []})
    assert message(r, 404, "NoSuchTableException") == f"Table does not exist: {ns}.none"
    r = floe.get(f"/v1/namespaces/{ns_path([ns])}/tables/none/credentials")
    assert message(r, 404, "NoSuchTableException") == f"Table does not exist: {ns}.none"


def test_no_such_table_in_a_nested_or_missing_namespace(floe, ns):
    r = floe.get(f"/v1/namespaces/{ns_path([ns, 'b'])}/tables/t")
    # As Iceberg's catalogs answer a table route: the table, not its namespace.
    assert message(r, 404, "NoSuchTableException") == f"Table does not exist: {ns}.b.t"


def test_create_table_in_a_missing_namespace(floe, ns):
    r = floe.post(f"/v1/namespaces/{ns_path([ns, 'b'])}/tables",
                  json={"name": "t", "schema": TableHandle.SCHEMA})
    assert message(r, 404, "NoSuchNamespaceException") == f"Namespace does not exist: {ns}.b"


def test_table_already_exists(floe, table, ns):
    r = floe.post(f"/v1/namespaces/{ns_path([ns])}/tables",
                  json={"name": "t", "schema": TableHandle.SCHEMA})
    assert message(r, 409, "AlreadyExistsException") == f"Table already exists: {ns}.t"
    staged = floe.post(f"/v1/namespaces/{ns_path([ns])}/tables",
                       json={"name": "t", "schema": TableHandle.SCHEMA, "stage-create": True})
    assert message(staged, 409, "AlreadyExistsException") == f"Table already exists: {ns}.t"


def test_rename(floe, table, ns):
    other = TableHandle(floe, [ns], "u")
    other.create()
    r = floe.post("/v1/tables/rename", json={"source": ident(ns, "none"), "destination": ident(ns, "x")})
    assert message(r, 404, "NoSuchTableException") == f"Table does not exist: {ns}.none"
    r = floe.post("/v1/tables/rename", json={"source": ident(ns, "t"), "destination": ident(ns, "u")})
    assert message(r, 409, "AlreadyExistsException") == f"Table already exists: {ns}.u"
    r = floe.post("/v1/tables/rename",
                  json={"source": ident(ns, "t"), "destination": {"namespace": [ns, "zz"], "name": "t"}})
    assert message(r, 404, "NoSuchNamespaceException") == f"Namespace does not exist: {ns}.zz"


# --- commit requirements, as Iceberg's UpdateRequirement words them ---

def test_assert_create_on_an_existing_table(floe, table, ns):
    r = floe.post(table.url, json={"requirements": [{"type": "assert-create"}], "updates": []})
    assert message(r, 409, "CommitFailedException") == "Requirement failed: table already exists"


def test_requirement_messages(floe, table):
    meta = table.metadata()
    sid, updates = table.snapshot_updates()
    table.commit_ok(updates)
    table_uuid = meta["table-uuid"]
    other = "00000000-0000-4000-8000-000000000000"
    cases = [
        ({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1},
         f"Requirement failed: branch main has changed: expected id 1 != {sid}"),
        ({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None},
         "Requirement failed: branch main was created concurrently"),
        ({"type": "assert-ref-snapshot-id", "ref": "dev", "snapshot-id": 7},
         "Requirement failed: branch or tag dev is missing, expected 7"),
        ({"type": "assert-table-uuid", "uuid": other},
         f"Requirement failed: UUID does not match: expected {table_uuid} != {other}"),
        ({"type": "assert-current-schema-id", "current-schema-id": 9},
         f"Requirement failed: current schema changed: expected id 9 != {meta['current-schema-id']}"),
        ({"type": "assert-last-assigned-field-id", "last-assigned-field-id": 99},
         f"Requirement failed: last assigned field id changed: expected id 99 != {meta['last-column-id']}"),
        ({"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 5},
         "Requirement failed: last assigned partition id changed: expected id 5 != "
         f"{meta['last-partition-id']}"),
        ({"type": "assert-default-spec-id", "default-spec-id": 4},
         f"Requirement failed: default partition spec changed: expected id 4 != {meta['default-spec-id']}"),
        ({"type": "assert-default-sort-order-id", "default-sort-order-id": 3},
         "Requirement failed: default sort order changed: expected id 3 != "
         f"{meta['default-sort-order-id']}"),
    ]
    for requirement, want in cases:
        r = table.commit([{"action": "set-properties", "updates": {"k": "v"}}], [requirement])
        assert message(r, 409, "CommitFailedException") == want, requirement


# --- floe's own resources, in the same pattern ---

def test_no_such_reference_and_snapshot(floe, table):
    r = floe.get(table.ref_url("nope"))
    assert message(r, 404, "NoSuchReferenceException") == "Reference does not exist: nope"
    r = floe.delete(table.ref_url("nope"))
    assert message(r, 404, "NoSuchReferenceException") == "Reference does not exist: nope"
    r = floe.post(table.refs_url, json={"name": "b", "type": "branch", "snapshot-id": 42})
    assert message(r, 404, "NoSuchSnapshotException") == "Snapshot does not exist: 42"


def test_no_such_hook_and_run(floe, table):
    hid = str(uuid.uuid4())
    r = floe.get(f"/v1/audit-hooks/{hid}")
    assert message(r, 404, "NoSuchAuditHookException") == f"Audit hook does not exist: {hid}"
    r = floe.delete(f"/v1/audit-hooks/{hid}")
    assert message(r, 404, "NoSuchAuditHookException") == f"Audit hook does not exist: {hid}"
    rid = str(uuid.uuid4())
    r = floe.get(table.run_url(rid))
    assert message(r, 404, "NoSuchWapRunException") == f"Write-audit-publish run does not exist: {rid}"


def test_no_such_route_and_bad_requests_start_with_a_capital(floe, ns):
    r = floe.get("/v1/nothing/here/at/all/x/y")
    assert message(r, 404, "NotFoundException") == "No route for GET /v1/nothing/here/at/all/x/y"
    r = floe.post("/v1/namespaces", data=b"{", headers={"Content-Type": "application/json"})
    assert message(r, 400, "BadRequestException").startswith("Malformed JSON in request body")
    # A message that starts with a name as the client sent it keeps it.
    r = floe.get("/v1/namespaces", params={"pageToken": "not-a-token"})
    assert message(r, 400, "BadRequestException").startswith("pageToken ")
