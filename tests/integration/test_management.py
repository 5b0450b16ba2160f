"""The management API under /management/v1 (docs/auth.md "The management
API"): principals with a credential shown once, disabling that stops a token
at once, secret rotation, roles, members and grants, "what may X do on Y",
every change in the audit log by the acting principal, ADMIN required, and
clear 4xx answers for bad input. floe runs with FLOE_AUTH=floe."""
import pytest
import requests

from conftest import (TableHandle, assert_error, assert_ok_json, audit_events, client_token,
                      describe)

M = "/management/v1"


@pytest.fixture(scope="module")
def authed(postgres, tmp_path_factory):
    from conftest import Floe
    f = Floe(env={"FLOE_DATABASE_URL": postgres.new_database(), "FLOE_AUTH": "floe"})
    try:
        f.wait_ready(30)
        f.authenticate()
        yield f
    finally:
        f.cleanup()


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def as_token(f, token, method, path, **kw):
    """A request with another principal's token."""
    kw.setdefault("timeout", 30)
    return requests.request(method, f.url + path, headers=bearer(token), **kw)


def new_client(f, name):
    r = f.post(f"{M}/principals", json={"name": name, "kind": "client"}, timeout=30)
    body = assert_ok_json(r, 201)
    assert r.headers.get("Cache-Control") == "no-store", describe(r)
    return body


def test_client_credential_is_shown_once_and_disable_stops_its_token(authed):
    f = authed
    body = new_client(f, "svc-one")
    assert body["name"] == "svc-one" and body["kind"] == "client", body
    assert body["client-id"] == "svc-one" and body["disabled"] is False, body
    cred = body["credential"]
    cid, secret = cred.split(":", 1)
    assert cid == "svc-one" and len(secret) >= 40, body

    got = assert_ok_json(f.get(f"{M}/principals/svc-one"))
    assert "credential" not in got and "secret" not in str(got).lower(), got
    assert got["roles"] == [], got
    listed = assert_ok_json(f.get(f"{M}/principals"))
    names = [p["name"] for p in listed["principals"]]
    assert "svc-one" in names and "admin" in names, listed
    assert all("credential" not in p for p in listed["principals"]), listed

    token = client_token(f, cred)
    assert as_token(f, token, "GET", "/v1/namespaces").status_code == 200

    assert_ok_json(f.post(f"{M}/principals/svc-one/disable"))
    r = as_token(f, token, "GET", "/v1/namespaces")
    assert_error(r, 401, "NotAuthorizedException", "Principal is disabled")
    assert assert_ok_json(f.get(f"{M}/principals/svc-one"))["disabled"] is True

    # Enabling again does not bring the tokens of before back.
    assert_ok_json(f.post(f"{M}/principals/svc-one/enable"))
    r = as_token(f, token, "GET", "/v1/namespaces")
    assert_error(r, 401, "NotAuthorizedException", "issued before")
    assert as_token(f, client_token(f, cred), "GET", "/v1/namespaces").status_code == 200


def test_rotate_secret_refuses_the_old_one(authed):
    f = authed
    old = new_client(f, "svc-rot")["credential"]
    r = f.post(f"{M}/principals/svc-rot/rotate-secret", timeout=30)
    body = assert_ok_json(r, 200)
    new = body["credential"]
    assert new != old and new.startswith("svc-rot:"), body
    cid, secret = old.split(":", 1)
    r = requests.post(f.url + "/v1/oauth/tokens", timeout=30, data={
        "grant_type": "client_credentials", "client_id": cid, "client_secret": secret})
    assert r.status_code == 401 and r.json()["error"] == "invalid_client", describe(r)
    assert client_token(f, new)
    assert "credential" not in assert_ok_json(f.get(f"{M}/principals/svc-rot"))


def test_rotate_secret_ends_the_tokens_of_the_old_one(authed):
    f = authed
    old = new_client(f, "svc-leak")["credential"]
    leaked = client_token(f, old)
    assert as_token(f, leaked, "GET", "/v1/namespaces").status_code == 200
    new = assert_ok_json(f.post(f"{M}/principals/svc-leak/rotate-secret", timeout=30))["credential"]
    r = as_token(f, leaked, "GET", "/v1/namespaces")
    assert_error(r, 401, "NotAuthorizedException",
                 "Token was issued before the principal's secret was rotated")
    # Nor does it buy a newer token without the new secret.
    exchange = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                "subject_token": leaked,
                "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"}
    r = requests.post(f.url + "/v1/oauth/tokens", data=exchange, timeout=30)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant", describe(r)
    assert "before the principal's secret was rotated" in r.json()["error_description"], r.text
    # With the new secret, the old token is exchanged for one that works,
    # and a token of the new secret refreshes without it.
    cid, secret = new.split(":", 1)
    r = requests.post(f.url + "/v1/oauth/tokens", data=exchange, auth=(cid, secret), timeout=30)
    fresh = assert_ok_json(r)["access_token"]
    assert as_token(f, fresh, "GET", "/v1/namespaces").status_code == 200
    r = requests.post(f.url + "/v1/oauth/tokens", timeout=30,
                      data={**exchange, "subject_token": fresh})
    assert as_token(f, assert_ok_json(r)["access_token"], "GET", "/v1/namespaces").status_code == 200


def test_an_admin_cannot_disable_itself(authed):
    assert_error(authed.post(f"{M}/principals/admin/disable"), 400, "BadRequestException",
                 "cannot disable itself")
    assert assert_ok_json(authed.get(f"{M}/principals/admin"))["disabled"] is False


def test_the_last_administrator_cannot_be_taken_away(postgres):
    from conftest import Floe
    f = Floe(env={"FLOE_DATABASE_URL": postgres.new_database(), "FLOE_AUTH": "floe"})
    try:
        f.wait_ready(30)
        f.authenticate()
        says = "would leave no principal holding ADMIN on the catalog"
        admin_grant = {"privilege": "ADMIN", "on": {"kind": "catalog"}}
        for method, path, body in [
                ("DELETE", f"{M}/roles/admin/members/admin", None),
                ("POST", f"{M}/roles/admin/grants/revoke", admin_grant),
                ("DELETE", f"{M}/roles/admin", None)]:
            assert_error(f.request(method, path, json=body), 400, "BadRequestException", says)
        assert assert_ok_json(f.get(f"{M}/principals/admin"))["roles"] == ["admin"]
        events = [e["event-type"] for e in audit_events(f)]
        assert not {"role.member-removed", "grant.revoked", "role.deleted"} & set(events), events
        # A second administrator lets the first one go; then the second is
        # the last, and a disable of it by anyone is refused the same way.
        second = new_client(f, "second-admin")
        assert f.request("PUT", f"{M}/roles/admin/members/second-admin").status_code == 204
        token = client_token(f, second["credential"])
        r = as_token(f, token, "DELETE", f"{M}/roles/admin/members/admin")
        assert r.status_code == 204, describe(r)
        r = as_token(f, token, "POST", f"{M}/principals/second-admin/disable")
        assert_error(r, 400, "BadRequestException", "cannot disable itself")
    finally:
        f.cleanup()


def test_a_user_has_no_secret(authed):
    f = authed
    body = assert_ok_json(f.post(f"{M}/principals", json={"name": "ann", "kind": "user"}), 201)
    assert "credential" not in body and body.get("client-id") is None, body
    assert_error(f.post(f"{M}/principals/ann/rotate-secret"), 400, "BadRequestException",
                 "no secret")


def test_roles_members_grants_and_privileges(authed):
    f = authed
    f.create_namespace(["mg"])
    f.create_namespace(["mg", "sub"])
    TableHandle(f, ["mg", "sub"], "t").create()
    new_client(f, "reader")

    assert_ok_json(f.post(f"{M}/roles", json={"name": "readers"}), 201)
    assert_error(f.post(f"{M}/roles", json={"name": "readers"}), 409, "AlreadyExistsException",
                 "Role already exists: readers")
    roles = [r["name"] for r in assert_ok_json(f.get(f"{M}/roles"))["roles"]]
    assert "readers" in roles and "admin" in roles, roles

    r = f.request("PUT", f"{M}/roles/readers/members/reader")
    assert r.status_code == 204, describe(r)
    assert f.request("PUT", f"{M}/roles/readers/members/reader").status_code == 204
    assert assert_ok_json(f.get(f"{M}/principals/reader"))["roles"] == ["readers"]

    grant = {"privilege": "TABLE_READ", "on": {"kind": "namespace", "namespace": ["mg"]}}
    body = assert_ok_json(f.post(f"{M}/roles/readers/grants", json=grant), 201)
    assert body == {"role": "readers", **grant}, body
    assert_ok_json(f.post(f"{M}/roles/readers/grants", json=grant), 200)
    grants = assert_ok_json(f.get(f"{M}/roles/readers/grants"))["grants"]
    assert [(g["privilege"], g["on"]) for g in grants] == [("TABLE_READ", grant["on"])], grants

    # A grant on mg reaches the table two levels below it.
    r = f.get(f"{M}/principals/reader/privileges", params={"namespace": "mg\x1fsub", "table": "t"})
    body = assert_ok_json(r)
    assert body["principal"] == "reader", body
    assert body["object"] == {"kind": "table", "namespace": ["mg", "sub"], "table": "t"}, body
    assert body["privileges"] == ["TABLE_READ"], body
    body = assert_ok_json(f.get(f"{M}/principals/reader/privileges"))
    assert body["object"] == {"kind": "catalog"} and body["privileges"] == [], body
    body = assert_ok_json(f.get(f"{M}/principals/admin/privileges",
                                params={"namespace": "mg"}))
    assert "ADMIN" not in body["privileges"] and "NAMESPACE_DROP" in body["privileges"], body
    assert_error(f.get(f"{M}/principals/reader/privileges",
                       params={"namespace": "mg", "table": "nope"}),
                 404, "NoSuchTableException", "Table does not exist")

    r = f.post(f"{M}/roles/readers/grants/revoke", json=grant)
    assert_ok_json(r, 200)
    assert assert_ok_json(f.get(f"{M}/roles/readers/grants"))["grants"] == []
    assert_error(f.post(f"{M}/roles/readers/grants/revoke", json=grant), 404, None, "no grant")
    body = assert_ok_json(f.get(f"{M}/principals/reader/privileges",
                                params={"namespace": "mg\x1fsub", "table": "t"}))
    assert body["privileges"] == [], body

    r = f.delete(f"{M}/roles/readers/members/reader")
    assert r.status_code == 204, describe(r)
    assert_error(f.delete(f"{M}/roles/readers/members/reader"), 404, None, "not a member")
    r = f.delete(f"{M}/roles/readers")
    assert r.status_code == 204, describe(r)
    assert_error(f.delete(f"{M}/roles/readers"), 404, "NoSuchRoleException",
                 "Role does not exist: readers")

    events = audit_events(f)
    mine = [(e["event"], e["principal"]) for e in events if e["event"].split(".")[0] in
            ("principal", "role", "grant")]
    for name in ("principal.created", "principal.disabled", "principal.enabled",
                 "principal.secret-rotated", "role.created", "role.deleted",
                 "role.member-added", "role.member-removed", "grant.added", "grant.revoked"):
        assert (name, "admin") in mine, (name, mine)
    # The second PUT and the second grant changed nothing and recorded nothing.
    assert sum(1 for e in events if e["event"] == "role.member-added"
               and e["details"].get("role") == "readers") == 1, events
    assert sum(1 for e in events if e["event"] == "grant.added"
               and e["details"].get("role") == "readers") == 1, events
    assert "credential" not in str(events) and "scrypt" not in str(events)


def test_a_membership_change_reaches_a_cached_token_at_once(authed):
    f = authed
    token = client_token(f, new_client(f, "late-admin")["credential"])
    assert_error(as_token(f, token, "GET", f"{M}/roles"), 403, "ForbiddenException", "ADMIN")
    assert f.request("PUT", f"{M}/roles/admin/members/late-admin").status_code == 204
    # The token asks for all the roles the client holds ("catalog"): the
    # cache was cleared, so the next request resolves them again.
    assert_ok_json(as_token(f, token, "GET", f"{M}/roles"))
    assert f.delete(f"{M}/roles/admin/members/late-admin").status_code == 204
    assert_error(as_token(f, token, "GET", f"{M}/roles"), 403, "ForbiddenException", "ADMIN")


MUTATING = [
    ("POST", f"{M}/principals", {"name": "x", "kind": "user"}),
    ("GET", f"{M}/principals", None),
    ("GET", f"{M}/principals/admin", None),
    ("POST", f"{M}/principals/admin/disable", None),
    ("POST", f"{M}/principals/admin/enable", None),
    ("POST", f"{M}/principals/admin/rotate-secret", None),
    ("GET", f"{M}/principals/admin/privileges", None),
    ("POST", f"{M}/roles", {"name": "y"}),
    ("GET", f"{M}/roles", None),
    ("DELETE", f"{M}/roles/admin", None),
    ("PUT", f"{M}/roles/admin/members/nobody", None),
    ("DELETE", f"{M}/roles/admin/members/admin", None),
    ("POST", f"{M}/roles/admin/grants", {"privilege": "ADMIN", "on": {"kind": "catalog"}}),
    ("GET", f"{M}/roles/admin/grants", None),
    ("POST", f"{M}/roles/admin/grants/revoke", {"privilege": "ADMIN", "on": {"kind": "catalog"}}),
]


def test_a_non_admin_is_refused_everywhere(authed):
    f = authed
    token = client_token(f, new_client(f, "nobody")["credential"])
    for method, path, body in MUTATING:
        kw = {"json": body} if body is not None else {}
        r = as_token(f, token, method, path, **kw)
        assert_error(r, 403, "ForbiddenException", "ADMIN")
    # Nothing changed: admin is still enabled and still admin.
    got = assert_ok_json(f.get(f"{M}/principals/admin"))
    assert got["disabled"] is False and got["roles"] == ["admin"], got


@pytest.mark.parametrize("body,status,says", [
    ({"name": "", "kind": "client"}, 400, "empty"),
    ({"name": "a" * 256, "kind": "client"}, 400, "at most 255"),
    ({"name": "a b", "kind": "user"}, 400, "only letters"),
    ({"name": "a:b", "kind": "client"}, 400, "only letters"),
    ({"name": "ok", "kind": "robot"}, 400, "kind"),
    ({"kind": "user"}, 400, "name"),
    ({"name": "admin", "kind": "user"}, 409, "Principal already exists: admin"),
])
def test_bad_principals(authed, body, status, says):
    r = authed.post(f"{M}/principals", json=body)
    assert_error(r, status, None, says)


@pytest.mark.parametrize("grant,status,says", [
    ({"privilege": "TABLE_SMASH", "on": {"kind": "catalog"}}, 400, "Unknown privilege"),
    ({"privilege": "ADMIN", "on": {"kind": "namespace", "namespace": ["gb"]}}, 400,
     "cannot be granted"),
    ({"privilege": "NAMESPACE_READ", "on": {"kind": "table", "namespace": ["gb"], "table": "t"}},
     400, "cannot be granted"),
    ({"privilege": "TABLE_READ", "on": {"kind": "shelf"}}, 400, "on.kind"),
    ({"privilege": "TABLE_READ"}, 400, "on"),
    ({"privilege": "TABLE_READ", "on": {"kind": "table", "namespace": ["gb"], "table": "nope"}},
     404, "Table does not exist: gb.nope"),
    ({"privilege": "TABLE_READ", "on": {"kind": "namespace", "namespace": ["gb-missing"]}},
     404, "Namespace does not exist: gb-missing"),
])
def test_bad_grants(authed, grant, status, says):
    f = authed
    if f.get("/v1/namespaces/gb").status_code == 404:
        f.create_namespace(["gb"])
    r = f.post(f"{M}/roles", json={"name": "gbr"})
    assert r.status_code in (201, 409), describe(r)
    assert_error(f.post(f"{M}/roles/gbr/grants", json=grant), status, None, says)


def test_unknown_names_are_404(authed):
    f = authed
    assert_error(f.get(f"{M}/principals/bob"), 404, "NoSuchPrincipalException",
                 "Principal does not exist: bob")
    assert_error(f.post(f"{M}/principals/bob/disable"), 404, "NoSuchPrincipalException",
                 "Principal does not exist: bob")
    assert_error(f.get(f"{M}/roles/x/grants"), 404, "NoSuchRoleException",
                 "Role does not exist: x")
    assert_error(f.request("PUT", f"{M}/roles/x/members/admin"), 404, "NoSuchRoleException",
                 "Role does not exist: x")
    assert_error(f.request("PUT", f"{M}/roles/admin/members/bob"), 404,
                 "NoSuchPrincipalException", "Principal does not exist: bob")
    assert_error(f.post(f"{M}/roles", json={"name": "r" * 256}), 400, None, "at most 255")


@pytest.mark.parametrize("method,path,what", [
    ("GET", f"{M}/principals/%FF", "principal name"),
    ("POST", f"{M}/principals/%FF/disable", "principal name"),
    ("POST", f"{M}/principals/%FF/enable", "principal name"),
    ("POST", f"{M}/principals/%FF/rotate-secret", "principal name"),
    ("GET", f"{M}/principals/%C3%28/privileges", "principal name"),
    ("DELETE", f"{M}/roles/%FF", "role name"),
    ("PUT", f"{M}/roles/%FF/members/admin", "role name"),
    ("DELETE", f"{M}/roles/admin/members/%ED%A0%80", "principal name"),
    ("POST", f"{M}/roles/%FF/grants", "role name"),
    ("GET", f"{M}/roles/%FF/grants", "role name"),
    ("POST", f"{M}/roles/%FF/grants/revoke", "role name"),
])
def test_a_name_that_is_not_utf8_is_400(authed, method, path, what):
    """A path name that is not valid UTF-8 is the caller's error (400), not
    the database's (it used to reach PostgreSQL and come back 500 or 503)."""
    body = {"privilege": "TABLE_READ", "on": {"kind": "catalog"}} if method == "POST" else None
    r = authed.request(method, path, json=body)
    assert_error(r, 400, "BadRequestException", f"The {what} is not valid UTF-8")


def test_a_credential_is_never_replayed(authed):
    r = authed.post(f"{M}/principals", json={"name": "idem", "kind": "client"},
                    headers={"Idempotency-Key": "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"})
    assert_error(r, 400, "BadRequestException", "Idempotency-Key")
    assert_error(authed.get(f"{M}/principals/idem"), 404, "NoSuchPrincipalException")


def test_lists_page(authed):
    f = authed
    for i in range(3):
        assert_ok_json(f.post(f"{M}/roles", json={"name": f"page-{i}"}), 201)
    seen, token = [], ""
    for _ in range(100):
        body = assert_ok_json(f.get(f"{M}/roles", params={"pageSize": 2, "pageToken": token}))
        assert len(body["roles"]) <= 2, body
        seen += [r["name"] for r in body["roles"]]
        token = body["next-page-token"]
        if not token:
            break
    assert seen == sorted(seen) and {"page-0", "page-1", "page-2", "admin"} <= set(seen), seen
    assert len(seen) == len(set(seen)), seen
