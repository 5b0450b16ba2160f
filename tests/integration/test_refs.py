"""floe's refs API (branches and tags of a table), over raw HTTP.

Snapshots are built with raw commits (add-snapshot with fake manifest lists,
set-snapshot-ref); the expected refs are computed here and compared with
what the refs API answers, what loadTable serves and what floe writes to the
metadata files.  Each ref change must be an ordinary table commit: a new
metadata file numbered one higher, a new metadata-location and a commit_log
row.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import (
    TableHandle,
    assert_error,
    assert_ok_json,
    assert_request_id,
    database_url,
    describe,
    next_snapshot_id,
)

BASES = ["/v1", "/v1/warehouse"]
REF_KEYS = {"name", "type", "snapshot-id", "max-ref-age-ms", "max-snapshot-age-ms", "min-snapshots-to-keep"}
FILE_RE = re.compile(r"/metadata/(\d{5})-[0-9a-f-]{36}\.metadata\.json$")


# --------------------------------------------------------------------------
# helpers


@pytest.fixture
def ns(floe, uniq):
    floe.create_namespace([uniq])
    return [uniq]


def file_number(location: str) -> int:
    m = FILE_RE.search(location)
    assert m, f"not a numbered metadata file: {location}"
    return int(m.group(1))


def read_file(location: str) -> dict:
    assert location.startswith("file:///"), location
    return json.loads(Path(location[len("file://"):]).read_text())


def commit_log_count(f, table_uuid: str) -> int:
    import psycopg
    with psycopg.connect(database_url(f), autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM commit_log WHERE table_uuid = %s", (table_uuid,)).fetchone()[0]


def chain(t: TableHandle, n: int, ref: str = "main") -> list[int]:
    """n snapshots committed one after the other to ref."""
    return [t.add_snapshot(ref) for _ in range(n)]


def iceberg_ref(ref: dict) -> dict:
    """The table-metadata form of a Ref of the refs API."""
    out = {"snapshot-id": ref["snapshot-id"], "type": ref["type"]}
    for k in ("max-ref-age-ms", "max-snapshot-age-ms", "min-snapshots-to-keep"):
        if k in ref:
            out[k] = ref[k]
    return out


def check_ref(ref: dict, name: str, type_: str, snapshot_id: int, **retention):
    assert set(ref) <= REF_KEYS, f"unknown keys in {ref}"
    expected = {"name": name, "type": type_, "snapshot-id": snapshot_id}
    expected.update({k.replace("_", "-"): v for k, v in retention.items()})
    assert ref == expected, f"ref {ref} != expected {expected}"


class CommitWatch:
    """Checks that one call was exactly one table commit."""

    def __init__(self, t: TableHandle):
        self.t = t
        self.before = t.load()
        self.uuid = self.before["metadata"]["table-uuid"]
        self.log_rows = commit_log_count(t.floe, self.uuid)

    def assert_one_commit(self) -> dict:
        after = self.t.load()
        assert after["metadata-location"] != self.before["metadata-location"], "no new metadata file"
        assert file_number(after["metadata-location"]) == file_number(self.before["metadata-location"]) + 1, (
            f"{self.before['metadata-location']} -> {after['metadata-location']}")
        assert read_file(after["metadata-location"]) == after["metadata"], "file differs from served metadata"
        assert after["metadata"]["metadata-log"][-1]["metadata-file"] == self.before["metadata-location"]
        assert commit_log_count(self.t.floe, self.uuid) == self.log_rows + 1, "no commit_log row"
        return after

    def assert_no_commit(self):
        after = self.t.load()
        assert after["metadata-location"] == self.before["metadata-location"], "a failed ref call committed"
        assert after["metadata"] == self.before["metadata"]
        assert commit_log_count(self.t.floe, self.uuid) == self.log_rows


def table_with_history(floe, ns, name="t", base="/v1", n=3) -> tuple[TableHandle, list[int]]:
    t = TableHandle(floe, ns, name, base)
    t.create()
    return t, chain(t, n)


# --------------------------------------------------------------------------
# list


@pytest.mark.parametrize("base", BASES)
def test_list_refs_of_a_new_table_is_empty(floe, ns, base):
    t = TableHandle(floe, ns, "empty", base)
    t.create()
    r = floe.get(t.refs_url)
    body = assert_ok_json(r)
    assert body == {"refs": []}, describe(r)


@pytest.mark.parametrize("base", BASES)
def test_list_refs_sorted_by_name_and_agrees_with_load_table(floe, ns, base):
    t, (s1, s2, s3) = table_with_history(floe, ns, base=base)
    # Refs made by commits (as engines make them) ...
    t.commit_ok([{"action": "set-snapshot-ref", "ref-name": "zeta", "type": "branch", "snapshot-id": s1}])
    t.commit_ok([{"action": "set-snapshot-ref", "ref-name": "Alpha", "type": "tag", "snapshot-id": s2,
                  "max-ref-age-ms": 86400000}])
    # ... and by the refs API.
    assert_ok_json(floe.post(t.refs_url, json={"name": "beta", "type": "branch", "snapshot-id": s1,
                                               "min-snapshots-to-keep": 3}), 201)
    refs = t.refs()
    names = [r["name"] for r in refs]
    assert names == sorted(["zeta", "Alpha", "beta", "main"]), names
    by = {r["name"]: r for r in refs}
    check_ref(by["main"], "main", "branch", s3)
    check_ref(by["zeta"], "zeta", "branch", s1)
    check_ref(by["Alpha"], "Alpha", "tag", s2, max_ref_age_ms=86400000)
    check_ref(by["beta"], "beta", "branch", s1, min_snapshots_to_keep=3)
    served = t.metadata()["refs"]
    assert served == {r["name"]: iceberg_ref(r) for r in refs}


def test_list_refs_unknown_table_or_namespace(floe, ns):
    r = floe.get(TableHandle(floe, ns, "ghost").refs_url)
    assert_error(r, 404, "NoSuchTableException")
    r = floe.get(TableHandle(floe, ["no_such_ns_refs"], "t").refs_url)
    err = assert_error(r, 404)
    assert err["type"] in ("NoSuchNamespaceException", "NoSuchTableException"), err


# --------------------------------------------------------------------------
# create


@pytest.mark.parametrize("base", BASES)
def test_create_branch_defaults_to_main_and_is_a_commit(floe, ns, base):
    t, (s1, s2) = table_with_history(floe, ns, base=base, n=2)
    watch = CommitWatch(t)
    r = floe.post(t.refs_url, json={"name": "dev", "type": "branch"})
    ref = assert_ok_json(r, 201)
    check_ref(ref, "dev", "branch", s2)
    after = watch.assert_one_commit()
    assert after["metadata"]["refs"]["dev"] == {"snapshot-id": s2, "type": "branch"}
    # main and the current snapshot are unchanged.
    assert after["metadata"]["refs"]["main"] == {"snapshot-id": s2, "type": "branch"}
    assert after["metadata"]["current-snapshot-id"] == s2
    check_ref(assert_ok_json(floe.get(t.ref_url("dev"))), "dev", "branch", s2)


def test_create_tag_and_branch_with_retention(floe, ns):
    t, (s1, s2, s3) = table_with_history(floe, ns)
    watch = CommitWatch(t)
    tag = assert_ok_json(floe.post(t.refs_url, json={"name": "release-1", "type": "tag", "snapshot-id": s1,
                                                     "max-ref-age-ms": 604800000}), 201)
    check_ref(tag, "release-1", "tag", s1, max_ref_age_ms=604800000)
    watch.assert_one_commit()

    watch = CommitWatch(t)
    br = assert_ok_json(floe.post(t.refs_url, json={
        "name": "audit", "type": "branch", "snapshot-id": s2, "max-ref-age-ms": 1000,
        "max-snapshot-age-ms": 2000, "min-snapshots-to-keep": 5}), 201)
    check_ref(br, "audit", "branch", s2, max_ref_age_ms=1000, max_snapshot_age_ms=2000, min_snapshots_to_keep=5)
    after = watch.assert_one_commit()
    assert after["metadata"]["refs"]["audit"] == {
        "snapshot-id": s2, "type": "branch", "max-ref-age-ms": 1000, "max-snapshot-age-ms": 2000,
        "min-snapshots-to-keep": 5}
    assert after["metadata"]["refs"]["release-1"] == {"snapshot-id": s1, "type": "tag",
                                                       "max-ref-age-ms": 604800000}
    assert after["metadata"]["current-snapshot-id"] == s3
    check_ref(assert_ok_json(floe.get(t.ref_url("release-1"))), "release-1", "tag", s1,
              max_ref_age_ms=604800000)


def test_create_existing_ref_conflicts_unless_replace(floe, ns):
    t, (s1, s2, s3) = table_with_history(floe, ns)
    assert_ok_json(floe.post(t.refs_url, json={"name": "dev", "type": "branch", "snapshot-id": s1}), 201)

    watch = CommitWatch(t)
    r = floe.post(t.refs_url, json={"name": "dev", "type": "branch", "snapshot-id": s3})
    assert_error(r, 409, "AlreadyExistsException")
    r = floe.post(t.refs_url, json={"name": "dev", "type": "branch", "snapshot-id": s3, "replace": False})
    assert_error(r, 409, "AlreadyExistsException")
    watch.assert_no_commit()
    assert t.head("dev") == s1

    watch = CommitWatch(t)
    ref = assert_ok_json(floe.post(t.refs_url, json={"name": "dev", "type": "branch", "snapshot-id": s3,
                                                     "replace": True}), 201)
    check_ref(ref, "dev", "branch", s3)
    after = watch.assert_one_commit()
    assert after["metadata"]["refs"]["dev"]["snapshot-id"] == s3
    # replace may move a ref anywhere, backwards too
    watch = CommitWatch(t)
    ref = assert_ok_json(floe.post(t.refs_url, json={"name": "dev", "type": "branch", "snapshot-id": s2,
                                                     "replace": True, "min-snapshots-to-keep": 2}), 201)
    check_ref(ref, "dev", "branch", s2, min_snapshots_to_keep=2)
    watch.assert_one_commit()
    # main exists too: it is never created twice
    assert_error(floe.post(t.refs_url, json={"name": "main", "type": "branch", "snapshot-id": s1}),
                 409, "AlreadyExistsException")
    assert t.head("main") == s3


def test_replace_main_moves_the_current_snapshot(floe, ns):
    t, (s1, s2, s3) = table_with_history(floe, ns)
    watch = CommitWatch(t)
    ref = assert_ok_json(floe.post(t.refs_url, json={"name": "main", "type": "branch", "snapshot-id": s1,
                                                     "replace": True}), 201)
    check_ref(ref, "main", "branch", s1)
    after = watch.assert_one_commit()
    assert after["metadata"]["current-snapshot-id"] == s1
    assert after["metadata"]["refs"]["main"]["snapshot-id"] == s1


def test_create_errors(floe, ns):
    t, (s1, s2, s3) = table_with_history(floe, ns)
    watch = CommitWatch(t)
    bad = [
        {"name": "x", "type": "bookmark"},
        {"name": "x"},                                             # no type
        {"type": "branch"},                                        # no name
        {"name": "", "type": "branch"},
        {"name": "x", "type": "tag", "min-snapshots-to-keep": 2},
        {"name": "x", "type": "tag", "max-snapshot-age-ms": 1000},
        {"name": "x", "type": "branch", "min-snapshots-to-keep": 0},
        {"name": "x", "type": "branch", "min-snapshots-to-keep": -1},
        {"name": "x", "type": "branch", "max-snapshot-age-ms": 0},
        {"name": "x", "type": "branch", "max-ref-age-ms": 0},
        {"name": "x", "type": "tag", "max-ref-age-ms": -5},
        {"name": "x", "type": "branch", "snapshot-id": "abc"},
        {"name": 7, "type": "branch"},
        {"name": "x", "type": "branch", "replace": "yes"},
    ]
    for body in bad:
        r = floe.post(t.refs_url, json=body)
        assert_error(r, 400)
    for raw in (b"{not json", b"[]", b"null"):
        r = floe.post(t.refs_url, data=raw, headers={"Content-Type": "application/json"})
        assert_error(r, 400)
    r = floe.post(t.refs_url, json={"name": "x", "type": "branch", "snapshot-id": next_snapshot_id()})
    assert_error(r, 404, "NoSuchSnapshotException")
    watch.assert_no_commit()
    assert [r["name"] for r in t.refs()] == ["main"]

    r = floe.post(TableHandle(floe, ns, "ghost").refs_url, json={"name": "x", "type": "branch"})
    assert_error(r, 404, "NoSuchTableException")


def test_create_without_snapshot_on_a_table_without_snapshots_is_400(floe, ns):
    t = TableHandle(floe, ns, "bare")
    t.create()
    watch = CommitWatch(t)
    for type_ in ("branch", "tag"):
        assert_error(floe.post(t.refs_url, json={"name": "dev", "type": type_}), 400)
    watch.assert_no_commit()
    assert t.refs() == []


# --------------------------------------------------------------------------
# get and drop


@pytest.mark.parametrize("base", BASES)
def test_get_ref(floe, ns, base):
    t, (s1, s2) = table_with_history(floe, ns, base=base, n=2)
    check_ref(assert_ok_json(floe.get(t.ref_url("main"))), "main", "branch", s2)
    r = floe.get(t.ref_url("nope"))
    assert_error(r, 404, "NoSuchReferenceException")
    # a name with characters that need escaping
    assert_ok_json(floe.post(t.refs_url, json={"name": "feature/x y", "type": "tag", "snapshot-id": s1}), 201)
    check_ref(assert_ok_json(floe.get(t.ref_url("feature/x y"))), "feature/x y", "tag", s1)
    assert t.metadata()["refs"]["feature/x y"] == {"snapshot-id": s1, "type": "tag"}
    assert_error(floe.get(TableHandle(floe, ns, "ghost", base).ref_url("main")), 404, "NoSuchTableException")


@pytest.mark.parametrize("base", BASES)
def test_drop_ref_is_a_commit(floe, ns, base):
    t, (s1, s2) = table_with_history(floe, ns, base=base, n=2)
    assert_ok_json(floe.post(t.refs_url, json={"name": "dev", "type": "branch", "snapshot-id": s1}), 201)
    assert_ok_json(floe.post(t.refs_url, json={"name": "v1", "type": "tag", "snapshot-id": s1}), 201)

    watch = CommitWatch(t)
    r = floe.delete(t.ref_url("dev"))
    assert r.status_code == 204, describe(r)
    assert r.content == b""
    assert_request_id(r)
    after = watch.assert_one_commit()
    assert set(after["metadata"]["refs"]) == {"main", "v1"}
    # The snapshot itself stays (only the ref goes).
    assert s1 in [s["snapshot-id"] for s in after["metadata"]["snapshots"]]
    assert [r["name"] for r in t.refs()] == ["main", "v1"]
    assert_error(floe.get(t.ref_url("dev")), 404, "NoSuchReferenceException")

    watch = CommitWatch(t)
    assert_error(floe.delete(t.ref_url("dev")), 404, "NoSuchReferenceException")
    watch.assert_no_commit()

    watch = CommitWatch(t)
    r = floe.delete(t.ref_url("v1"))
    assert r.status_code == 204, describe(r)
    watch.assert_one_commit()
    assert [r["name"] for r in t.refs()] == ["main"]


def test_main_cannot_be_dropped(floe, ns):
    t, (s1,) = table_with_history(floe, ns, n=1)
    watch = CommitWatch(t)
    assert_error(floe.delete(t.ref_url("main")), 400, "BadRequestException")
    watch.assert_no_commit()
    check_ref(assert_ok_json(floe.get(t.ref_url("main"))), "main", "branch", s1)


def test_drop_on_unknown_table(floe, ns):
    assert_error(floe.delete(TableHandle(floe, ns, "ghost").ref_url("dev")), 404, "NoSuchTableException")


# --------------------------------------------------------------------------
# fast-forward


@pytest.mark.parametrize("base", BASES)
def test_fast_forward_to_a_ref(floe, ns, base):
    t, (s1, s2, s3) = table_with_history(floe, ns, base=base)
    assert_ok_json(floe.post(t.refs_url, json={"name": "dev", "type": "branch", "snapshot-id": s1,
                                               "min-snapshots-to-keep": 4}), 201)
    watch = CommitWatch(t)
    r = floe.post(t.ref_url("dev") + "/fast-forward", json={"to": "main"})
    ref = assert_ok_json(r)
    # The moved ref keeps its retention settings.
    check_ref(ref, "dev", "branch", s3, min_snapshots_to_keep=4)
    after = watch.assert_one_commit()
    assert after["metadata"]["refs"]["dev"]["snapshot-id"] == s3
    assert after["metadata"]["current-snapshot-id"] == s3


def test_fast_forward_main_to_a_branch_and_to_a_snapshot_id(floe, ns):
    t, (s1,) = table_with_history(floe, ns, n=1)
    b1 = t.add_snapshot("staging")
    b2 = t.add_snapshot("staging")
    b3 = t.add_snapshot("staging")
    assert t.head("main") == s1

    # main -> a snapshot id on the way
    watch = CommitWatch(t)
    ref = assert_ok_json(floe.post(t.ref_url("main") + "/fast-forward", json={"snapshot-id": b1}))
    check_ref(ref, "main", "branch", b1)
    after = watch.assert_one_commit()
    assert after["metadata"]["current-snapshot-id"] == b1
    assert after["metadata"]["snapshot-log"][-1]["snapshot-id"] == b1

    # main -> the branch head (b1 is an ancestor of b3)
    watch = CommitWatch(t)
    ref = assert_ok_json(floe.post(t.ref_url("main") + "/fast-forward", json={"to": "staging"}))
    check_ref(ref, "main", "branch", b3)
    after = watch.assert_one_commit()
    assert after["metadata"]["current-snapshot-id"] == b3
    assert after["metadata"]["refs"]["staging"]["snapshot-id"] == b3
    assert b2 in [s["snapshot-id"] for s in after["metadata"]["snapshots"]]
    check_ref(assert_ok_json(floe.get(t.ref_url("main"))), "main", "branch", b3)


def test_fast_forward_to_the_same_snapshot_is_ok(floe, ns):
    t, (s1, s2) = table_with_history(floe, ns, n=2)
    assert_ok_json(floe.post(t.refs_url, json={"name": "dev", "type": "branch"}), 201)
    ref = assert_ok_json(floe.post(t.ref_url("dev") + "/fast-forward", json={"to": "main"}))
    check_ref(ref, "dev", "branch", s2)
    assert t.head("dev") == s2 and t.head("main") == s2


def test_fast_forward_not_an_ancestor_is_409(floe, ns):
    t, (s1, s2, s3) = table_with_history(floe, ns)
    # side diverges from main at s1
    side = t.add_snapshot("side", parent=s1)
    watch = CommitWatch(t)
    r = floe.post(t.ref_url("main") + "/fast-forward", json={"to": "side"})
    assert_error(r, 409, "NotFastForwardException")
    # backwards is not a fast-forward either
    r = floe.post(t.ref_url("main") + "/fast-forward", json={"snapshot-id": s1})
    assert_error(r, 409, "NotFastForwardException")
    r = floe.post(t.ref_url("side") + "/fast-forward", json={"to": "main"})
    assert_error(r, 409, "NotFastForwardException")
    watch.assert_no_commit()
    assert t.head("main") == s3 and t.head("side") == side


def test_fast_forward_errors(floe, ns):
    t, (s1, s2) = table_with_history(floe, ns, n=2)
    assert_ok_json(floe.post(t.refs_url, json={"name": "dev", "type": "branch", "snapshot-id": s1}), 201)
    watch = CommitWatch(t)
    ff = t.ref_url("dev") + "/fast-forward"
    for body in ({}, {"to": "main", "snapshot-id": s2}, {"to": 5}, {"snapshot-id": "x"}):
        assert_error(floe.post(ff, json=body), 400)
    assert_error(floe.post(ff, data=b"{oops", headers={"Content-Type": "application/json"}), 400)
    assert_error(floe.post(ff, json={"to": "nope"}), 404, "NoSuchReferenceException")
    assert_error(floe.post(ff, json={"snapshot-id": next_snapshot_id()}), 404, "NoSuchSnapshotException")
    assert_error(floe.post(t.ref_url("nope") + "/fast-forward", json={"to": "main"}), 404,
                 "NoSuchReferenceException")
    assert_error(floe.post(TableHandle(floe, ns, "ghost").ref_url("dev") + "/fast-forward", json={"to": "main"}),
                 404, "NoSuchTableException")
    watch.assert_no_commit()
    assert t.head("dev") == s1


# --------------------------------------------------------------------------
# ref changes serialise with engine commits


def test_ref_change_after_an_engine_commit_sees_it(floe, ns):
    t, (s1,) = table_with_history(floe, ns, n=1)
    # An engine-style commit that asserts main, then a refs-API change, then
    # another engine commit whose assertion holds only if the refs change
    # landed as a real commit.
    s2 = t.add_snapshot("dev", parent=s1)
    assert_ok_json(floe.post(t.ref_url("main") + "/fast-forward", json={"to": "dev"}))
    r = t.commit([{"action": "set-properties", "updates": {"after": "ff"}}],
                 [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": s2}])
    assert_ok_json(r)
    r = t.commit([{"action": "set-properties", "updates": {"stale": "yes"}}],
                 [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": s1}])
    assert_error(r, 409, "CommitFailedException")


# --------------------------------------------------------------------------
# enforced publish: the refs API may not move main of a protected table


def test_refs_cannot_move_main_under_wap_required(floe, ns):
    t, (s1,) = table_with_history(floe, ns, n=1)
    b1 = t.add_snapshot("dev")
    t.commit_ok([{"action": "set-properties", "updates": {"floe.wap.required": "true"}}])

    watch = CommitWatch(t)
    err = assert_error(floe.post(t.ref_url("main") + "/fast-forward", json={"to": "dev"}), 403,
                       "ForbiddenException")
    assert "floe.wap.required" in err["message"], err
    assert_error(floe.post(t.ref_url("main") + "/fast-forward", json={"snapshot-id": b1}), 403,
                 "ForbiddenException")
    assert_error(floe.post(t.refs_url, json={"name": "main", "type": "branch", "snapshot-id": b1,
                                             "replace": True}), 403, "ForbiddenException")
    watch.assert_no_commit()
    assert t.head("main") == s1

    # Other refs still move freely.
    assert_ok_json(floe.post(t.refs_url, json={"name": "dev2", "type": "branch"}), 201)
    assert_ok_json(floe.post(t.ref_url("dev2") + "/fast-forward", json={"to": "dev"}))
    assert_ok_json(floe.post(t.refs_url, json={"name": "snap", "type": "tag", "snapshot-id": b1}), 201)
    assert t.head("dev2") == b1 and t.head("main") == s1
