"""listTables answers built as text: every name survives the trip whatever
it holds, the unpaged answer is exactly the pages joined, and a missing or
empty namespace answers as before.
"""

from __future__ import annotations

import json

from conftest import assert_error, assert_ok_json, ns_path

SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}

# Quotes, backslashes, slashes, non-ASCII and what sorts around them.
NAMES = ['plain', 'with "quotes"', 'back\\slash', 'sl/ash', 'caf\u00e9', 'euro \u20ac',
         '\U0001f600 emoji', 'A', 'a', 'z' * 200] + [f"t{i:03d}" for i in range(150)]


def tables_path(levels):
    return f"/v1/namespaces/{ns_path(levels)}/tables"


def create(floe, levels, name):
    r = floe.post(tables_path(levels), json={"name": name, "schema": SCHEMA})
    assert r.status_code == 200, r.text


def test_every_name_round_trips_and_pages_join_to_the_whole(floe):
    levels = ['list "q"', 'caf\u00e9\\x']
    floe.create_namespace(levels[:1])
    floe.create_namespace(levels)
    for n in NAMES:
        create(floe, levels, n)

    r = floe.get(tables_path(levels))
    whole = assert_ok_json(r)
    assert r.headers["Content-Type"] == "application/json"
    # Sorted byte-wise (UTF-8), as the pages are.
    want = sorted(NAMES, key=lambda s: s.encode())
    assert [i["name"] for i in whole["identifiers"]] == want
    assert all(i["namespace"] == levels for i in whole["identifiers"])
    assert whole["next-page-token"] is None
    # Compact JSON, the same text jansson would have written.
    assert r.content == json.dumps(whole, separators=(",", ":"), ensure_ascii=False).encode()

    for size in (1, 7, 100, len(NAMES), 1000):
        seen, token = [], ""
        while True:
            body = assert_ok_json(floe.get(tables_path(levels),
                                           params={"pageToken": token, "pageSize": size}))
            assert len(body["identifiers"]) <= size
            seen += [i["name"] for i in body["identifiers"]]
            token = body["next-page-token"]
            if token is None:
                break
        assert seen == want, f"pageSize {size}"


def test_empty_and_missing_namespace(floe):
    floe.create_namespace(["list_empty"])
    assert assert_ok_json(floe.get(tables_path(["list_empty"]))) == {
        "identifiers": [], "next-page-token": None}
    assert assert_ok_json(floe.get(tables_path(["list_empty"]),
                                   params={"pageToken": "", "pageSize": 5})) == {
        "identifiers": [], "next-page-token": None}
    assert_error(floe.get(tables_path(["list_missing"])), 404, "NoSuchNamespaceException")
    assert_error(floe.get(tables_path(["list_missing"]), params={"pageToken": ""}), 404,
                 "NoSuchNamespaceException")
