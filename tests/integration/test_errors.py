"""Error handling of floe: bad requests are refused with the Iceberg error
body, change nothing, and are logged with their request id."""

from __future__ import annotations

import json
import re
import socket
import time

import pytest

from conftest import (
    Floe,
    assert_error,
    assert_error_body,
    assert_ok_json,
    assert_request_id,
    describe,
    ns_path,
    read_raw_response,
    user_properties,
)

JSON = {"Content-Type": "application/json"}


def catalog_state(floe):
    """Every namespace with its properties (walks the tree)."""
    state = {}
    todo = [None]
    while todo:
        parent = todo.pop()
        params = {} if parent is None else {"parent": "\x1f".join(parent)}
        r = floe.get("/v1/namespaces", params=params)
        assert r.status_code == 200, describe(r)
        for ns in r.json()["namespaces"]:
            props = user_properties(floe.get(f"/v1/namespaces/{ns_path(ns)}").json()["properties"])
            state[tuple(ns)] = props
            todo.append(ns)
    return state


@pytest.fixture
def unchanged(floe):
    """Checks that the catalog is the same after the test's bad requests."""
    before = catalog_state(floe)

    def check():
        after = catalog_state(floe)
        assert after == before, (
            f"a refused request changed the catalog: added {sorted(set(after) - set(before))}, "
            f"removed {sorted(set(before) - set(after))}")
    return check


# ---------------------------------------------------------------- create: bad bodies

LEVEL_MSG = ("level", "namespace")
UTF8_MSG = ("utf-8", "utf8", "unicode", "encoding", "decode")

BAD_CREATE_BODIES = [
    # (id, raw body, words the message should contain (any of))
    ("malformed", b'{"namespace": ["victim"', None),
    ("trailing-garbage", b'{"namespace": ["victim"]} x', None),
    ("not-json", b"namespace=victim", None),
    ("array", b'["victim"]', None),
    ("string", b'"victim"', None),
    ("number", b"42", None),
    ("null", b"null", None),
    ("true", b"true", None),
    ("empty-object", b"{}", ("namespace",)),
    ("missing-namespace", b'{"properties": {"k": "v"}}', ("namespace",)),
    ("namespace-string", b'{"namespace": "victim"}', ("namespace",)),
    ("namespace-object", b'{"namespace": {"0": "victim"}}', ("namespace",)),
    ("namespace-null", b'{"namespace": null}', ("namespace",)),
    ("namespace-empty-array", b'{"namespace": []}', ("namespace", "level", "empty")),
    ("level-number", b'{"namespace": [1]}', LEVEL_MSG),
    ("level-null", b'{"namespace": [null]}', LEVEL_MSG),
    ("level-array", b'{"namespace": [["victim"]]}', LEVEL_MSG),
    ("level-bool", b'{"namespace": [true]}', LEVEL_MSG),
    ("properties-array", b'{"namespace": ["victim"], "properties": []}', ("properties",)),
    ("properties-string", b'{"namespace": ["victim"], "properties": "k=v"}', ("properties",)),
    ("property-number", b'{"namespace": ["victim"], "properties": {"k": 1}}', ("propert", "k")),
    ("property-bool", b'{"namespace": ["victim"], "properties": {"k": true}}', ("propert", "k")),
    ("property-object", b'{"namespace": ["victim"], "properties": {"k": {"x": "y"}}}', ("propert", "k")),
    ("property-array", b'{"namespace": ["victim"], "properties": {"k": ["v"]}}', ("propert", "k")),
    ("empty-level", b'{"namespace": [""]}', ("empty", "level", "length", "at least")),
    ("level-256-bytes", json.dumps({"namespace": ["v" * 256]}).encode(), ("255", "long", "length", "bytes")),
    ("level-256-bytes-multibyte", json.dumps({"namespace": ["\u00e9" * 128]}, ensure_ascii=False).encode(),
     ("255", "long", "length", "bytes")),
    ("level-tab", b'{"namespace": ["vic\\ttim"]}', ("control",)),
    ("level-newline", b'{"namespace": ["vic\\ntim"]}', ("control",)),
    ("level-unit-separator", b'{"namespace": ["vic\\u001ftim"]}', ("control",)),
    ("level-soh", b'{"namespace": ["vic\\u0001tim"]}', ("control",)),
    ("level-nul", b'{"namespace": ["vic\\u0000tim"]}', None),
    ("invalid-utf8-level", b'{"namespace": ["vic\xfftim"]}', UTF8_MSG),
    ("invalid-utf8-truncated", b'{"namespace": ["victim\xc3"]}', UTF8_MSG),
    ("invalid-utf8-overlong", b'{"namespace": ["vic\xc0\xaftim"]}', UTF8_MSG),
    ("invalid-utf8-surrogate", b'{"namespace": ["vic\xed\xa0\x80tim"]}', UTF8_MSG),
    ("lone-surrogate-escape", b'{"namespace": ["vic\\ud800tim"]}', None),
    ("invalid-utf8-property", b'{"namespace": ["victim"], "properties": {"k": "\xc3("}}',
     UTF8_MSG),
    ("invalid-utf8-property-key", b'{"namespace": ["victim"], "properties": {"\xff": "v"}}',
     UTF8_MSG),
    ("empty-body", b"", None),
]


@pytest.mark.parametrize("body,words", [(b, w) for _, b, w in BAD_CREATE_BODIES],
                         ids=[i for i, _, _ in BAD_CREATE_BODIES])
@pytest.mark.parametrize("base", ["/v1", "/v1/warehouse"])
def test_bad_create_body_is_400(floe, unchanged, base, body, words):
    r = floe.post(f"{base}/namespaces", data=body, headers=JSON)
    assert_error(r, 400, "BadRequestException", message_has=words)
    unchanged()


def test_create_without_content_type_still_validates(floe, unchanged):
    r = floe.post("/v1/namespaces", data=b'{"namespace": 1}')
    assert_error(r, 400, "BadRequestException")
    unchanged()


def test_17_levels_is_400(floe):
    levels = ["deep"] + [f"l{i}" for i in range(2, 17)]
    for i in range(1, 17):
        floe.create_namespace(levels[:i])
    before = floe.list_namespaces(parent=levels)
    r = floe.post("/v1/namespaces", json={"namespace": levels + ["l17"]})
    assert_error(r, 400, "BadRequestException", message_has=("16", "levels", "deep", "many"))
    assert floe.list_namespaces(parent=levels) == before == []
    # in a path too
    r = floe.get(f"/v1/namespaces/{ns_path(levels + ['l17'])}")
    assert_error(r, 400, "BadRequestException", message_has=("16", "levels", "deep", "many"))
    r = floe.get("/v1/namespaces", params={"parent": "\x1f".join(levels + ["l17"])})
    assert_error(r, 400, "BadRequestException")


def test_many_levels_is_400(floe, unchanged):
    r = floe.post("/v1/namespaces", json={"namespace": ["x"] * 1000})
    assert_error(r, 400, "BadRequestException")
    unchanged()


# ---------------------------------------------------------------- properties: bad bodies

BAD_PROPERTIES_BODIES = [
    ("malformed", b'{"updates": {"k": "v"}'),
    ("empty-body", b""),
    ("array", b'[]'),
    ("string", b'"k"'),
    ("null", b"null"),
    ("removals-string", b'{"removals": "keep"}'),
    ("removals-object", b'{"removals": {"keep": "1"}}'),
    ("removal-number", b'{"removals": [1]}'),
    ("removal-null", b'{"removals": [null]}'),
    ("updates-array", b'{"updates": ["k", "v"]}'),
    ("updates-string", b'{"updates": "k=v"}'),
    ("update-number", b'{"updates": {"k": 1}}'),
    ("update-object", b'{"updates": {"k": {}}}'),
    ("update-bool", b'{"updates": {"keep": false}}'),
    ("mixed-valid-and-invalid", b'{"removals": ["keep"], "updates": {"a": "1", "b": 2}}'),
    ("invalid-utf8-update", b'{"updates": {"k": "\xff"}}'),
    ("invalid-utf8-removal", b'{"removals": ["ke\xc3"]}'),
]


@pytest.mark.parametrize("body", [b for _, b in BAD_PROPERTIES_BODIES], ids=[i for i, _ in BAD_PROPERTIES_BODIES])
def test_bad_properties_body_is_400(floe, body):
    ns = "props_target"
    if floe.head(f"/v1/namespaces/{ns}").status_code == 404:
        floe.create_namespace([ns], {"keep": "1"})
    r = floe.post(f"/v1/namespaces/{ns}/properties", data=body, headers=JSON)
    assert_error(r, 400, "BadRequestException")
    assert user_properties(floe.get(f"/v1/namespaces/{ns}").json()["properties"]) == {"keep": "1"}


def test_bad_properties_body_on_unknown_namespace(floe):
    r = floe.post("/v1/namespaces/no_such_ns_here/properties", data=b"{", headers=JSON)
    # The body is read before the namespace is looked up: a malformed body
    # is a 400 wherever it is sent.
    assert_error(r, 400, "BadRequestException")


# ---------------------------------------------------------------- bad paths

BAD_NAMESPACE_PATHS = [
    ("invalid-utf8", "vic%FFtim", UTF8_MSG),
    ("invalid-utf8-seq", "vic%C3%28tim", UTF8_MSG),
    ("overlong-utf8", "vic%C0%AFtim", UTF8_MSG),
    ("surrogate-utf8", "vic%ED%A0%80tim", UTF8_MSG),
    ("truncated-utf8", "victim%E6%97", UTF8_MSG),
    ("empty-middle-level", "a%1F%1Fb", ("empty", "level", "length")),
    ("empty-last-level", "a%1F", ("empty", "level", "length")),
    ("empty-first-level", "%1Fa", ("empty", "level", "length")),
    ("only-separator", "%1F", ("empty", "level", "length")),
    ("nul", "vic%00tim", None),
    ("control-char", "vic%01tim", ("control",)),
    ("tab", "vic%09tim", ("control",)),
    ("level-256-bytes", "v" * 256, ("255", "long", "length", "bytes")),
    ("level-256-bytes-multibyte", "%C3%A9" * 128, ("255", "long", "length", "bytes")),
]


@pytest.mark.parametrize("path,words", [(p, w) for _, p, w in BAD_NAMESPACE_PATHS],
                         ids=[i for i, _, _ in BAD_NAMESPACE_PATHS])
@pytest.mark.parametrize("method,suffix", [("GET", ""), ("DELETE", ""), ("POST", "/properties")],
                         ids=["load", "drop", "properties"])
def test_bad_namespace_in_path_is_400(floe, unchanged, method, suffix, path, words):
    kw = {"json": {"updates": {"k": "v"}}} if method == "POST" else {}
    r = floe.request(method, f"/v1/namespaces/{path}{suffix}", **kw)
    assert_error(r, 400, "BadRequestException", message_has=words)
    unchanged()


def _raw_call(floe, method, path, body=b""):
    head = (f"{method} {path} HTTP/1.1\r\nHost: {floe.host}:{floe.port}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    return floe.raw(head.encode() + body)


@pytest.mark.parametrize("path", ["vic%ZZtim", "victim%2", "victim%", "vic%G1tim"])
@pytest.mark.parametrize("method,suffix", [("GET", ""), ("DELETE", ""), ("POST", "/properties")],
                         ids=["load", "drop", "properties"])
def test_malformed_percent_escape_is_400(floe, unchanged, method, suffix, path):
    """'%' not followed by two hex digits is not a valid path (RFC 3986)."""
    body = b'{"updates": {"k": "v"}}' if method == "POST" else b""
    resp = _raw_call(floe, method, f"/v1/namespaces/{path}{suffix}", body)
    where = f"{method} /v1/namespaces/{path}{suffix}: {resp!r}"
    assert resp.status == 400, where
    assert resp.headers.get("x-request-id"), where
    assert_error_body(resp.json(), 400, "BadRequestException", where)
    unchanged()


@pytest.mark.parametrize("path", ["vic%FFtim", "a%1F%1Fb", "v" * 256])
def test_bad_namespace_in_head_is_400_without_body(floe, path):
    r = floe.head(f"/v1/namespaces/{path}")
    assert r.status_code == 400, describe(r)
    assert r.content == b""
    assert_request_id(r)


@pytest.mark.parametrize("parent", ["vic%FFtim", "a%1F%1Fb", "%1F", "vic%01tim", "v" * 256])
def test_bad_parent_is_400(floe, parent):
    r = floe.get(f"/v1/namespaces?parent={parent}")
    assert_error(r, 400, "BadRequestException")


# ---------------------------------------------------------------- routing

UNKNOWN_ROUTES = [
    ("GET", "/"),
    ("GET", "/nothing"),
    ("GET", "/v1"),
    ("GET", "/v1/"),
    ("GET", "/v1/nothing"),
    ("GET", "/v2/namespaces"),
    ("GET", "/v1/a/b/namespaces"),
    ("GET", "/v1/namespaces/a/nothing"),
    ("GET", "/v1/warehouse/namespaces/a/nothing/else"),
    ("POST", "/v1/nothing"),
    ("DELETE", "/v1/nothing/at/all"),
    ("GET", "/healthz"),
]


@pytest.mark.parametrize("method,path", UNKNOWN_ROUTES)
def test_unknown_route_is_404(floe, method, path):
    r = floe.request(method, path)
    assert_error(r, 404, "NotFoundException")


WRONG_METHODS = [
    ("PUT", "/v1/namespaces", {"GET", "POST"}),
    ("DELETE", "/v1/namespaces", {"GET", "POST"}),
    ("PATCH", "/v1/warehouse/namespaces", {"GET", "POST"}),
    ("PATCH", "/v1/namespaces/x", {"GET", "HEAD", "DELETE"}),
    ("POST", "/v1/namespaces/x", {"GET", "HEAD", "DELETE"}),
    ("PUT", "/v1/warehouse/namespaces/a%1Fb", {"GET", "HEAD", "DELETE"}),
    ("GET", "/v1/namespaces/x/properties", {"POST"}),
    ("DELETE", "/v1/warehouse/namespaces/x/properties", {"POST"}),
    ("POST", "/v1/config", {"GET"}),
    ("DELETE", "/health", {"GET"}),
    ("POST", "/ready", {"GET"}),
]


@pytest.mark.parametrize("method,path,allowed", WRONG_METHODS)
def test_wrong_method_is_405_with_allow(floe, unchanged, method, path, allowed):
    r = floe.request(method, path, json={"namespace": ["victim"]} if method in ("POST", "PUT", "PATCH") else None)
    assert_error(r, 405, "MethodNotAllowedException")
    allow = r.headers.get("Allow")
    assert allow, f"405 without an Allow header: {describe(r)}"
    methods = {m.strip().upper() for m in allow.split(",") if m.strip()}
    assert allowed <= methods, f"Allow {allow!r} lacks {sorted(allowed - methods)}"
    assert method not in methods, f"Allow {allow!r} lists the refused method {method}"
    unchanged()


# ---------------------------------------------------------------- request ids and logs


def test_every_response_has_a_request_id(floe):
    if floe.head("/v1/namespaces/rid_ns").status_code == 404:
        floe.create_namespace(["rid_ns"])
    responses = [
        floe.get("/health"),
        floe.get("/ready"),
        floe.get("/v1/config"),
        floe.get("/v1/namespaces"),
        floe.get("/v1/namespaces/rid_ns"),
        floe.head("/v1/namespaces/rid_ns"),
        floe.head("/v1/namespaces/nope"),
        floe.get("/v1/namespaces/nope"),
        floe.post("/v1/namespaces", data=b"{", headers=JSON),
        floe.request("PUT", "/v1/namespaces"),
        floe.get("/no/such/route"),
        floe.delete("/v1/namespaces/nope"),
    ]
    ids = [assert_request_id(r) for r in responses]
    assert len(set(ids)) == len(ids), f"request ids repeat: {ids}"


@pytest.mark.parametrize("method,path,status", [
    ("GET", "/v1/namespaces", 200),
    ("GET", "/v1/namespaces/no_such_ns_for_log", 404),
    ("POST", "/v1/namespaces", 400),
    ("HEAD", "/v1/namespaces/no_such_ns_for_log", 404),
    ("PUT", "/v1/config", 405),
    ("GET", "/health", 200),
])
def test_access_log_line_per_request(floe, method, path, status):
    r = floe.request(method, path, data=b"{" if method == "POST" else None)
    assert r.status_code == status, describe(r)
    rid = assert_request_id(r)
    lines = floe.access_log_lines(rid)
    assert len(lines) == 1, f"expected one access-log line with rid={rid}, got {lines}\nlog tail:\n{floe.log_tail()}"
    line = lines[0]
    assert re.search(rf"\b{method}\b", line), line
    assert path in line, line
    assert re.search(rf"\b{status}\b", line), line
    assert re.search(r"\b\d+us\b", line), line


# ---------------------------------------------------------------- body size limits


def _headers_only(floe, path, content_length, extra=""):
    return (f"POST {path} HTTP/1.1\r\nHost: {floe.host}:{floe.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {content_length}\r\n{extra}\r\n").encode()


def _check_413(resp, where=""):
    assert resp.status == 413, f"{where}: {resp!r}"
    assert resp.headers.get("x-request-id"), f"{where}: no X-Request-Id: {resp!r}"
    assert_error_body(resp.json(), 413, "RequestEntityTooLargeException", where)


@pytest.mark.parametrize("length", [8388609, 10**12])
def test_oversized_content_length_is_413_without_reading_body(floe, unchanged, length):
    """Only the headers are sent: the answer must come without the body."""
    with socket.create_connection((floe.host, floe.port), timeout=10) as s:
        start = time.monotonic()
        s.sendall(_headers_only(floe, "/v1/namespaces", length))
        resp = read_raw_response(s, timeout=5)
        assert time.monotonic() - start < 5
    _check_413(resp, f"Content-Length {length}")
    unchanged()


def test_oversized_content_length_with_expect_continue_is_413(floe, unchanged):
    with socket.create_connection((floe.host, floe.port), timeout=10) as s:
        s.sendall(_headers_only(floe, "/v1/namespaces", 50_000_000, "Expect: 100-continue\r\n"))
        resp = read_raw_response(s, timeout=5)
    _check_413(resp, "Expect: 100-continue")
    unchanged()


def test_oversized_content_length_on_properties_is_413(floe):
    ns = "big_props_target"
    if floe.head(f"/v1/namespaces/{ns}").status_code == 404:
        floe.create_namespace([ns], {"keep": "1"})
    with socket.create_connection((floe.host, floe.port), timeout=10) as s:
        s.sendall(_headers_only(floe, f"/v1/namespaces/{ns}/properties", 9_000_000))
        resp = read_raw_response(s, timeout=5)
    _check_413(resp, "properties")
    assert user_properties(floe.get(f"/v1/namespaces/{ns}").json()["properties"]) == {"keep": "1"}


def _body_of_size(name, size):
    """A valid create-namespace JSON body of exactly `size` bytes."""
    base = {"namespace": [name], "properties": {"pad": ""}}
    empty = len(json.dumps(base).encode())
    base["properties"]["pad"] = "x" * (size - empty)
    data = json.dumps(base).encode()
    assert len(data) == size
    return data


@pytest.fixture(scope="module")
def small_floe(postgres):
    f = Floe(args=["--max-body-bytes=1024"], env={"FLOE_DATABASE_URL": postgres.new_database()})
    try:
        f.wait_ready(30)
        yield f
        assert f.stop() == 0, f.log_tail()
    finally:
        f.cleanup()


def test_body_at_the_limit_is_accepted(small_floe):
    r = small_floe.post("/v1/namespaces", data=_body_of_size("at_limit", 1024), headers=JSON)
    assert_ok_json(r)
    assert ["at_limit"] in small_floe.list_namespaces()


def test_body_over_the_limit_is_413(small_floe):
    data = _body_of_size("over_limit", 1025)
    r = small_floe.post("/v1/namespaces", data=data, headers=JSON)
    assert_error(r, 413, "RequestEntityTooLargeException")
    assert ["over_limit"] not in small_floe.list_namespaces()


def _chunked_request(floe, path, data, chunk=256):
    out = [f"POST {path} HTTP/1.1\r\nHost: {floe.host}:{floe.port}\r\n"
           f"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode()]
    for i in range(0, len(data), chunk):
        part = data[i:i + chunk]
        out.append(f"{len(part):x}\r\n".encode() + part + b"\r\n")
    out.append(b"0\r\n\r\n")
    return b"".join(out)


def test_chunked_body_under_the_limit_is_accepted(small_floe):
    data = _body_of_size("chunked_ok", 900)
    resp = small_floe.raw(_chunked_request(small_floe, "/v1/namespaces", data))
    assert resp.status == 200, resp
    assert resp.json()["namespace"] == ["chunked_ok"]
    assert ["chunked_ok"] in small_floe.list_namespaces()


@pytest.mark.parametrize("size", [1025, 4096, 200_000])
def test_chunked_body_over_the_limit_is_413(small_floe, size):
    name = f"chunked_big_{size}"
    data = _body_of_size(name, size)
    with socket.create_connection((small_floe.host, small_floe.port), timeout=10) as s:
        try:
            s.sendall(_chunked_request(small_floe, "/v1/namespaces", data, chunk=512))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may answer and close before the whole body is sent
        resp = read_raw_response(s, timeout=5)
    _check_413(resp, f"chunked {size}")
    assert [name] not in small_floe.list_namespaces()


def test_server_still_serves_after_413(small_floe):
    with socket.create_connection((small_floe.host, small_floe.port), timeout=10) as s:
        s.sendall(_headers_only(small_floe, "/v1/namespaces", 10**9))
        _check_413(read_raw_response(s, timeout=5))
    assert small_floe.get("/health").status_code == 200
    r = small_floe.post("/v1/namespaces", json={"namespace": ["after_413"]})
    assert_ok_json(r)


def test_small_limit_error_bodies_are_still_sent(small_floe):
    """An error answer is not itself limited by --max-body-bytes."""
    r = small_floe.get("/v1/namespaces/" + "v" * 256)
    assert_error(r, 400, "BadRequestException")
