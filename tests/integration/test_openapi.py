"""api-spec/openapi.yaml against floe: the document is valid OpenAPI 3.1,
lists exactly the routes floe serves, and every listed route answers on a
live daemon (with and without the optional /{prefix} segment)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests
import yaml
from openapi_spec_validator import validate

REPO = Path(__file__).resolve().parents[2]
SPEC_PATH = REPO / "api-spec" / "openapi.yaml"
FLOE_BIN = Path(os.environ.get("FLOE_BIN", REPO / "build" / "server" / "floe"))

HTTP_METHODS = ("get", "post", "put", "delete", "head", "patch")
PREFIX = "wh"
NAMESPACE = "nope%1Fnope"  # two levels, "nope" and "nope"; does not exist
TIMEOUT = 10


def load_spec():
    with open(SPEC_PATH, encoding="utf-8") as f:
        return yaml.safe_load(f)


def spec_routes(spec):
    """The set of (METHOD, path) the document lists."""
    return {
        (method.upper(), path)
        for path, item in spec["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }


def concrete(path, prefixed=True):
    """A request path for a templated one: {prefix} -> wh (or the segment
    dropped), {namespace} -> nope%1Fnope, any other parameter -> x."""
    if not prefixed:
        assert path.startswith("/v1/{prefix}/"), path
        path = "/v1/" + path[len("/v1/{prefix}/"):]
    path = path.replace("{prefix}", PREFIX).replace("{namespace}", NAMESPACE)
    return re.sub(r"\{[^/{}]+\}", "x", path)


SPEC = load_spec()
ROUTES = sorted(spec_routes(SPEC))
# (method, templated path, prefixed?) for every request test_route_is_served sends.
REQUESTS = [(m, p, True) for m, p in ROUTES] + [
    (m, p, False) for m, p in ROUTES if p.startswith("/v1/{prefix}/")
]


def test_document_is_valid_openapi_3_1():
    assert str(SPEC["openapi"]).startswith("3.1."), SPEC["openapi"]
    validate(SPEC)  # raises on any violation


def test_operation_ids_are_unique():
    ids = [
        op["operationId"]
        for item in SPEC["paths"].values()
        for method, op in item.items()
        if method in HTTP_METHODS
    ]
    assert len(ids) == len(set(ids)), ids


def route_table():
    """floe's route table (`--print-routes=json`): {(METHOD, path): row}."""
    if not FLOE_BIN.exists():
        pytest.fail(f"floe binary not found at {FLOE_BIN}; build it or set FLOE_BIN")
    out = subprocess.run(
        [str(FLOE_BIN), "--print-routes=json"],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout
    return {(r["method"], r["path"]): r for r in json.loads(out)}


def operations():
    for path, item in SPEC["paths"].items():
        for method, op in item.items():
            if method in HTTP_METHODS:
                yield method.upper(), path, op


def test_document_routes_match_floe_route_table():
    served = set(route_table())
    documented = set(ROUTES)
    assert not served - documented, f"served but not documented: {sorted(served - documented)}"
    assert not documented - served, f"documented but not served: {sorted(documented - served)}"


def test_every_route_states_a_privilege_or_is_public():
    """No route is left without a privilege, an explicit public, or an
    explicit 'any authenticated principal'."""
    for (method, path), r in route_table().items():
        if r["access"] in ("public", "public-if-configured", "any-principal"):
            assert not r["privileges"] and r["demands"] is None, (method, path, r)
            continue
        assert r["access"] == "privileged", (method, path, r)
        assert r["privileges"] or r["demands"], f"{method} {path} demands nothing: {r}"
        assert r["object"] != "-", (method, path, r)


def test_security_matches_route_table():
    """A public route says `security: []`; every other one keeps the
    document's bearer security."""
    table = route_table()
    assert SPEC["security"] == [{"BearerAuth": []}, {"OAuth2": ["catalog"]}]
    for method, path, op in operations():
        r = table[(method, path)]
        public = r["access"] in ("public", "public-if-configured")
        if public:
            assert op.get("security") == [], f"{method} {path} is public: security: []"
        else:
            assert op.get("security", SPEC["security"]) == SPEC["security"], (
                f"{method} {path} needs a token, the document says {op.get('security')}")


def test_authorization_matches_route_table():
    """Each operation's x-floe-authorization is its row of the route table:
    who may call it, the privileges, their object, what the body adds."""
    table = route_table()
    for method, path, op in operations():
        r = table[(method, path)]
        got = op.get("x-floe-authorization")
        assert got is not None, f"{method} {path} has no x-floe-authorization"
        want = {"access": r["access"]}
        if r["access"] == "privileged":
            want["privileges"] = r["privileges"]
            want["object"] = r["object"]
            if "any-of" in r["flags"]:
                want["any-of"] = True
            if r["demands"] is not None:
                want["demands"] = r["demands"]
        assert got == want, f"{method} {path}: document {got}, route table {want}"


def test_idempotency_key_on_exactly_the_mutating_routes():
    table = route_table()
    for method, path, op in operations():
        takes_key = any(p.get("$ref", "").endswith("/idempotencyKey")
                        for p in op.get("parameters", []))
        mutating = "mutating" in table[(method, path)]["flags"]
        assert takes_key == mutating, (
            f"{method} {path}: Idempotency-Key documented {takes_key}, route mutating {mutating}")
        # A key that is no UUID is 400, one reused for another request
        # 422; the document says so.
        if takes_key:
            assert {"400", "422"} <= set(op["responses"]), (
                f"{method} {path} takes a key, documents {sorted(op['responses'])}")


def test_a_path_name_may_be_refused_400():
    """The gate checks every path parameter as a name (valid UTF-8, no
    control character): every operation with one documents the 400."""
    for method, path, op in operations():
        named = [p for p in re.findall(r"\{(\w+)\}", path) if p != "prefix"]
        if named and method != "HEAD":
            assert "400" in op["responses"], f"{method} {path} documents no 400"


def test_route_documents_are_current():
    """scripts/route-table.py --check: api-spec/openapi.yaml and
    docs/auth.md say what the route table says."""
    res = subprocess.run([sys.executable, str(REPO / "scripts" / "route-table.py"), "--check",
                          str(FLOE_BIN)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


def _error_type(resp):
    try:
        return resp.json()["error"]["type"]
    except (ValueError, KeyError, TypeError):
        return None


@pytest.mark.parametrize(
    "method,path,prefixed",
    REQUESTS,
    ids=[f"{m} {p if pre else p.replace('/{prefix}', '', 1)}" for m, p, pre in REQUESTS],
)
def test_route_is_served(floe, method, path, prefixed):
    url = floe.url + concrete(path, prefixed)
    kwargs = {"json": {}} if method == "POST" else {}
    resp = requests.request(method, url, timeout=TIMEOUT, allow_redirects=False, **kwargs)

    assert resp.status_code != 405, f"{method} {url}: 405, Allow: {resp.headers.get('Allow')}"
    assert "X-Request-Id" in resp.headers, f"{method} {url}: no X-Request-Id header"

    if method == "HEAD":
        # No body to tell an unknown route from an unknown namespace: a 404
        # is accepted when GET on the same path knows the route.
        if resp.status_code == 404:
            probe = requests.get(url, timeout=TIMEOUT, allow_redirects=False)
            assert _error_type(probe) != "NotFoundException", f"{method} {url}: no such route"
        return

    if resp.status_code in (400, 401) and path == "/v1/oauth/tokens":
        # The OAuth2 error body of RFC 6749 (authentication is off here).
        assert resp.json()["error"] == "invalid_request", resp.text
        return
    if resp.status_code >= 300:
        body = resp.json()
        assert set(body) == {"error"}, body
        err = body["error"]
        assert isinstance(err.get("message"), str), body
        assert isinstance(err.get("type"), str), body
        assert err.get("code") == resp.status_code, body
        assert not (resp.status_code == 404 and err["type"] == "NotFoundException"), (
            f"{method} {url}: no such route: {err['message']}"
        )


def test_config_advertises_documented_catalog_routes(floe):
    """Clients (PyIceberg) call only what /v1/config advertises."""
    resp = requests.get(floe.url + "/v1/config", timeout=TIMEOUT)
    assert resp.status_code == 200, resp.text
    advertised = set()
    for entry in resp.json()["endpoints"]:
        method, _, path = entry.partition(" ")
        advertised.add((method, path))
    catalog = {(m, p) for m, p in ROUTES if p.startswith("/v1/{prefix}/")}
    assert advertised == catalog, (
        f"advertised, not documented: {sorted(advertised - catalog)}; "
        f"documented, not advertised: {sorted(catalog - advertised)}"
    )
