"""Authentication: floe's own tokens, the token endpoint, the first-start admin
credential, and every way a bearer token is refused (docs/auth.md).

Tokens with claims floe would never issue (expired, another audience, another
issuer) are signed here with floe's own signing key, read from its data
directory, so each refusal is reached for its own reason and not because the
signature does not verify.
"""
import base64
import json
import os
import stat
import time
import uuid

import psycopg
import pytest
import requests
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from conftest import assert_error, client_token, describe, make_client, run_floe

TOKEN_PATH = "/v1/oauth/tokens"
FORM = "application/x-www-form-urlencoded"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def start_authed(floe_factory, postgres, env=None, args=()):
    db = postgres.new_database()
    f = floe_factory(args=list(args), env={"FLOE_DATABASE_URL": db, "FLOE_AUTH": "floe",
                                          **(env or {})})
    f.db = db
    return f


def sql(f, query, *params):
    with psycopg.connect(f.db, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else None


def admin_credential(f):
    path = f.workdir / "data" / "auth" / "admin-credential"
    text = path.read_text().strip()
    client_id, secret = text.split(":", 1)
    return client_id, secret


def get_token(f, client_id, secret, scope=None, **kw):
    data = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    if scope is not None:
        data["scope"] = scope
    return requests.post(f.url + TOKEN_PATH, data=data, timeout=15, **kw)


def admin_token(f):
    cid, secret = admin_credential(f)
    r = get_token(f, cid, secret)
    assert r.status_code == 200, describe(r)
    return r.json()["access_token"]


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def signing_key(f):
    """floe's newest signing key and its kid (the file name)."""
    d = f.workdir / "data" / "auth" / "signing"
    files = sorted(d.glob("*.pem"), key=lambda p: p.stat().st_mtime)
    assert files, f"no signing key in {d}"
    key = serialization.load_pem_private_key(files[-1].read_bytes(), password=None)
    return key, files[-1].stem


def mint(key, kid, claims, alg="ES256"):
    header = {"alg": alg, "typ": "JWT", "kid": kid}
    head = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    der = key.sign(head.encode(), ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der)
    return head + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def good_claims(**over):
    now = int(time.time())
    claims = {"iss": "floe", "sub": "admin", "aud": "floe", "iat": now, "nbf": now,
              "exp": now + 600, "jti": uuid.uuid4().hex, "scope": "catalog"}
    claims.update(over)
    return {k: v for k, v in claims.items() if v is not None}


def assert_401(r, message_part=None, token_sent=True):
    assert_error(r, 401, "NotAuthorizedException")
    challenge = r.headers.get("WWW-Authenticate", "")
    assert challenge.startswith('Bearer realm="floe"'), describe(r)
    if token_sent:
        assert 'error="invalid_token"' in challenge, challenge
    if message_part is not None:
        assert message_part in r.json()["error"]["message"], describe(r)


@pytest.fixture
def authed(floe_factory, postgres):
    return start_authed(floe_factory, postgres)


# --- the first start and the defaults ------------------------------------

def test_first_start_writes_an_admin_credential_only_the_owner_can_read(authed):
    path = authed.workdir / "data" / "auth" / "admin-credential"
    mode = stat.S_IMODE(path.stat().st_mode)
    assert mode == 0o600, oct(mode)
    cid, secret = admin_credential(authed)
    assert cid == "admin" and len(secret) >= 40
    assert str(path) in authed.log(), "the log says where the credential is"
    assert secret not in authed.log(), "the secret itself is never logged"
    keydir = authed.workdir / "data" / "auth" / "signing"
    assert stat.S_IMODE(keydir.stat().st_mode) == 0o700
    for pem in keydir.glob("*.pem"):
        assert stat.S_IMODE(pem.stat().st_mode) == 0o600


def test_a_second_start_keeps_the_admin_and_its_keys(floe_factory, postgres, authed):
    cid, secret = admin_credential(authed)
    token = admin_token(authed)
    authed.stop()
    again = floe_factory(env={"FLOE_DATABASE_URL": authed.db, "FLOE_AUTH": "floe"},
                         workdir=authed.workdir)
    assert admin_credential(again) == (cid, secret)
    # A token of the first run still verifies: the signing key was kept.
    r = again.get("/v1/config", headers=bearer(token))
    assert r.status_code == 200, describe(r)


def test_provisioned_admin_credential_writes_no_file(floe_factory, postgres):
    f = start_authed(floe_factory, postgres,
                     env={"FLOE_ADMIN_CREDENTIAL": "ops:provisioned-secret-0123456789"})
    assert not (f.workdir / "data" / "auth" / "admin-credential").exists()
    r = get_token(f, "ops", "provisioned-secret-0123456789")
    assert r.status_code == 200, describe(r)
    assert "provisioned-secret" not in f.log()
    # An operator's secret may be low-entropy: it stays under scrypt.
    assert sql(f, "SELECT secret_hash FROM principals WHERE client_id = 'ops'")[0][0].startswith(
        "scrypt$32768$8$1$")


def test_auth_none_is_refused_off_loopback():
    r = run_floe(["--auth=none", "--listen=0.0.0.0:0"])
    assert r.returncode == 2, r
    assert "--auth=none" in r.stderr and "refused on 0.0.0.0" in r.stderr, r.stderr


def test_auth_none_warns_at_start(floe_factory, postgres):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database(), "FLOE_AUTH": "none"})
    assert "authentication is off" in f.log()
    assert f.get("/v1/namespaces").status_code == 200
    r = f.post(TOKEN_PATH, data={"grant_type": "client_credentials"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request", describe(r)
    assert "authentication is off" in r.json()["error_description"]
    assert f.get("/v1/oauth/jwks").json() == {"keys": []}


# --- which routes need a token --------------------------------------------

def test_every_catalog_route_needs_a_token(authed):
    for method, path in [("GET", "/v1/config"), ("GET", "/v1/namespaces"),
                         ("POST", "/v1/namespaces"), ("GET", "/v1/namespaces/a/tables/t"),
                         ("GET", "/v1/audit-log"), ("GET", "/v1/audit-hooks"),
                         ("DELETE", "/v1/namespaces/a")]:
        r = authed.request(method, path, json={} if method == "POST" else None)
        assert_401(r, "Authentication required", token_sent=False)
        assert r.headers["WWW-Authenticate"] == 'Bearer realm="floe"'


def test_health_ready_metrics_and_the_token_endpoint_are_public(authed):
    for path in ["/health", "/ready", "/metrics", "/v1/oauth/jwks"]:
        r = authed.get(path)
        assert r.status_code == 200, f"{path}: {describe(r)}"


def test_public_routes_can_be_narrowed(floe_factory, postgres):
    f = start_authed(floe_factory, postgres, env={"FLOE_AUTH_PUBLIC_ROUTES": "/health,/ready"})
    assert f.get("/health").status_code == 200
    assert_401(f.get("/metrics"), token_sent=False)
    r = f.get("/metrics", headers=bearer(admin_token(f)))
    assert r.status_code == 200, describe(r)


def test_jwks_has_public_keys_only(authed):
    keys = authed.get("/v1/oauth/jwks").json()["keys"]
    assert len(keys) >= 1
    _, kid = signing_key(authed)
    assert kid in [k["kid"] for k in keys]
    for k in keys:
        assert k["kty"] == "EC" and k["crv"] == "P-256" and "d" not in k


# --- the token endpoint -----------------------------------------------------

def test_client_credentials_in_the_body(authed):
    cid, secret = admin_credential(authed)
    r = get_token(authed, cid, secret)
    assert r.status_code == 200, describe(r)
    body = r.json()
    assert body["token_type"] == "bearer"
    assert body["expires_in"] == 3600
    assert body["issued_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
    assert r.headers["Cache-Control"] == "no-store"
    r = authed.get("/v1/config", headers=bearer(body["access_token"]))
    assert r.status_code == 200, describe(r)


def test_client_credentials_by_basic_authentication(authed):
    cid, secret = admin_credential(authed)
    r = requests.post(authed.url + TOKEN_PATH, data={"grant_type": "client_credentials",
                                                    "scope": "catalog"},
                      auth=(cid, secret), timeout=15)
    assert r.status_code == 200, describe(r)
    assert r.json()["scope"] == "catalog"


def test_token_claims(authed):
    token = admin_token(authed)
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert claims["iss"] == "floe" and claims["aud"] == "floe" and claims["sub"] == "admin"
    assert claims["client_id"] == "admin"
    assert claims["exp"] - claims["iat"] == 3600
    assert len(claims["jti"]) >= 20
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header["alg"] == "ES256" and header["kid"] == signing_key(authed)[1]


@pytest.mark.parametrize("cid,secret", [("admin", "wrong-secret"), ("nobody", "whatever")])
def test_a_bad_client_is_one_answer(authed, cid, secret):
    r = get_token(authed, cid, secret)
    assert r.status_code == 401, describe(r)
    assert r.json() == {"error": "invalid_client",
                        "error_description": "Client authentication failed"}
    assert r.headers["WWW-Authenticate"] == 'Basic realm="floe"'


@pytest.mark.parametrize("data,code", [
    ({}, "unsupported_grant_type"),
    ({"grant_type": "password", "username": "a", "password": "b"}, "unsupported_grant_type"),
    ({"grant_type": "client_credentials", "client_id": "admin"}, "invalid_request"),
    ("grant_type=client_credentials&client_id=admin&client_id=other&client_secret=x",
     "invalid_request"),
    ("grant_type=client_credentials&client_id=%zz", "invalid_request"),
])
def test_malformed_token_requests(authed, data, code):
    r = requests.post(authed.url + TOKEN_PATH, data=data, timeout=15,
                      headers={"Content-Type": FORM})
    assert r.status_code == 400, describe(r)
    assert r.json()["error"] == code, describe(r)


def test_a_json_token_request_is_refused(authed):
    r = requests.post(authed.url + TOKEN_PATH, json={"grant_type": "client_credentials"},
                      timeout=15)
    assert r.status_code == 400 and r.json()["error"] == "invalid_request", describe(r)


def test_scopes(authed):
    cid, secret = admin_credential(authed)
    assert get_token(authed, cid, secret, scope="role:admin").status_code == 200
    r = get_token(authed, cid, secret, scope="role:auditor")
    assert r.status_code == 400 and r.json()["error"] == "invalid_scope", describe(r)
    assert "does not hold role auditor" in r.json()["error_description"]
    # Words floe does not use narrow nothing (DuckDB asks for PRINCIPAL_ROLE:ALL).
    r = get_token(authed, cid, secret, scope="PRINCIPAL_ROLE:ALL")
    assert r.status_code == 200, describe(r)
    assert authed.get("/v1/namespaces", headers=bearer(r.json()["access_token"])).status_code == 200


def test_failures_back_off_and_the_right_secret_waits_too(authed):
    cid, secret = admin_credential(authed)
    for _ in range(5):
        assert get_token(authed, cid, "wrong").status_code == 401
    r = get_token(authed, cid, "wrong")
    assert r.status_code == 401, "the sixth failure is still checked"
    r = get_token(authed, cid, secret)
    assert_error(r, 429)
    assert int(r.headers["Retry-After"]) >= 1
    assert "Too many failed authentications" in r.json()["error"]["message"]


def token_from(f, source, client_id, secret):
    """A client_credentials request sent from the loopback address source
    (127.0.0.0/8 is all loopback, and floe listens on 127.0.0.1): (status,
    body as JSON, headers)."""
    import http.client
    import urllib.parse
    conn = http.client.HTTPConnection(f.host, f.port, timeout=30, source_address=(source, 0))
    try:
        conn.request("POST", TOKEN_PATH, urllib.parse.urlencode({
            "grant_type": "client_credentials", "client_id": client_id,
            "client_secret": secret}), {"Content-Type": FORM})
        r = conn.getresponse()
        return r.status, json.loads(r.read() or b"null"), dict(r.getheaders())
    finally:
        conn.close()


def test_failures_elsewhere_never_lock_out_the_real_client(authed):
    """Failures are counted per (client, address): someone guessing at the
    admin client from one address waits there, while the admin's right
    secret from an address that has not failed is answered, and so is
    another client behind the failing address; a success clears the count."""
    f = authed
    cid, secret = admin_credential(f)
    cred = make_client(f, "neighbour", roles=())
    ncid, nsecret = cred.split(":", 1)
    attacker = "127.0.0.2"
    for _ in range(6):
        status, body, _ = token_from(f, attacker, cid, "guess")
        assert status == 401 and body["error"] == "invalid_client", body
    status, body, headers = token_from(f, attacker, cid, secret)
    assert status == 429, "the guessing pair waits, even with the right secret"
    assert int(headers["Retry-After"]) >= 1
    status, body, _ = token_from(f, "127.0.0.3", cid, secret)
    assert status == 200, f"the real client on another address: {body}"
    status, body, _ = token_from(f, attacker, ncid, nsecret)
    assert status == 200, f"another client behind the failing address: {body}"

    # A success clears the count: five failures, a success, five more, and
    # the right secret still passes (a forgotten password, then fixed).
    for _ in range(2):
        for _ in range(5):
            assert token_from(f, "127.0.0.4", cid, "typo")[0] == 401
        status, body, _ = token_from(f, "127.0.0.4", cid, secret)
        assert status == 200, body


def test_an_address_spraying_client_ids_waits(authed):
    """One address trying a secret on many client ids fails once per pair;
    past 50 failures in a row the address waits, whichever client it names,
    and only that address."""
    f = authed
    cid, secret = admin_credential(f)
    for i in range(51):
        status, body, _ = token_from(f, "127.0.0.5", f"guess-{i}", "password")
        assert status == 401, (i, body)
    status, body, headers = token_from(f, "127.0.0.5", cid, secret)
    assert status == 429 and int(headers["Retry-After"]) >= 1, body
    assert body["error"]["type"] == "TooManyRequestsException", body
    assert token_from(f, "127.0.0.6", cid, secret)[0] == 200


def stored_hash(f, name):
    return sql(f, "SELECT secret_hash FROM principals WHERE name = %s", name)[0][0]


def test_floes_secrets_are_checked_by_a_keyed_hash(authed):
    """A secret floe made (the first start's, a new client's) is stored as
    an HMAC under a key outside the database; a random secret still under
    scrypt is upgraded by its first grant, its tokens kept; a secret that
    may be low-entropy stays under scrypt; a hash under another key is
    refused and logged, never taken for a wrong secret."""
    import base64
    import hashlib
    import secrets
    f = authed.authenticate()
    assert stored_hash(f, "admin").startswith("hmac-sha256$"), stored_hash(f, "admin")
    r = f.post("/management/v1/principals", json={"name": "svc", "kind": "client"})
    assert r.status_code == 201, describe(r)
    cid, secret = r.json()["credential"].split(":", 1)
    assert stored_hash(f, "svc").startswith("hmac-sha256$")
    assert secret not in stored_hash(f, "svc")
    assert get_token(f, cid, secret).status_code == 200
    assert get_token(f, cid, secret + "x").status_code == 401

    # Made by an older floe: scrypt of a random secret, upgraded on use.
    random_secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    cred = make_client(f, "legacy", roles=("admin",), secret=random_secret)
    old = stored_hash(f, "legacy")
    assert old.startswith("scrypt$")
    token = client_token(f, cred)
    new = stored_hash(f, "legacy")
    assert new.startswith("hmac-sha256$") and new.split("$")[1] == stored_hash(f, "admin").split("$")[1]
    assert "is now checked by its keyed hash" in f.log()
    assert f.get("/v1/namespaces", headers=bearer(token)).status_code == 200, "tokens stay"
    assert get_token(f, "legacy", random_secret).status_code == 200
    assert get_token(f, "legacy", random_secret[:-1] + "A").status_code == 401
    # A chosen secret stays slow.
    cred = make_client(f, "chosen", roles=(), secret="hunter2-but-longer")
    client_token(f, cred)
    assert stored_hash(f, "chosen").startswith("scrypt$")

    # A hash under another key cannot be decided: refused, and the log says why.
    mac = base64.urlsafe_b64encode(hashlib.sha256(b"x").digest()).rstrip(b"=").decode()
    sql(f, "UPDATE principals SET secret_hash = %s WHERE name = 'svc'",
        f"hmac-sha256$0123456789abcdef${mac}")
    r = get_token(f, cid, secret)
    assert r.status_code == 401 and r.json()["error"] == "invalid_client", describe(r)
    assert "hashed under key 0123456789abcdef" in f.log()


def test_token_exchange_refreshes_a_token(authed):
    token = admin_token(authed)
    r = requests.post(authed.url + TOKEN_PATH, timeout=15, headers=bearer(token), data={
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subject_token": token,
        "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "scope": "catalog"})
    assert r.status_code == 200, describe(r)
    fresh = r.json()["access_token"]
    assert fresh != token
    assert authed.get("/v1/namespaces", headers=bearer(fresh)).status_code == 200


def test_token_exchange_of_an_expired_token_needs_the_client(authed):
    key, kid = signing_key(authed)
    now = int(time.time())
    old = mint(key, kid, good_claims(iat=now - 7200, nbf=now - 7200, exp=now - 3600,
                                     client_id="admin"))
    data = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": old,
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"}
    r = requests.post(authed.url + TOKEN_PATH, data=data, timeout=15)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant", describe(r)
    cid, secret = admin_credential(authed)
    r = requests.post(authed.url + TOKEN_PATH, data=data, auth=(cid, secret), timeout=15)
    assert r.status_code == 200, describe(r)


EXCHANGE = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"}


def exchange(f, subject, scope=None, auth=None):
    data = {**EXCHANGE, "subject_token": subject}
    if scope is not None:
        data["scope"] = scope
    return requests.post(f.url + TOKEN_PATH, data=data, auth=auth, timeout=15)


def test_token_exchange_never_widens_a_narrowed_token(authed):
    """A token narrowed to role:writer is exchanged for one carrying no more
    than role:writer: scope=catalog keeps it narrowed (the answer says so),
    and a role the subject token lacks is invalid_scope, with or without the
    client's secret (RFC 8693: the exchange is about the subject token)."""
    f = authed.authenticate()
    r = f.post("/management/v1/roles", json={"name": "writer"})
    assert r.status_code == 201, describe(r)
    r = f.post("/management/v1/roles/writer/grants",
               json={"privilege": "NAMESPACE_READ", "on": {"kind": "catalog"}})
    assert r.status_code == 201, describe(r)
    cred = make_client(f, "both", roles=("admin", "writer"))
    cid, secret = cred.split(":", 1)
    narrow = client_token(f, cred, scope="role:writer")
    assert_error(f.get("/management/v1/principals", headers=bearer(narrow)), 403,
                 "ForbiddenException", "lacks ADMIN")

    r = exchange(f, narrow, scope="catalog")
    assert r.status_code == 200, describe(r)
    assert r.json()["scope"] == "role:writer", describe(r)
    fresh = r.json()["access_token"]
    assert_error(f.get("/management/v1/principals", headers=bearer(fresh)), 403,
                 "ForbiddenException", "lacks ADMIN")
    assert f.get("/v1/namespaces", headers=bearer(fresh)).status_code == 200
    # No scope at all keeps the subject token's scope too.
    r = exchange(f, narrow)
    assert r.status_code == 200 and r.json()["scope"] == "role:writer", describe(r)

    for auth in (None, (cid, secret)):
        for scope in ("role:admin", "role:writer role:admin"):
            r = exchange(f, narrow, scope=scope, auth=auth)
            assert r.status_code == 400, describe(r)
            assert r.json()["error"] == "invalid_scope", describe(r)
            assert "role:writer" in r.json()["error_description"], describe(r)
            assert "admin" in r.json()["error_description"], describe(r)
    # Narrowing stays open: a token of every role yields one of fewer.
    wide = client_token(f, cred)
    r = exchange(f, wide, scope="role:writer")
    assert r.status_code == 200 and r.json()["scope"] == "role:writer", describe(r)
    assert_error(f.get("/management/v1/principals",
                       headers=bearer(r.json()["access_token"])), 403, "ForbiddenException")
    r = exchange(f, wide, scope="catalog")
    assert r.status_code == 200, describe(r)
    assert f.get("/management/v1/principals",
                 headers=bearer(r.json()["access_token"])).status_code == 200


def test_token_exchange_refuses_an_actor(authed):
    token = admin_token(authed)
    r = requests.post(authed.url + TOKEN_PATH, timeout=15, data={
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subject_token": token, "actor_token": token,
        "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request", describe(r)


# --- refused tokens ----------------------------------------------------------

def test_refused_tokens_each_say_why(authed):
    key, kid = signing_key(authed)
    now = int(time.time())
    other = ec.generate_private_key(ec.SECP256R1())
    cases = {
        "not.a.token": "malformed",
        "abc": "malformed",
        b64url(b'{"alg":"none","typ":"JWT"}') + "." + b64url(json.dumps(good_claims()).encode())
        + ".": "unsigned",
        mint(key, kid, good_claims(exp=now - 3600, iat=now - 7200, nbf=now - 7200)): "expired",
        mint(key, kid, good_claims(aud="someone-else")): "audience",
        mint(key, kid, good_claims(iss="https://evil.example")): "issuer",
        mint(key, kid, good_claims(exp=None)): "expir",
        mint(key, kid, good_claims(nbf=now + 3600)): "not valid yet",
        mint(other, kid, good_claims()): "signature",
        mint(other, "unknown-kid", good_claims()): "key floe does not know",
        mint(key, kid, good_claims(sub="ghost")): "Principal does not exist",
    }
    for token, why in cases.items():
        r = authed.get("/v1/namespaces", headers=bearer(token))
        assert_error(r, 401, "NotAuthorizedException")
        msg = r.json()["error"]["message"]
        assert why.lower() in msg.lower(), f"{why!r} not in {msg!r}"
        assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]


def test_a_tampered_token_is_refused(authed):
    token = admin_token(authed)
    head, payload, sig = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["sub"] = "root"
    forged = head + "." + b64url(json.dumps(claims).encode()) + "." + sig
    assert_401(authed.get("/v1/namespaces", headers=bearer(forged)), "signature")


def test_not_a_bearer_token(authed):
    cid, secret = admin_credential(authed)
    r = authed.get("/v1/namespaces", auth=(cid, secret))
    assert_401(r, "not a bearer token", token_sent=False)


def test_an_oversize_token_is_refused_without_a_crash(authed):
    r = authed.get("/v1/namespaces", headers=bearer("a" * 9000))
    assert_error(r, 401, "NotAuthorizedException")
    assert authed.get("/health").status_code == 200


def test_a_disabled_principal_is_refused(authed):
    key, kid = signing_key(authed)
    sql(authed, "INSERT INTO principals (name, kind, source, disabled) "
                "VALUES ('bob', 'user', 'floe', true)")
    r = authed.get("/v1/namespaces", headers=bearer(mint(key, kid, good_claims(sub="bob"))))
    assert_401(r, "disabled")


# --- who acted ----------------------------------------------------------------

def test_the_principal_is_recorded(authed):
    token = admin_token(authed)
    h = bearer(token)
    ns = "rec"
    assert authed.post("/v1/namespaces", json={"namespace": [ns]}, headers=h).status_code == 200
    r = authed.post(f"/v1/namespaces/{ns}/tables", headers=h, json={
        "name": "t", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "x", "type": "long", "required": False}]}})
    assert r.status_code == 200, describe(r)
    rows = sql(authed, "SELECT principal FROM commit_log")
    assert rows and all(p == "admin" for (p,) in rows), rows
    rid = r.headers["X-Request-Id"]
    lines = authed.access_log_lines(rid)
    assert any("principal=admin" in l for l in lines), lines


# --- real clients -------------------------------------------------------------

def pyiceberg_roundtrip(catalog, ns):
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    catalog.create_namespace(ns)
    table = catalog.create_table(f"{ns}.t", Schema(NestedField(1, "x", LongType(), required=False)))
    table.append(pa.table({"x": pa.array([1, 2, 3], pa.int64())}))
    assert catalog.load_table(f"{ns}.t").scan().to_arrow().num_rows == 3


def test_pyiceberg_with_a_credential(authed, tmp_path):
    from pyiceberg.catalog.rest import RestCatalog

    cid, secret = admin_credential(authed)
    catalog = RestCatalog("floe", uri=authed.url, credential=f"{cid}:{secret}", scope="catalog")
    pyiceberg_roundtrip(catalog, "py_cred")
    assert sql(authed, "SELECT DISTINCT principal FROM commit_log") == [("admin",)]


def test_pyiceberg_with_a_token(authed):
    from pyiceberg.catalog.rest import RestCatalog

    catalog = RestCatalog("floe", uri=authed.url, token=admin_token(authed))
    pyiceberg_roundtrip(catalog, "py_token")


def test_pyiceberg_oauth2_auth_manager(authed):
    from pyiceberg.catalog.rest import RestCatalog

    cid, secret = admin_credential(authed)
    catalog = RestCatalog("floe", **{
        "uri": authed.url,
        "auth": {"type": "oauth2", "oauth2": {"client_id": cid, "client_secret": secret,
                                              "token_url": authed.url + TOKEN_PATH,
                                              "scope": "catalog"}}})
    pyiceberg_roundtrip(catalog, "py_manager")


def test_pyiceberg_with_a_wrong_secret_is_told_so(authed):
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import OAuthError

    with pytest.raises(OAuthError, match="invalid_client"):
        RestCatalog("floe", uri=authed.url, credential="admin:wrong")


def test_curl_quick_start(authed):
    """The README's quick start: a token with curl, then a call with it."""
    import subprocess
    cid, secret = admin_credential(authed)
    out = subprocess.run(["curl", "-sS", "-d", "grant_type=client_credentials", "-d",
                          f"client_id={cid}", "--data-urlencode", f"client_secret={secret}",
                          authed.url + TOKEN_PATH], capture_output=True, text=True, timeout=30,
                         check=True).stdout
    token = json.loads(out)["access_token"]
    out = subprocess.run(["curl", "-sS", "-H", f"Authorization: Bearer {token}",
                          authed.url + "/v1/namespaces"], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    assert json.loads(out)["namespaces"] == []


def test_key_rotation_without_downtime(authed):
    import signal
    old_token = admin_token(authed)
    _, old_kid = signing_key(authed)
    r = run_floe(["auth", "rotate-key", f"--data-dir={authed.workdir / 'data'}"])
    assert r.returncode == 0, r.stderr
    new_kid = r.stdout.strip()
    assert new_kid != old_kid and len(new_kid) == 43
    authed.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        header = json.loads(base64.urlsafe_b64decode(admin_token(authed).split(".")[0] + "=="))
        if header["kid"] == new_kid:
            break
        time.sleep(0.2)
    assert header["kid"] == new_kid, "floe signs with the new key after SIGHUP"
    kids = [k["kid"] for k in authed.get("/v1/oauth/jwks").json()["keys"]]
    assert set(kids) == {old_kid, new_kid}, "both keys verify during the overlap"
    r = authed.get("/v1/namespaces", headers=bearer(old_token))
    assert r.status_code == 200, "a token of the old key still works: " + describe(r)


def test_an_idempotency_key_is_one_principals(authed):
    other = client_token(authed, make_client(authed, "other"))
    key = str(uuid.uuid4())
    body = {"namespace": ["idem_ns"]}
    h = {"Idempotency-Key": key}
    r = authed.post("/v1/namespaces", json=body, headers={**h, **bearer(admin_token(authed))})
    assert r.status_code == 200, describe(r)
    r = authed.post("/v1/namespaces", json=body, headers={**h, **bearer(other)})
    assert_error(r, 422, "UnprocessableEntityException")
    assert "Idempotency-Replayed" not in r.headers


def test_pyiceberg_gets_a_new_token_when_its_token_expires(authed):
    """An expired token is answered 401, which PyIceberg (like Iceberg's Java
    client) takes as the signal to get a new token and retry."""
    from pyiceberg.catalog.rest import RestCatalog

    key, kid = signing_key(authed)
    now = int(time.time())
    expired = mint(key, kid, good_claims(iat=now - 7200, nbf=now - 7200, exp=now - 3600,
                                         client_id="admin"))
    cid, secret = admin_credential(authed)
    catalog = RestCatalog("floe", uri=authed.url, credential=f"{cid}:{secret}")
    # The token it holds runs out (PyIceberg keeps it in its auth manager).
    catalog._auth_manager._token = expired
    catalog.create_namespace("after_expiry")
    assert ("after_expiry",) in catalog.list_namespaces()
    log = authed.log()
    assert "POST /v1/namespaces 401" in log, "the expired token was sent and refused first"
    assert "POST /v1/namespaces 200" in log
    r = authed.get("/v1/namespaces", headers=bearer(expired))
    assert_401(r, "expired")


def test_a_secret_with_any_characters_works_both_ways(authed):
    cred = make_client(authed, "odd", secret="p+ss%20w:rd/=&?")
    cid, secret = cred.split(":", 1)
    assert get_token(authed, cid, secret).status_code == 200, "in the form body"
    r = requests.post(authed.url + TOKEN_PATH, data={"grant_type": "client_credentials"},
                      auth=(cid, secret), timeout=15)
    assert r.status_code == 200, "as Basic credentials: " + describe(r)


@pytest.mark.parametrize("args,says", [
    (["--auth=maybe"], "expected floe or none"),
    (["--token-ttl-seconds=10"], "from 60 to 86400"),
    (["--auth-leeway-seconds=601"], "from 0 to 600"),
    (["--auth-public-routes=/health,/v1/config"], "/health, /ready and /metrics"),
    (["--admin-credential=admin:short"], "a secret of 16-255"),
    (["--admin-credential=nocolon-but-long-enough"], "CLIENT_ID:SECRET"),
    (["--oidc-issuer=ftp://issuer.example"], "https:// URL"),
    (["--auth=none", "--oidc-issuer=https://issuer.example"], "needs --auth=floe"),
])
def test_bad_authentication_options_stop_the_start(args, says):
    r = run_floe(args)
    assert r.returncode == 2, r
    assert says in r.stderr, r.stderr
    assert "short" not in r.stderr or "(not shown)" in r.stderr, "a secret is never echoed"
