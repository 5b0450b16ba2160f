"""Namespace routes of floe's Iceberg REST API, against a real daemon."""

from __future__ import annotations

import concurrent.futures
import json
import re
import socket
import subprocess

import pytest
import requests

from conftest import (
    assert_error,
    assert_error_body,
    assert_ok_json,
    assert_request_id,
    describe,
    floe_binary,
    ns_path,
    read_raw_response,
    user_properties,
)

# Every /v1/{prefix}/... route is also served as /v1/...; the prefix names
# the default warehouse ("warehouse", --warehouse-name's default). A prefix
# naming no warehouse is test_warehouses.py's.
BASES = ["/v1", "/v1/warehouse"]

NAMESPACE_ENDPOINTS = {
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
}


@pytest.fixture(params=BASES, ids=["noprefix", "prefix"])
def base(request):
    return request.param


def page_walk(floe, base, page_size, parent=None, max_pages=1000):
    """Follow next-page-token from an empty pageToken to the end."""
    pages = []
    token = ""
    for _ in range(max_pages):
        params = {"pageToken": token, "pageSize": str(page_size)}
        if parent is not None:
            params["parent"] = "\x1f".join(parent)
        r = floe.get(f"{base}/namespaces", params=params)
        body = assert_ok_json(r)
        assert "next-page-token" in body, f"no next-page-token key: {describe(r)}"
        page = [list(ns) for ns in body["namespaces"]]
        assert len(page) <= page_size, f"page larger than pageSize {page_size}: {describe(r)}"
        pages.append(page)
        token = body["next-page-token"]
        if token is None:
            return pages
        assert isinstance(token, str) and token, f"bad next-page-token {token!r}: {describe(r)}"
        assert page, f"empty page with a next-page-token: {describe(r)}"
    raise AssertionError(f"pagination did not end after {max_pages} pages")


# ---------------------------------------------------------------- health, config


def test_health(floe):
    r = floe.get("/health")
    assert assert_ok_json(r) == {"status": "ok"}


def test_ready(floe):
    r = floe.get("/ready")
    assert assert_ok_json(r) == {"status": "ready"}


def test_request_ids_are_unique(floe):
    ids = {assert_request_id(floe.get("/health")) for _ in range(20)}
    assert len(ids) == 20


# The warehouse floe serves, by name or left empty (an unknown one is 404:
# test_http_details.py).
@pytest.mark.parametrize("query", ["", "?warehouse=warehouse", "?warehouse="])
def test_config_shape(floe, query):
    body = assert_ok_json(floe.get("/v1/config" + query))
    assert isinstance(body.get("defaults"), dict), body
    assert isinstance(body.get("overrides"), dict), body
    assert all(isinstance(v, str) for v in body["defaults"].values()), body
    assert all(isinstance(v, str) for v in body["overrides"].values()), body
    endpoints = body.get("endpoints")
    assert isinstance(endpoints, list) and endpoints, body
    for e in endpoints:
        assert isinstance(e, str) and re.fullmatch(r"(GET|HEAD|POST|PUT|DELETE|PATCH) /v1/\S+", e), e
    assert len(endpoints) == len(set(endpoints)), f"duplicate endpoints: {endpoints}"
    assert NAMESPACE_ENDPOINTS <= set(endpoints), sorted(NAMESPACE_ENDPOINTS - set(endpoints))


def _print_routes():
    res = subprocess.run([str(floe_binary()), "--print-routes=json"], capture_output=True,
                         text=True, timeout=20)
    assert res.returncode == 0, res.stderr
    return [(r["method"], r["path"]) for r in json.loads(res.stdout)]


def test_config_endpoints_are_exactly_the_routes(floe):
    """endpoints in /v1/config == `floe --print-routes` minus /health, /ready, /metrics,
    /v1/config, the token issuer's /v1/oauth routes and the management API."""
    endpoints = set(assert_ok_json(floe.get("/v1/config"))["endpoints"])
    expected = set()
    for method, path in _print_routes():
        if path in ("/health", "/ready", "/metrics", "/v1/config") or path.startswith("/v1/oauth/"):
            continue
        if path.startswith("/management/"):
            continue
        # A route printed in its un-prefixed form is the same route.
        if path.startswith("/v1/") and not path.startswith("/v1/{prefix}/"):
            path = "/v1/{prefix}/" + path[len("/v1/"):]
        expected.add(f"{method} {path}")
    assert endpoints == expected, (
        f"advertised but not routed: {sorted(endpoints - expected)}; "
        f"routed but not advertised: {sorted(expected - endpoints)}")


def test_every_advertised_endpoint_is_served(floe):
    """Each advertised endpoint reaches a handler (not a route 404 or a 405)."""
    endpoints = assert_ok_json(floe.get("/v1/config"))["endpoints"]
    for e in endpoints:
        method, template = e.split(" ", 1)
        for prefix in ("warehouse", None):
            path = template.replace("/{prefix}", "" if prefix is None else "/" + prefix)
            path = path.replace("{namespace}", "zz_no_such_ns")
            path = re.sub(r"\{[^}]+\}", "zz_x", path)
            r = floe.request(method, path, json={} if method in ("POST", "PUT") else None)
            assert r.status_code != 405, f"advertised {e} answered 405: {describe(r)}"
            if r.status_code == 404 and method != "HEAD":
                err = r.json()["error"]
                assert err["type"] != "NotFoundException", f"advertised {e} is not routed: {describe(r)}"


# ---------------------------------------------------------------- create / load


def test_create_and_load(floe, base, uniq):
    r = floe.post(f"{base}/namespaces", json={"namespace": [uniq], "properties": {"owner": "ana", "k": "v"}})
    body = assert_ok_json(r, 200)
    assert body["namespace"] == [uniq]
    assert user_properties(body["properties"]) == {"owner": "ana", "k": "v"}

    body = assert_ok_json(floe.get(f"{base}/namespaces/{ns_path([uniq])}"))
    assert body["namespace"] == [uniq], body
    assert user_properties(body["properties"]) == {"owner": "ana", "k": "v"}, body

    r = floe.head(f"{base}/namespaces/{ns_path([uniq])}")
    assert r.status_code == 204, describe(r)
    assert r.content == b""
    assert_request_id(r)


def test_create_without_properties_gives_only_the_default_location(floe, base, uniq):
    location = f"file://{floe.workdir / 'data' / 'warehouse'}/{uniq}"
    body = assert_ok_json(floe.post(f"{base}/namespaces", json={"namespace": [uniq]}))
    assert body["namespace"] == [uniq]
    assert body.get("properties") == {"location": location}, body
    body = assert_ok_json(floe.get(f"{base}/namespaces/{uniq}"))
    assert body["properties"] == {"location": location}, body


def test_create_with_empty_properties(floe, uniq):
    body = assert_ok_json(floe.post("/v1/namespaces", json={"namespace": [uniq], "properties": {}}))
    assert user_properties(body["properties"]) == {}


def test_property_values_round_trip(floe, uniq):
    props = {
        "empty": "",
        "unicode": "日本語 – ü",
        "quote\"and\\backslash": "line\nbreak\ttab",
        "location": "s3://bucket/path with space/",
        "x" * 300: "y" * 5000,
    }
    body = assert_ok_json(floe.post("/v1/namespaces", json={"namespace": [uniq], "properties": props}))
    assert body["properties"] == props
    assert assert_ok_json(floe.get(f"/v1/namespaces/{uniq}"))["properties"] == props


def test_create_duplicate_is_409_and_keeps_original(floe, base, uniq):
    floe.create_namespace([uniq], {"a": "1"})
    r = floe.post(f"{base}/namespaces", json={"namespace": [uniq], "properties": {"a": "2", "b": "3"}})
    assert_error(r, 409, "AlreadyExistsException")
    assert user_properties(floe.get(f"/v1/namespaces/{uniq}").json()["properties"]) == {"a": "1"}


def test_create_child_without_parent_is_404(floe, base, uniq):
    r = floe.post(f"{base}/namespaces", json={"namespace": [uniq, "child"]})
    assert_error(r, 404, "NoSuchNamespaceException")
    assert floe.head(f"/v1/namespaces/{ns_path([uniq, 'child'])}").status_code == 404
    assert floe.head(f"/v1/namespaces/{uniq}").status_code == 404


def test_create_grandchild_without_child_is_404(floe, uniq):
    floe.create_namespace([uniq])
    r = floe.post("/v1/namespaces", json={"namespace": [uniq, "b", "c"]})
    assert_error(r, 404, "NoSuchNamespaceException")
    assert floe.list_namespaces(parent=[uniq]) == []


def test_nested_create_and_load(floe, base, uniq):
    levels = [uniq, "b", "c", "d"]
    for i in range(1, len(levels) + 1):
        body = assert_ok_json(floe.post(f"{base}/namespaces",
                                        json={"namespace": levels[:i], "properties": {"depth": str(i)}}))
        assert body["namespace"] == levels[:i]
    for i in range(1, len(levels) + 1):
        body = assert_ok_json(floe.get(f"{base}/namespaces/{ns_path(levels[:i])}"))
        assert body["namespace"] == levels[:i]
        assert user_properties(body["properties"]) == {"depth": str(i)}


def test_the_default_warehouses_prefix_is_the_same_catalog(floe, uniq):
    floe.create_namespace([uniq], {"k": "v"}, base="/v1/warehouse")
    for base in ("/v1", "/v1/warehouse"):
        body = assert_ok_json(floe.get(f"{base}/namespaces/{uniq}"))
        assert user_properties(body["properties"]) == {"k": "v"}
    # Any other prefix names no warehouse (no longer the same catalog).
    assert_error(floe.get(f"/v1/second/namespaces/{uniq}"), 404, "NoSuchWarehouseException")


def test_load_unknown_is_404(floe, base, uniq):
    assert_error(floe.get(f"{base}/namespaces/{uniq}"), 404, "NoSuchNamespaceException")
    assert_error(floe.get(f"{base}/namespaces/{ns_path([uniq, 'x'])}"), 404, "NoSuchNamespaceException")


def test_head_unknown_is_404_without_body(floe, base, uniq):
    r = floe.head(f"{base}/namespaces/{uniq}")
    assert r.status_code == 404, describe(r)
    assert r.content == b""
    assert_request_id(r)


def test_dot_is_not_a_separator(floe, uniq):
    name = f"{uniq}.with.dots"
    floe.create_namespace([name])
    body = assert_ok_json(floe.get(f"/v1/namespaces/{name}"))
    assert body["namespace"] == [name]
    assert floe.head(f"/v1/namespaces/{ns_path([uniq, 'with', 'dots'])}").status_code == 404


# ---------------------------------------------------------------- path encoding


SPECIAL_LEVELS = [
    "a b",          # space: %20 or +
    "c+d",          # literal plus: %2B
    "e/f",          # slash inside a level: %2F
    "100%",         # percent: %25
    "ü ñ 日本",     # multi-byte UTF-8
    "emoji \U0001F600",
    "q?x#y&z=1",    # query/fragment characters
    "semi;colon,comma:colon@at",
]


@pytest.mark.parametrize("level", SPECIAL_LEVELS)
def test_special_level_round_trip(floe, base, uniq, level):
    levels = [uniq, level]
    floe.create_namespace([uniq])
    floe.create_namespace(levels, {"level": level})
    body = assert_ok_json(floe.get(f"{base}/namespaces/{ns_path(levels)}"))
    assert body["namespace"] == levels
    assert user_properties(body["properties"]) == {"level": level}
    assert floe.head(f"{base}/namespaces/{ns_path(levels)}").status_code == 204
    assert floe.list_namespaces(parent=[uniq], base=base) == [levels]
    # as a top-level namespace too
    floe.create_namespace([uniq + level])
    body = assert_ok_json(floe.get(f"{base}/namespaces/{ns_path([uniq + level])}"))
    assert body["namespace"] == [uniq + level]


def test_plus_in_a_path_is_itself(floe, uniq):
    """RFC 3986: in a path only percent-decoding applies, so '+' is a plus
    sign (iceberg-go and iceberg-rust send it so); %20 is a space."""
    floe.create_namespace([uniq])
    floe.create_namespace([uniq, "a b"])
    floe.create_namespace([uniq, "a+b"])
    body = assert_ok_json(floe.get(f"/v1/namespaces/{uniq}%1Fa+b"))
    assert body["namespace"] == [uniq, "a+b"]
    body = assert_ok_json(floe.get(f"/v1/namespaces/{uniq}%1Fa%2Bb"))
    assert body["namespace"] == [uniq, "a+b"]
    body = assert_ok_json(floe.get(f"/v1/namespaces/{uniq}%1Fa%20b"))
    assert body["namespace"] == [uniq, "a b"]
    # Dropping "a+b" by its literal name leaves "a b" alone.
    assert floe.delete(f"/v1/namespaces/{uniq}%1Fa+b").status_code == 204
    assert floe.head(f"/v1/namespaces/{uniq}%1Fa%20b").status_code == 204
    assert floe.head(f"/v1/namespaces/{uniq}%1Fa%2Bb").status_code == 404


def test_plus_in_a_query_is_a_space(floe, uniq):
    """In a query value (form encoding, as Java's client sends ?parent=)
    '+' stays a space."""
    floe.create_namespace([uniq + " p"])
    floe.create_namespace([uniq + " p", "child"])
    resp = assert_ok_json(floe.get(f"/v1/namespaces?parent={uniq}+p"))
    assert resp["namespaces"] == [[uniq + " p", "child"]]


def test_a_namespace_named_plus_is_reached_again(floe, uniq):
    """A namespace whose name holds '+' can be created and then reached by
    its name in a path (before, '+' read as a space made it unreachable)."""
    floe.create_namespace([uniq + "+x"])
    body = assert_ok_json(floe.get(f"/v1/namespaces/{uniq}+x"))
    assert body["namespace"] == [uniq + "+x"]


def test_plus_only_level(floe, uniq):
    floe.create_namespace([uniq])
    floe.create_namespace([uniq, " "])
    floe.create_namespace([uniq, "+"])
    body = assert_ok_json(floe.get(f"/v1/namespaces/{uniq}%1F%20"))
    assert body["namespace"] == [uniq, " "]
    body = assert_ok_json(floe.get(f"/v1/namespaces/{uniq}%1F+"))
    assert body["namespace"] == [uniq, "+"]


def test_encoded_slash_stays_in_level(floe, uniq):
    floe.create_namespace([uniq])
    floe.create_namespace([uniq, "x/y"])
    body = assert_ok_json(floe.get(f"/v1/namespaces/{uniq}%1Fx%2Fy"))
    assert body["namespace"] == [uniq, "x/y"]
    # lower-case escapes are the same escapes
    body = assert_ok_json(floe.get(f"/v1/namespaces/{uniq}%1fx%2fy"))
    assert body["namespace"] == [uniq, "x/y"]
    # [uniq, "x", "y"] does not exist
    assert floe.head(f"/v1/namespaces/{uniq}%1Fx%1Fy").status_code == 404
    r = floe.post(f"/v1/namespaces/{uniq}%1Fx%2Fy/properties", json={"updates": {"k": "v"}})
    assert_ok_json(r)
    r = floe.delete(f"/v1/namespaces/{uniq}%1Fx%2Fy")
    assert r.status_code == 204, describe(r)
    assert floe.list_namespaces(parent=[uniq]) == []


def test_percent_encoded_utf8_level(floe, uniq):
    level = "Zürich"
    floe.create_namespace([uniq + level])
    body = assert_ok_json(floe.get(f"/v1/namespaces/{uniq}Z%C3%BCrich"))
    assert body["namespace"] == [uniq + level]


def test_parent_query_encodings(floe, uniq):
    floe.create_namespace([uniq])
    floe.create_namespace([uniq, "a b"])
    floe.create_namespace([uniq, "a b", "kid"])
    for q in (f"{uniq}%1Fa%20b", f"{uniq}%1Fa+b", f"{uniq}%1fa%20b"):
        body = assert_ok_json(floe.get(f"/v1/namespaces?parent={q}"))
        assert body["namespaces"] == [[uniq, "a b", "kid"]], q


# ---------------------------------------------------------------- listing


def test_list_top_level_only_in_byte_order(fresh_floe, base):
    names = ["b", "a", "B", "_", "Z1", "z", "é", "a b", "aa", "A"]
    for n in names:
        fresh_floe.create_namespace([n])
    fresh_floe.create_namespace(["a", "child"])
    fresh_floe.create_namespace(["a", "child", "grandchild"])
    body = assert_ok_json(fresh_floe.get(f"{base}/namespaces"))
    assert "next-page-token" in body and body["next-page-token"] is None, body
    expected = sorted(([n] for n in names), key=lambda l: [x.encode() for x in l])
    assert body["namespaces"] == expected


def test_list_empty_catalog(fresh_floe, base):
    body = assert_ok_json(fresh_floe.get(f"{base}/namespaces"))
    assert body["namespaces"] == []
    assert body.get("next-page-token") is None
    body = assert_ok_json(fresh_floe.get(f"{base}/namespaces?pageToken="))
    assert body["namespaces"] == []
    assert body.get("next-page-token") is None


def test_list_children_of_parent(floe, base, uniq):
    floe.create_namespace([uniq])
    kids = ["z", "b", "a", "é", "B", "a b"]
    for k in kids:
        floe.create_namespace([uniq, k])
    floe.create_namespace([uniq, "a", "deep"])
    floe.create_namespace([uniq, "a", "deep", "deeper"])
    floe.create_namespace([uniq + "_sibling"])  # a name sharing the prefix is not a child
    body = assert_ok_json(floe.get(f"{base}/namespaces", params={"parent": uniq}))
    expected = sorted(([uniq, k] for k in kids), key=lambda l: [x.encode() for x in l])
    assert body["namespaces"] == expected
    assert body.get("next-page-token") is None

    body = assert_ok_json(floe.get(f"{base}/namespaces?parent={uniq}%1Fa"))
    assert body["namespaces"] == [[uniq, "a", "deep"]]
    body = assert_ok_json(floe.get(f"{base}/namespaces?parent={uniq}%1Fa%1Fdeep"))
    assert body["namespaces"] == [[uniq, "a", "deep", "deeper"]]
    body = assert_ok_json(floe.get(f"{base}/namespaces?parent={uniq}%1Fa%1Fdeep%1Fdeeper"))
    assert body["namespaces"] == []


def test_list_unknown_parent_is_404(floe, base, uniq):
    assert_error(floe.get(f"{base}/namespaces", params={"parent": uniq}), 404, "NoSuchNamespaceException")
    floe.create_namespace([uniq])
    assert_error(floe.get(f"{base}/namespaces?parent={uniq}%1Fnope"), 404, "NoSuchNamespaceException")


def _make_children(floe, parent, n):
    floe.create_namespace(parent)
    for i in range(n):
        floe.create_namespace(parent + [f"n{i:03d}"])
    return [parent + [f"n{i:03d}"] for i in range(n)]


@pytest.mark.parametrize("page_size", [1, 2, 3, 7, 100])
def test_pagination_walks_all_children(floe, base, uniq, page_size):
    expected = _make_children(floe, [uniq], 7)
    pages = page_walk(floe, base, page_size, parent=[uniq])
    flat = [ns for p in pages for ns in p]
    assert flat == expected, pages
    assert len({tuple(ns) for ns in flat}) == len(flat), "duplicates across pages"
    assert all(len(p) == page_size for p in pages[:-1]), pages
    assert len(pages) >= -(-len(expected) // page_size)


@pytest.mark.parametrize("page_size", [1, 2])
def test_pagination_walks_top_level(fresh_floe, base, page_size):
    names = ["delta", "alpha", "Echo", "charlie", "bravo", "é", "a b"]
    for n in names:
        fresh_floe.create_namespace([n])
    fresh_floe.create_namespace(["alpha", "inner"])
    full = assert_ok_json(fresh_floe.get(f"{base}/namespaces"))["namespaces"]
    assert len(full) == len(names)
    pages = page_walk(fresh_floe, base, page_size)
    flat = [ns for p in pages for ns in p]
    assert flat == full
    assert len({tuple(ns) for ns in flat}) == len(flat)
    assert all(len(p) == page_size for p in pages[:-1]), pages


def test_pagination_default_page_size_is_100(floe, uniq):
    expected = _make_children(floe, [uniq], 105)
    r = floe.get("/v1/namespaces", params={"parent": uniq, "pageToken": ""})
    body = assert_ok_json(r)
    assert body["namespaces"] == expected[:100]
    token = body["next-page-token"]
    assert isinstance(token, str) and token
    body = assert_ok_json(floe.get("/v1/namespaces", params={"parent": uniq, "pageToken": token}))
    assert body["namespaces"] == expected[100:]
    assert body["next-page-token"] is None
    # without pageToken: everything, no token
    body = assert_ok_json(floe.get("/v1/namespaces", params={"parent": uniq}))
    assert body["namespaces"] == expected
    assert body.get("next-page-token") is None


def test_page_size_without_page_token_returns_everything(floe, uniq):
    expected = _make_children(floe, [uniq], 4)
    body = assert_ok_json(floe.get("/v1/namespaces", params={"parent": uniq, "pageSize": "1"}))
    assert body["namespaces"] == expected
    assert body.get("next-page-token") is None


def test_pagination_survives_concurrent_inserts(floe, uniq):
    """A page token is a position: namespaces added behind it are not repeated."""
    expected = _make_children(floe, [uniq], 6)
    body = assert_ok_json(floe.get("/v1/namespaces", params={"parent": uniq, "pageToken": "", "pageSize": "3"}))
    first = body["namespaces"]
    assert first == expected[:3]
    floe.create_namespace([uniq, "m000"])  # sorts before the position of the token
    body = assert_ok_json(floe.get("/v1/namespaces",
                                   params={"parent": uniq, "pageToken": body["next-page-token"], "pageSize": "3"}))
    assert body["namespaces"] == expected[3:6]


@pytest.mark.parametrize("size", ["0", "-1", "abc", "1.5", "", "1e3", "0x10", "2 "])
def test_bad_page_size_is_400(floe, base, size):
    r = floe.get(f"{base}/namespaces", params={"pageToken": "", "pageSize": size})
    assert_error(r, 400, "BadRequestException")


def test_huge_page_size_is_refused_or_capped(floe, uniq):
    expected = _make_children(floe, [uniq], 3)
    r = floe.get("/v1/namespaces", params={"parent": uniq, "pageToken": "", "pageSize": "9" * 30})
    if r.status_code == 400:
        assert_error(r, 400, "BadRequestException")
    else:
        body = assert_ok_json(r)
        assert body["namespaces"] == expected
        assert body["next-page-token"] is None


@pytest.mark.parametrize("token", ["!!!not-a-page-token!!!", "%%%", "\u00ff\u00fe"])
def test_garbled_page_token_is_400(floe, base, token):
    r = floe.get(f"{base}/namespaces", params={"pageToken": token, "pageSize": "2"})
    assert_error(r, 400, "BadRequestException")


# ---------------------------------------------------------------- drop


def test_drop(floe, base, uniq):
    floe.create_namespace([uniq], {"k": "v"})
    r = floe.delete(f"{base}/namespaces/{uniq}")
    assert r.status_code == 204, describe(r)
    assert r.content == b""
    assert_request_id(r)
    assert_error(floe.get(f"{base}/namespaces/{uniq}"), 404, "NoSuchNamespaceException")
    assert floe.head(f"{base}/namespaces/{uniq}").status_code == 404
    assert [uniq] not in floe.list_namespaces()
    # it can be created again, without the old properties
    body = floe.create_namespace([uniq])
    assert user_properties(body["properties"]) == {}


def test_drop_unknown_is_404(floe, base, uniq):
    assert_error(floe.delete(f"{base}/namespaces/{uniq}"), 404, "NoSuchNamespaceException")


def test_drop_non_empty_is_409(floe, base, uniq):
    floe.create_namespace([uniq])
    floe.create_namespace([uniq, "kid"])
    floe.create_namespace([uniq, "kid", "grandkid"])
    assert_error(floe.delete(f"{base}/namespaces/{uniq}"), 409, "NamespaceNotEmptyException")
    assert_error(floe.delete(f"{base}/namespaces/{uniq}%1Fkid"), 409, "NamespaceNotEmptyException")
    assert floe.head(f"/v1/namespaces/{uniq}").status_code == 204
    assert floe.list_namespaces(parent=[uniq]) == [[uniq, "kid"]]
    for path in (f"{uniq}%1Fkid%1Fgrandkid", f"{uniq}%1Fkid", uniq):
        r = floe.delete(f"{base}/namespaces/{path}")
        assert r.status_code == 204, describe(r)
    assert floe.head(f"/v1/namespaces/{uniq}").status_code == 404


def test_drop_child_keeps_parent_and_siblings(floe, uniq):
    floe.create_namespace([uniq])
    floe.create_namespace([uniq, "a"])
    floe.create_namespace([uniq, "b"])
    assert floe.delete(f"/v1/namespaces/{uniq}%1Fa").status_code == 204
    assert floe.list_namespaces(parent=[uniq]) == [[uniq, "b"]]
    assert floe.head(f"/v1/namespaces/{uniq}").status_code == 204


# ---------------------------------------------------------------- properties


def test_update_properties(floe, base, uniq):
    floe.create_namespace([uniq], {"a": "1", "b": "2", "c": "3"})
    r = floe.post(f"{base}/namespaces/{uniq}/properties",
                  json={"removals": ["b", "zz", "c"], "updates": {"a": "10", "d": "4"}})
    body = assert_ok_json(r)
    assert set(body) >= {"updated", "removed", "missing"}, body
    assert sorted(body["updated"]) == ["a", "d"]
    assert sorted(body["removed"]) == ["b", "c"]
    assert body["missing"] == ["zz"]
    props = user_properties(assert_ok_json(floe.get(f"{base}/namespaces/{uniq}"))["properties"])
    assert props == {"a": "10", "d": "4"}


def test_update_properties_only_updates(floe, uniq):
    floe.create_namespace([uniq])
    body = assert_ok_json(floe.post(f"/v1/namespaces/{uniq}/properties", json={"updates": {"x": "1"}}))
    assert body["updated"] == ["x"]
    assert body["removed"] == []
    assert body.get("missing") in ([], None)
    assert user_properties(floe.get(f"/v1/namespaces/{uniq}").json()["properties"]) == {"x": "1"}


def test_update_properties_only_removals(floe, uniq):
    floe.create_namespace([uniq], {"x": "1", "y": "2"})
    body = assert_ok_json(floe.post(f"/v1/namespaces/{uniq}/properties", json={"removals": ["x", "nope"]}))
    assert body["updated"] == []
    assert body["removed"] == ["x"]
    assert body["missing"] == ["nope"]
    assert user_properties(floe.get(f"/v1/namespaces/{uniq}").json()["properties"]) == {"y": "2"}


def test_update_properties_empty_request(floe, uniq):
    floe.create_namespace([uniq], {"x": "1"})
    body = assert_ok_json(floe.post(f"/v1/namespaces/{uniq}/properties", json={}))
    assert body["updated"] == [] and body["removed"] == []
    assert body.get("missing") in ([], None)
    assert user_properties(floe.get(f"/v1/namespaces/{uniq}").json()["properties"]) == {"x": "1"}


def test_update_properties_same_value_is_updated(floe, uniq):
    floe.create_namespace([uniq], {"x": "1"})
    body = assert_ok_json(floe.post(f"/v1/namespaces/{uniq}/properties", json={"updates": {"x": "1"}}))
    assert body["updated"] == ["x"]


def test_update_properties_key_in_both_is_422(floe, base, uniq):
    floe.create_namespace([uniq], {"a": "1", "b": "2"})
    r = floe.post(f"{base}/namespaces/{uniq}/properties",
                  json={"removals": ["a", "b"], "updates": {"a": "9", "c": "3"}})
    assert_error(r, 422, "UnprocessableEntityException")
    assert user_properties(floe.get(f"/v1/namespaces/{uniq}").json()["properties"]) == {"a": "1", "b": "2"}


def test_update_properties_unknown_namespace_is_404(floe, base, uniq):
    r = floe.post(f"{base}/namespaces/{uniq}/properties", json={"updates": {"a": "1"}})
    assert_error(r, 404, "NoSuchNamespaceException")
    assert floe.head(f"/v1/namespaces/{uniq}").status_code == 404


def test_update_properties_nested(floe, uniq):
    floe.create_namespace([uniq])
    floe.create_namespace([uniq, "a b"], {"k": "v"})
    body = assert_ok_json(floe.post(f"/v1/namespaces/{uniq}%1Fa%20b/properties",
                                    json={"updates": {"k": "w"}, "removals": []}))
    assert body["updated"] == ["k"]
    assert user_properties(floe.get(f"/v1/namespaces/{ns_path([uniq, 'a b'])}").json()["properties"]) == {"k": "w"}
    # the parent is untouched
    assert user_properties(floe.get(f"/v1/namespaces/{uniq}").json()["properties"]) == {}


# ---------------------------------------------------------------- level limits


def test_level_of_255_bytes_is_accepted(floe, uniq):
    ascii_level = (uniq + "x" * 255)[:255]
    floe.create_namespace([ascii_level])
    assert floe.head(f"/v1/namespaces/{ns_path([ascii_level])}").status_code == 204
    # 127 two-byte characters + 1 byte = 255 bytes (limit is in bytes)
    mb_level = "é" * 127 + uniq[0]
    floe.create_namespace([mb_level])
    body = assert_ok_json(floe.get(f"/v1/namespaces/{ns_path([mb_level])}"))
    assert body["namespace"] == [mb_level]


def test_16_levels_are_accepted(floe, uniq):
    levels = [uniq] + [f"l{i}" for i in range(2, 17)]
    assert len(levels) == 16
    for i in range(1, 17):
        floe.create_namespace(levels[:i])
    body = assert_ok_json(floe.get(f"/v1/namespaces/{ns_path(levels)}"))
    assert body["namespace"] == levels


# ---------------------------------------------------------------- concurrency


def test_concurrent_creates_of_one_namespace(floe, uniq):
    def create(_):
        return floe_post(floe, "/v1/namespaces", {"namespace": [uniq], "properties": {"p": "1"}})

    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        results = list(ex.map(create, range(24)))
    codes = sorted(code for code, _ in results)
    assert codes == [200] + [409] * 23, results
    for code, body in results:
        if code == 409:
            assert_error_body(body, 409, "AlreadyExistsException")
    assert floe.list_namespaces(parent=[uniq]) == []
    assert user_properties(floe.get(f"/v1/namespaces/{uniq}").json()["properties"]) == {"p": "1"}


def test_concurrent_property_updates_are_not_lost(floe, uniq):
    floe.create_namespace([uniq], {"base": "0"})

    def update(i):
        return floe_post(floe, f"/v1/namespaces/{uniq}/properties", {"updates": {f"k{i:02d}": str(i)}})

    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        results = list(ex.map(update, range(48)))
    assert {code for code, _ in results} == {200}, results
    props = user_properties(floe.get(f"/v1/namespaces/{uniq}").json()["properties"])
    assert props == {"base": "0", **{f"k{i:02d}": str(i) for i in range(48)}}


def test_drop_parent_racing_create_child_leaves_no_orphan(floe, uniq):
    """Dropping a namespace while a child is being created: either the drop
    fails with 409 or the child create fails with 404, never both succeed."""
    for round_ in range(15):
        parent = [f"{uniq}_{round_}"]
        floe.create_namespace(parent)
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            child = ex.submit(floe_post, floe, "/v1/namespaces", {"namespace": parent + ["kid"]})
            drop = ex.submit(lambda: requests.delete(floe.url + f"/v1/namespaces/{ns_path(parent)}", timeout=15))
            child_code, _ = child.result()
            drop_code = drop.result().status_code
        assert (child_code, drop_code) in ((200, 409), (404, 204)), (round_, child_code, drop_code)
        if drop_code == 204:
            assert floe.head(f"/v1/namespaces/{ns_path(parent + ['kid'])}").status_code == 404
            r = floe.get("/v1/namespaces", params={"parent": parent[0]})
            assert_error(r, 404, "NoSuchNamespaceException")
        else:
            assert floe.list_namespaces(parent=parent) == [parent + ["kid"]]


def floe_post(floe, path, body):
    r = requests.post(floe.url + path, json=body, timeout=15)
    try:
        return r.status_code, r.json()
    except ValueError:
        return r.status_code, r.text


# ---------------------------------------------------------------- connections


def test_keep_alive_connection_serves_many_requests(floe, uniq):
    body = json.dumps({"namespace": [uniq]}).encode()
    requests_ = [
        b"GET /v1/namespaces HTTP/1.1\r\nHost: floe\r\n\r\n",
        (b"POST /v1/namespaces HTTP/1.1\r\nHost: floe\r\nContent-Type: application/json\r\n"
         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body),
        f"GET /v1/namespaces/{uniq} HTTP/1.1\r\nHost: floe\r\n\r\n".encode(),
        f"HEAD /v1/namespaces/{uniq} HTTP/1.1\r\nHost: floe\r\n\r\n".encode(),
        b"GET /v1/namespaces/no_such_namespace_here HTTP/1.1\r\nHost: floe\r\n\r\n",
        b"GET /health HTTP/1.1\r\nHost: floe\r\n\r\n",
    ]
    expected = [200, 200, 200, 204, 404, 200]
    with socket.create_connection((floe.host, floe.port), timeout=10) as s:
        for req, status in zip(requests_, expected):
            s.sendall(req)
            resp = read_raw_response(s, timeout=10, head=req.startswith(b"HEAD"))
            assert resp.status == status, (req, resp)
            assert resp.headers.get("connection", "").lower() != "close", (req, resp)
