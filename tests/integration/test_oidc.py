"""Tokens of an external OpenID issuer, checked by ``floe auth verify-token``
against a real OpenID provider: the OpenID-certified ``oidc-provider``
package (tests/oidc, installed by scripts/oidc-deps.sh) started on loopback,
its tokens obtained by OAuth2 client credentials over HTTP.

Accepted: RS256 and ES256 access tokens, with the principal and roles they
carry, and a token signed by a key the provider rotated to after floe read
its key set. Refused, each with its reason: another audience, expired, of
another provider (an unknown key, or the same key and another issuer), a
tampered signature or payload, ``alg: none`` and HS256; the issuer
unreachable when a key must be fetched (fail closed); an http issuer off
loopback, and one whose discovery document names another issuer, at start.
What no real provider does (documents over 64 KiB, 33 keys, a redirect, an
http jwks_uri off loopback, silence) is served by a small HTTP server of
the test's own on loopback.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import select
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

from conftest import clean_env, floe_binary, free_port
from oidc_issuer import Provider, provider, provider_script, provider_workdir  # noqa: F401 (fixtures)

ANSWER_TIMEOUT = 15


def b64url_decode(seg: str) -> bytes:
    return base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def header_of(token: str) -> dict:
    return json.loads(b64url_decode(token.split(".")[0]))


def claims_of(token: str) -> dict:
    return json.loads(b64url_decode(token.split(".")[1]))


@pytest.fixture(scope="session")
def other_provider(provider_script, provider_workdir):
    """A second provider with keys of its own."""
    p = Provider(provider_script, provider_workdir, free_port()).start()
    yield p
    p.stop()


@pytest.fixture
def own_provider(provider_script, provider_workdir):
    """A provider for one test, which may rotate or stop it."""
    p = Provider(provider_script, provider_workdir, free_port()).start()
    yield p
    p.stop()


def verify_args(issuer: str, audience: str = "floe", roles_claim: str | None = "roles",
                extra=()) -> list[str]:
    args = [str(floe_binary()), "auth", "verify-token", f"--oidc-issuer={issuer}",
            f"--oidc-audience={audience}"]
    if roles_claim is not None:
        args.append(f"--oidc-roles-claim={roles_claim}")
    return args + list(extra)


def verify(issuer: str, token: str, **kw) -> tuple[int, dict | None, str]:
    """Runs verify-token once; returns its exit code, its JSON line, stderr."""
    r = subprocess.run(verify_args(issuer, **kw) + [token], capture_output=True, text=True,
                       timeout=30, env=clean_env(), stdin=subprocess.DEVNULL)
    line = r.stdout.strip()
    return r.returncode, (json.loads(line) if line else None), r.stderr


class Verifier:
    """A verify-token reading tokens on stdin: one issuer, its key set kept
    between tokens, as in the daemon."""

    def __init__(self, issuer: str, **kw):
        self.proc = subprocess.Popen(verify_args(issuer, **kw) + ["-"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=clean_env(), text=True)

    def check(self, token: str) -> dict:
        self.proc.stdin.write(token + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], ANSWER_TIMEOUT)
        assert ready, f"no answer within {ANSWER_TIMEOUT} s"
        line = self.proc.stdout.readline()
        assert line, f"verify-token ended: {self.proc.stderr.read()}"
        return json.loads(line)

    def close(self) -> int:
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=30)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return rc


def assert_accepted(answer, principal: str, roles: list[str]):
    assert answer == {"principal": principal, "roles": roles}


def test_provider_starts_quickly(provider):
    """The provider is up in a few seconds, so the suite can afford it."""
    assert provider.start_seconds < 10, provider.start_seconds


def test_rs256_token_is_accepted_with_its_principal_and_roles(provider):
    token = provider.token("floe-rs256")
    assert header_of(token)["alg"] == "RS256"
    assert claims_of(token)["aud"] == "floe"
    rc, answer, err = verify(provider.issuer, token)
    assert rc == 0, (answer, err)
    assert_accepted(answer, "floe-rs256", ["reader", "writer"])


def test_es256_token_is_accepted_with_roles_from_a_string(provider):
    token = provider.token("floe-es256")
    assert header_of(token)["alg"] == "ES256"
    assert claims_of(token)["roles"] == "auditor analyst"
    rc, answer, err = verify(provider.issuer, token)
    assert rc == 0, (answer, err)
    assert_accepted(answer, "floe-es256", ["auditor", "analyst"])


def test_principal_and_roles_claims_are_configurable(provider):
    token = provider.token("floe-rs256")
    rc, answer, _ = verify(provider.issuer, token, roles_claim=None,
                           extra=["--oidc-principal-claim=client_id"])
    assert rc == 0
    assert_accepted(answer, "floe-rs256", [])
    # A claim the token lacks names no principal: refused, not anonymous.
    rc, answer, _ = verify(provider.issuer, token, extra=["--oidc-principal-claim=email"])
    assert rc == 1
    assert "Token claim 'email'" in answer["refused"]


def test_another_audience_is_refused(provider):
    token = provider.token("floe-other-audience")
    assert claims_of(token)["aud"] == "not-floe"
    rc, answer, _ = verify(provider.issuer, token)
    assert rc == 1
    assert answer == {"refused": "Token audience is not accepted"}
    rc, answer, _ = verify(provider.issuer, provider.token("floe-es256"), audience="other")
    assert rc == 1
    assert answer == {"refused": "Token audience is not accepted"}


def test_expired_token_is_refused(provider):
    token = provider.token("floe-short-lived")
    exp = claims_of(token)["exp"]
    assert exp - claims_of(token)["iat"] == 1
    while time.time() < exp + 1:
        time.sleep(0.2)
    rc, answer, _ = verify(provider.issuer, token, extra=["--auth-leeway=0"])
    assert rc == 1
    assert answer == {"refused": "Token has expired"}
    # Within the default minute of clock skew it is still good.
    rc, answer, _ = verify(provider.issuer, token)
    assert rc == 0, answer


def test_token_of_another_provider_is_refused(provider, other_provider):
    token = other_provider.token("floe-es256")
    rc, answer, _ = verify(provider.issuer, token)
    assert rc == 1
    assert answer == {"refused": "Token is signed by an unknown key"}


def test_same_key_other_issuer_is_refused(provider, provider_script, provider_workdir):
    twin = Provider(provider_script, provider_workdir, free_port(), keys=provider.keys)
    twin.start()
    try:
        token = twin.token("floe-rs256")
    finally:
        twin.stop()
    assert header_of(token)["kid"] == header_of(provider.token("floe-rs256"))["kid"]
    rc, answer, _ = verify(provider.issuer, token)
    assert rc == 1
    assert answer == {"refused": "Token issuer is not accepted"}


def test_tampered_tokens_are_refused(provider):
    for client in ("floe-rs256", "floe-es256"):
        h, p, s = provider.token(client).split(".")
        # One signature character changed in the middle (still canonical).
        mid = len(s) // 2
        s2 = s[:mid] + ("A" if s[mid] != "A" else "B") + s[mid + 1:]
        rc, answer, _ = verify(provider.issuer, f"{h}.{p}.{s2}")
        assert rc == 1
        assert answer == {"refused": "Token signature is invalid"}, client
        # Roles raised in the payload under the original signature.
        claims = json.loads(b64url_decode(p))
        claims["roles"] = ["admin"]
        p2 = b64url(json.dumps(claims).encode())
        rc, answer, _ = verify(provider.issuer, f"{h}.{p2}.{s}")
        assert rc == 1
        assert answer == {"refused": "Token signature is invalid"}, client


def test_unsigned_and_hmac_tokens_are_refused(provider):
    h, p, _ = provider.token("floe-rs256").split(".")
    header = header_of(f"{h}.{p}.")
    none = b64url(json.dumps({**header, "alg": "none"}).encode())
    rc, answer, _ = verify(provider.issuer, f"{none}.{p}.")
    assert rc == 1
    assert answer == {"refused": "Unsigned tokens (alg none) are not accepted"}
    # HS256 "signed" with the issuer's public key set as the secret: the
    # classic confusion, refused for its algorithm before any key is used.
    jwks = requests.get(f"{provider.issuer}/jwks", timeout=10).content
    hs = b64url(json.dumps({**header, "alg": "HS256"}).encode())
    sig = b64url(hmac.new(jwks, f"{hs}.{p}".encode(), hashlib.sha256).digest())
    rc, answer, _ = verify(provider.issuer, f"{hs}.{p}.{sig}")
    assert rc == 1
    assert answer["refused"].startswith("Token signing algorithm is not supported")


def test_malformed_and_oversize_tokens_are_refused(provider):
    v = Verifier(provider.issuer)
    try:
        assert v.check("not-a-token") == {"refused": "Token is malformed"}
        assert v.check("a" * 9000) == {"refused": "Token is too long"}
        assert_accepted(v.check(provider.token("floe-rs256")), "floe-rs256",
                        ["reader", "writer"])
    finally:
        assert v.close() == 1


def test_rotated_key_is_fetched_on_an_unknown_kid(own_provider):
    old = own_provider.token("floe-es256")
    v = Verifier(own_provider.issuer)
    try:
        assert_accepted(v.check(old), "floe-es256", ["auditor", "analyst"])
        own_provider.rotate()
        new = own_provider.token("floe-es256")
        new_rs = own_provider.token("floe-rs256")
        assert header_of(new)["kid"] != header_of(old)["kid"]
        # The key set floe holds lacks the new kid: it fetches it again.
        assert_accepted(v.check(new), "floe-es256", ["auditor", "analyst"])
        assert_accepted(v.check(new_rs), "floe-rs256", ["reader", "writer"])
        # The old key stays in the provider's set, and so in floe's.
        assert_accepted(v.check(old), "floe-es256", ["auditor", "analyst"])
    finally:
        assert v.close() == 0


def test_unknown_kids_fetch_at_most_once_in_30_seconds(own_provider, other_provider):
    began = time.monotonic()
    v = Verifier(own_provider.issuer)
    try:
        # An unknown kid costs one fetch of the key set...
        stranger = other_provider.token("floe-es256")
        assert v.check(stranger) == {"refused": "Token is signed by an unknown key"}
        own_provider.rotate()
        # ...and the next unknown kid within 30 s none: the rotated key is
        # not known yet.
        new = own_provider.token("floe-es256")
        assert v.check(new) == {"refused": "Token is signed by an unknown key"}
        assert time.monotonic() - began < 30, "the test was too slow to show the limit"
    finally:
        assert v.close() == 1
    # A new verifier reads the new key set.
    rc, answer, _ = verify(own_provider.issuer, new)
    assert rc == 0, answer


def test_unreachable_issuer_fails_closed(own_provider, other_provider):
    known = own_provider.token("floe-rs256")
    v = Verifier(own_provider.issuer)
    try:
        assert_accepted(v.check(known), "floe-rs256", ["reader", "writer"])
        own_provider.stop()
        # A key must be fetched and cannot be: refused, never passed.
        answer = v.check(other_provider.token("floe-es256"))
        assert answer == {"refused": "The token issuer's keys could not be fetched"}
        # Keys already held keep verifying.
        assert_accepted(v.check(known), "floe-rs256", ["reader", "writer"])
    finally:
        assert v.close() == 1
    # At start, an unreachable issuer is an error.
    rc, answer, err = verify(own_provider.issuer, known)
    assert rc == 1 and answer is None
    assert "Cannot fetch" in err and "openid-configuration" in err


def test_http_issuer_off_loopback_is_refused_at_start(provider):
    began = time.monotonic()
    rc, answer, err = verify("http://idp.example.com", provider.token("floe-rs256"))
    assert rc == 1 and answer is None
    assert "The issuer must be https (http only on a loopback host)" in err
    assert time.monotonic() - began < 5, "refused without any connection"


def test_discovery_naming_another_issuer_is_refused_at_start(provider):
    # The same provider under another spelling of its address: its
    # discovery document names 127.0.0.1, not localhost.
    rc, answer, err = verify(f"http://localhost:{provider.port}", provider.token("floe-rs256"))
    assert rc == 1 and answer is None
    assert f"names the issuer '{provider.issuer}'" in err


def test_usage_errors_and_help():
    r = subprocess.run([str(floe_binary()), "auth", "verify-token", "--help"],
                       capture_output=True, text=True, timeout=10, env=clean_env())
    assert r.returncode == 0
    assert "--oidc-issuer=URL" in r.stdout and "--oidc-roles-claim" in r.stdout
    for args in (["auth"], ["auth", "verify-token", "tok"], ["auth", "frobnicate"],
                 ["auth", "verify-token", "--oidc-issuer=https://a", "--oidc-audience=b",
                  "--auth-leeway=-1", "tok"],
                 ["auth", "verify-token", "--oidc-issuer=https://a", "--oidc-audience=b",
                  "--bogus", "tok"]):
        r = subprocess.run([str(floe_binary())] + args, capture_output=True, text=True,
                           timeout=10, env=clean_env(), stdin=subprocess.DEVNULL)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr.strip(), args


class MisbehavingIssuer:
    """An issuer's address answered by a small HTTP server of the test's
    own, for what no real provider does: oversize, redirected, slow or
    badly addressed documents. ``routes`` maps a path to a function that
    writes the answer."""

    def __init__(self):
        routes = self.routes = {}

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 (the stdlib's name)
                route = routes.get(self.path)
                if route is None:
                    self.send_error(404)
                    return
                route(self)

            def log_message(self, *args):
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # floe hanging up on an oversize or slow answer is the point

        self.server = Server(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def discovery(self, jwks_uri: str | None = None, **extra) -> dict:
        return {"issuer": self.issuer, "jwks_uri": jwks_uri or f"{self.issuer}/jwks", **extra}

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def answer(body: bytes, status: int = 200, chunked: bool = False, headers=None, delay=0.0):
    def write(h):
        if delay:
            time.sleep(delay)
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Type", "application/json")
        if chunked:
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            for i in range(0, len(body), 4096):
                part = body[i:i + 4096]
                h.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            h.wfile.write(b"0\r\n\r\n")
        else:
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)
    return write


@pytest.fixture
def bad_issuer():
    s = MisbehavingIssuer()
    yield s
    s.close()


def start_error(issuer: str) -> str:
    """What verify-token says when it cannot start with this issuer."""
    rc, answer_, err = verify(issuer, "a.b.c")
    assert rc == 1 and answer_ is None, (answer_, err)
    return err


def padded(doc: dict, size: int) -> bytes:
    body = json.dumps(doc).encode()
    return body + b" " * (size - len(body))


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_oversize_documents_are_refused(bad_issuer, provider, chunked):
    jwks = requests.get(f"{provider.issuer}/jwks", timeout=10).json()
    wk = "/.well-known/openid-configuration"
    # Exactly 64 KiB of each is read.
    bad_issuer.routes[wk] = answer(padded(bad_issuer.discovery(), 65536), chunked=chunked)
    bad_issuer.routes["/jwks"] = answer(padded(jwks, 65536), chunked=chunked)
    rc, answer_, err = verify(bad_issuer.issuer, "a.b.c")
    assert rc == 1 and answer_ == {"refused": "Token is malformed"}, err
    # One byte more of either is not: the transfer is cut.
    bad_issuer.routes[wk] = answer(padded(bad_issuer.discovery(), 65537), chunked=chunked)
    assert "is larger than 65536 bytes" in start_error(bad_issuer.issuer)
    bad_issuer.routes[wk] = answer(padded(bad_issuer.discovery(), 65536), chunked=chunked)
    bad_issuer.routes["/jwks"] = answer(padded(jwks, 1 << 20), chunked=chunked)
    assert "/jwks is larger than 65536 bytes" in start_error(bad_issuer.issuer)


def test_more_than_32_keys_are_refused(bad_issuer, provider):
    key = next(k for k in requests.get(f"{provider.issuer}/jwks", timeout=10).json()["keys"]
               if k["kty"] == "EC")
    bad_issuer.routes["/.well-known/openid-configuration"] = answer(
        json.dumps(bad_issuer.discovery()).encode())
    keys = [{**key, "kid": f"k{i}"} for i in range(33)]
    bad_issuer.routes["/jwks"] = answer(json.dumps({"keys": keys}).encode())
    assert "has 33 keys, more than 32" in start_error(bad_issuer.issuer)
    bad_issuer.routes["/jwks"] = answer(json.dumps({"keys": keys[:32]}).encode())
    rc, answer_, _ = verify(bad_issuer.issuer, "a.b.c")
    assert answer_ == {"refused": "Token is malformed"}


def test_redirects_are_not_followed(bad_issuer, provider):
    wk = "/.well-known/openid-configuration"
    bad_issuer.routes[wk] = answer(b"", status=302,
                                   headers={"Location": f"{provider.issuer}{wk}"})
    assert "HTTP status 302" in start_error(bad_issuer.issuer)


def test_jwks_uri_must_be_https_off_loopback(bad_issuer):
    bad_issuer.routes["/.well-known/openid-configuration"] = answer(json.dumps(
        bad_issuer.discovery(jwks_uri="http://idp.example.com/jwks")).encode())
    assert "jwks_uri must be https" in start_error(bad_issuer.issuer)


def test_a_silent_issuer_times_out_in_5_seconds(bad_issuer):
    bad_issuer.routes["/.well-known/openid-configuration"] = answer(
        json.dumps(bad_issuer.discovery()).encode(), delay=8)
    began = time.monotonic()
    err = start_error(bad_issuer.issuer)
    took = time.monotonic() - began
    assert "Timeout was reached" in err or "timed out" in err, err
    assert 4.5 < took < 7.5, took


# --------------------------------------------------------------------------
# the daemon with --oidc-issuer: the provider's tokens on floe's routes


def issuer_floe(floe_factory, postgres, issuer):
    import psycopg
    db = postgres.new_database()
    f = floe_factory(env={"FLOE_DATABASE_URL": db, "FLOE_AUTH": "floe",
                          "FLOE_OIDC_ISSUER": issuer, "FLOE_OIDC_ROLES_CLAIM": "roles"})
    f.db = db
    # The roles the provider names exist in floe (an issuer names roles;
    # it does not make them), marked as the issuer's to grant, reader with
    # read on the catalog.
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("INSERT INTO roles (name, issuer_grantable) VALUES ('reader', true), "
                     "('writer', true)")
        conn.execute("INSERT INTO grants (role_id, privilege, object_kind) "
                     "SELECT id, p, 'catalog' FROM roles, "
                     "unnest(ARRAY['NAMESPACE_READ', 'TABLE_READ']) AS p WHERE name = 'reader'")
    return f


def test_the_daemon_accepts_the_issuers_tokens(provider, other_provider, floe_factory, postgres):
    import psycopg
    f = issuer_floe(floe_factory, postgres, provider.issuer)
    for client in ("floe-rs256", "floe-es256"):
        token = provider.token(client)
        r = requests.get(f.url + "/v1/namespaces", timeout=10,
                         headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200, r.text
        # It is told where its issuer gives tokens, to refresh there.
        r = requests.get(f.url + "/v1/config", timeout=10,
                         headers={"Authorization": f"Bearer {token}"})
        assert r.json()["defaults"]["oauth2-server-uri"] == provider.issuer + "/token", r.text
    with psycopg.connect(f.db, autocommit=True) as conn:
        rows = conn.execute("SELECT name, kind, source FROM principals WHERE source = 'oidc' "
                            "ORDER BY name").fetchall()
        roles = conn.execute("SELECT r.name FROM role_members m JOIN roles r ON r.id = m.role_id "
                             "JOIN principals p ON p.id = m.principal_id WHERE p.source = 'oidc'").fetchall()
    assert rows == [("floe-es256", "user", "oidc"), ("floe-rs256", "user", "oidc")], rows
    assert roles == [], "the issuer's roles are the token's, not memberships floe keeps"
    # floe's own tokens work beside the issuer's, and are told nothing new.
    f.authenticate()
    r = f.get("/v1/config")
    assert r.status_code == 200 and "oauth2-server-uri" not in r.json()["defaults"], r.text
    # Another issuer's token, and a wrong audience, are refused.
    for token, why in [(other_provider.token("floe-rs256"), "unknown key"),
                       (provider.token("floe-other-audience"), "audience")]:
        r = requests.get(f.url + "/v1/namespaces", timeout=10,
                         headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 401, r.text
        assert r.json()["error"]["type"] == "NotAuthorizedException"
        assert why in r.json()["error"]["message"].lower(), r.text


def test_a_rotated_key_while_the_issuer_is_down_is_503_not_401(own_provider, floe_factory, postgres):
    """The issuer rotates its key and goes down before floe has read the new
    set: a valid token of the new key cannot be decided, which is 503 with
    Retry-After (neither a pass nor a 401 that tells the client its token is
    bad), answered within the bounded wait; a token of a key floe holds still
    passes; once the issuer is back the new token passes."""
    f = issuer_floe(floe_factory, postgres, own_provider.issuer)

    def namespaces(token, timeout=10):
        return requests.get(f.url + "/v1/namespaces", timeout=timeout,
                            headers={"Authorization": f"Bearer {token}"})

    old = own_provider.token("floe-rs256")
    assert namespaces(old).status_code == 200
    own_provider.rotate()
    new = own_provider.token("floe-rs256")
    assert header_of(new)["kid"] != header_of(old)["kid"]
    own_provider.stop()

    t0 = time.monotonic()
    r = namespaces(new)
    elapsed = time.monotonic() - t0
    assert r.status_code == 503, r.text
    assert r.headers.get("Retry-After", "").isdigit(), dict(r.headers)
    assert r.json()["error"] == {"message": "The token issuer's keys could not be fetched",
                                 "type": "ServiceUnavailableException", "code": 503}
    assert elapsed < 4, f"answered after {elapsed:.1f} s"
    # Still undecided on a retry while the issuer is down, never a 401.
    time.sleep(1.2)
    assert namespaces(new).status_code == 503
    # A key floe holds keeps verifying without the issuer.
    assert namespaces(old).status_code == 200

    own_provider.start()
    def passes():
        return namespaces(new).status_code == 200
    assert wait_until_true(passes, 10), f.log_tail()


def wait_until_true(predicate, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.3)
    return False


def test_a_disabled_issuer_principal_is_refused(provider, floe_factory, postgres):
    import psycopg
    f = issuer_floe(floe_factory, postgres, provider.issuer)
    token = provider.token("floe-es256")
    h = {"Authorization": f"Bearer {token}"}
    assert requests.get(f.url + "/v1/namespaces", headers=h, timeout=10).status_code == 200
    with psycopg.connect(f.db, autocommit=True) as conn:
        conn.execute("UPDATE principals SET disabled = true WHERE name = 'floe-es256'")
    r = requests.get(f.url + "/v1/namespaces", timeout=10,
                     headers={"Authorization": f"Bearer {provider.token('floe-es256')}"})
    assert r.status_code == 401 and "disabled" in r.json()["error"]["message"], r.text


def test_an_issuers_claim_grants_only_issuer_grantable_roles(provider, floe_factory, postgres):
    """A roles claim naming admin, an unmarked role and a marked one grants
    the marked one only: the token can neither list principals nor make a
    client. Marking admin, or granting ADMIN to a marked role, is refused;
    a role holding ADMIN is never granted by a claim, even marked in SQL."""
    import psycopg
    from conftest import assert_error, assert_ok_json, audit_events
    M = "/management/v1"
    db = postgres.new_database()
    f = floe_factory(env={"FLOE_DATABASE_URL": db, "FLOE_AUTH": "floe",
                          "FLOE_OIDC_ISSUER": provider.issuer, "FLOE_OIDC_ROLES_CLAIM": "roles"})
    f.authenticate()
    f.create_namespace(["claims"])
    created = assert_ok_json(f.post(f"{M}/roles", json={"name": "reader",
                                                         "issuer-grantable": True}), 201)
    assert_ok_json(f.post(f"{M}/roles", json={"name": "writer"}), 201)
    for role, privilege in (("reader", "NAMESPACE_READ"), ("writer", "NAMESPACE_CREATE")):
        assert_ok_json(f.post(f"{M}/roles/{role}/grants",
                              json={"privilege": privilege, "on": {"kind": "catalog"}}), 201)

    h = {"Authorization": f"Bearer {provider.token('floe-claims-admin')}"}
    assert_error(requests.get(f.url + f"{M}/principals", headers=h, timeout=10), 403,
                 "ForbiddenException", "lacks ADMIN")
    assert_error(requests.post(f.url + f"{M}/principals", headers=h, timeout=30,
                               json={"name": "backdoor", "kind": "client"}),
                 403, "ForbiddenException", "lacks ADMIN")
    assert created == {"name": "reader", "issuer-grantable": True}, created
    listed = {r["name"]: r["issuer-grantable"] for r in assert_ok_json(f.get(f"{M}/roles"))["roles"]}
    assert listed == {"admin": False, "reader": True, "writer": False}, listed
    # The marked role is granted, the unmarked one is not.
    r = requests.get(f.url + "/v1/namespaces/claims", headers=h, timeout=10)
    assert r.status_code == 200, r.text
    assert_error(requests.post(f.url + "/v1/namespaces", headers=h, timeout=10,
                               json={"namespace": ["made"]}), 403, "ForbiddenException",
                 "lacks NAMESPACE_CREATE")
    assert "floe-claims-admin" in f.log() and "left out: admin, writer" in f.log()

    # Marking writer takes effect on the token already in use.
    body = assert_ok_json(f.request("PATCH", f"{M}/roles/writer",
                                    json={"issuer-grantable": True}))
    assert body["name"] == "writer" and body["issuer-grantable"] is True, body
    r = requests.post(f.url + "/v1/namespaces", headers=h, timeout=10, json={"namespace": ["made"]})
    assert r.status_code == 200, r.text

    # ADMIN and issuer-grantable never meet on one role.
    assert_error(f.request("PATCH", f"{M}/roles/admin", json={"issuer-grantable": True}), 400,
                 "BadRequestException", "Role admin holds ADMIN")
    assert_error(f.post(f"{M}/roles/reader/grants",
                        json={"privilege": "ADMIN", "on": {"kind": "catalog"}}),
                 400, "BadRequestException", "Role reader is issuer-grantable")
    assert_error(f.request("PATCH", f"{M}/roles/reader", json={"issuer-grantable": "yes"}),
                 400, "BadRequestException", "must be a boolean")
    assert_error(f.request("PATCH", f"{M}/roles/reader", json={"name": "x"}),
                 400, "BadRequestException", "Unknown field 'name'")
    assert_error(f.request("PATCH", f"{M}/roles/nope", json={"issuer-grantable": True}),
                 404, "NoSuchRoleException", "Role does not exist: nope")
    # Marked by hand in SQL, admin is still not the issuer's to grant.
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("UPDATE roles SET issuer_grantable = true WHERE name = 'admin'")
    h = {"Authorization": f"Bearer {provider.token('floe-claims-admin')}"}
    assert_error(requests.get(f.url + f"{M}/principals", headers=h, timeout=10), 403,
                 "ForbiddenException", "lacks ADMIN")

    events = [(e["event"], e["details"]) for e in audit_events(f)
              if e["event"] in ("role.created", "role.updated")]
    assert ("role.updated", {"role": "writer", "issuer-grantable": True}) in events, events
    assert ("role.created", {"role": "reader", "issuer-grantable": True}) in events, events
    # Unmarking records it too; the same value again records nothing.
    assert_ok_json(f.request("PATCH", f"{M}/roles/writer", json={"issuer-grantable": False}))
    assert_ok_json(f.request("PATCH", f"{M}/roles/writer", json={"issuer-grantable": False}))
    updates = [e["details"] for e in audit_events(f) if e["event"] == "role.updated"]
    assert updates == [{"role": "writer", "issuer-grantable": True},
                       {"role": "writer", "issuer-grantable": False}], updates


def test_the_daemon_does_not_start_without_its_issuer(floe_factory, postgres):
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database(), "FLOE_AUTH": "floe",
                          "FLOE_OIDC_ISSUER": f"http://127.0.0.1:{free_port()}"}, ready=False)
    assert f.proc.wait(30) == 1
    assert "cannot set up authentication" in f.log()
