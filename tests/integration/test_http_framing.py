"""Request framing (RFC 9112 §6.1, §6.3): a request whose body length a proxy
in front of floe and floe could read differently is refused with 400 and
its connection closed, so the bytes after it (a smuggled request) are never
served. Each refusal is sent as raw HTTP on one connection with a request
smuggled behind it (one that would create a namespace); the test reads until
floe closes the connection and checks that exactly one answer came back and
the smuggled request had no effect. Guards beside them: what libmicrohttpd
refuses by itself, the 413 answered before the body (the same early answer),
and well-framed pipelined requests keeping their connection."""

from __future__ import annotations

import json
import re
import socket

import pytest

from conftest import TIME_SCALE, assert_error_body, describe, wait_until

# How long a connection may stay silent before the test calls it left open.
QUIET = 5.0 * TIME_SCALE


def create_namespace_request(name: str) -> bytes:
    body = json.dumps({"namespace": [name]}).encode()
    return (b"POST /v1/namespaces HTTP/1.1\r\nHost: floe\r\n"
            b"Content-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


def parse_responses(data: bytes) -> list[dict]:
    """The HTTP/1.1 responses in data, in order: status, lower-case headers,
    body. A trailing fragment is one more entry with status None."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            out.append({"status": None, "raw": data})
            break
        lines = head.decode("latin-1").split("\r\n")
        m = re.match(r"HTTP/\d\.\d (\d{3})", lines[0])
        assert m, f"not a status line: {lines[0]!r} in {data[:300]!r}"
        status = int(m.group(1))
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        if status in (204, 304) or 100 <= status < 200:
            body = b""
        elif "content-length" in headers:
            n = int(headers["content-length"])
            if len(rest) < n:
                out.append({"status": None, "raw": data})
                break
            body, rest = rest[:n], rest[n:]
        elif "chunked" in headers.get("transfer-encoding", ""):
            raise AssertionError(f"floe answered chunked: {data[:300]!r}")
        else:
            body, rest = rest, b""
        out.append({"status": status, "headers": headers, "body": body})
        data = rest
    return out


def exchange(f, data: bytes, quiet: float = QUIET) -> tuple[list[dict], bool]:
    """Sends data on one new connection and reads until floe closes it
    (closed True) or says nothing for `quiet` seconds (closed False).
    Returns every response read, and closed."""
    got = b""
    closed = False
    with socket.create_connection((f.host, f.port), timeout=quiet) as s:
        s.sendall(data)
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            got += chunk
    return parse_responses(got), closed


def assert_namespace_absent(f, name: str, headers=None):
    r = f.get(f"/v1/namespaces/{name}", headers=headers or {})
    assert r.status_code == 404, f"the smuggled request ran: {describe(r)}"


def assert_refused_and_closed(f, data: bytes, smuggled_ns: str, message_has: str):
    """floe answers data with exactly one 400 (the Iceberg error body naming
    the fault, Connection: close), then closes; the smuggled namespace does
    not exist."""
    responses, closed = exchange(f, data)
    statuses = [r["status"] for r in responses]
    assert len(responses) == 1, f"expected one answer, got {statuses}: {responses}"
    resp = responses[0]
    assert resp["status"] == 400, resp
    assert resp["headers"].get("connection", "").lower() == "close", resp["headers"]
    assert resp["headers"].get("x-request-id"), resp["headers"]
    assert resp["headers"].get("content-type", "").startswith("application/json"), resp
    err = assert_error_body(json.loads(resp["body"]), 400, "BadRequestException")
    assert message_has.lower() in err["message"].lower(), err
    assert closed, "floe kept the connection open after refusing the framing"
    assert_namespace_absent(f, smuggled_ns)
    return err


def te_cl_body(smuggled: bytes) -> tuple[bytes, int]:
    """A chunked body holding `smuggled` as its one chunk, and the
    Content-Length that ends the body right after the chunk-size line: a
    parser framing by that length reads `smuggled` as the next request."""
    size_line = b"%x\r\n" % len(smuggled)
    return size_line + smuggled + b"\r\n0\r\n\r\n", len(size_line)


# --- Content-Length and Transfer-Encoding together ---

def test_length_and_chunked_together_are_refused_and_the_rest_never_served(floe, uniq):
    # A proxy framing by Content-Length forwards all of this as one
    # request; a floe that reads the chunked body ends it at "0" and would
    # serve the rest as a second request.
    ns = f"smug_{uniq}"
    body = b"0\r\n\r\n" + create_namespace_request(ns)
    data = (b"GET /v1/config HTTP/1.1\r\nHost: floe\r\n"
            b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n" % len(body)) + body
    assert_refused_and_closed(floe, data, ns, "both Content-Length and Transfer-Encoding")


def test_chunked_first_then_length_is_refused(floe, uniq):
    ns = f"smug_{uniq}"
    body = b"0\r\n\r\n" + create_namespace_request(ns)
    data = (b"POST /v1/namespaces HTTP/1.1\r\nHost: floe\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
    assert_refused_and_closed(floe, data, ns, "both Content-Length and Transfer-Encoding")


# --- two Content-Length fields, list values, bad numbers ---

def test_two_different_lengths_are_refused(floe, uniq):
    # floe read the first (0) and served the smuggled request; a proxy
    # that reads the last forwards it as this request's body.
    ns = f"smug_{uniq}"
    smuggled = create_namespace_request(ns)
    data = (b"GET /v1/config HTTP/1.1\r\nHost: floe\r\n"
            b"Content-Length: 0\r\nContent-Length: %d\r\n\r\n" % len(smuggled)) + smuggled
    assert_refused_and_closed(floe, data, ns, "Content-Length is given more than once")


def test_two_equal_lengths_are_refused_too(floe, uniq):
    # RFC 9110 §8.6 lets a server accept equal repeats or refuse them; floe
    # refuses (docs/architecture.md): libmicrohttpd already refuses the
    # same thing written as a list, "2, 2", and one rule is easier to trust.
    ns = f"smug_{uniq}"
    data = (b"GET /v1/config HTTP/1.1\r\nHost: floe\r\n"
            b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}") + create_namespace_request(ns)
    assert_refused_and_closed(floe, data, ns, "Content-Length is given more than once")


@pytest.mark.parametrize("value", [b"5, 5", b"-1", b"abc", b"0x5"])
def test_a_length_that_is_not_one_number_is_refused(floe, uniq, value):
    # libmicrohttpd frames by the chunked coding and ignores this field;
    # a proxy that reads a list or a sign frames by it.
    ns = f"smug_{uniq}"
    body = b"0\r\n\r\n" + create_namespace_request(ns)
    data = (b"GET /v1/config HTTP/1.1\r\nHost: floe\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Length: " + value + b"\r\n\r\n") + body
    assert_refused_and_closed(floe, data, ns, "is not one decimal number")


def test_a_bad_second_length_is_refused(floe, uniq):
    ns = f"smug_{uniq}"
    data = (b"GET /v1/config HTTP/1.1\r\nHost: floe\r\n"
            b"Content-Length: 0\r\nContent-Length: -1\r\n\r\n") + create_namespace_request(ns)
    assert_refused_and_closed(floe, data, ns, "more than once")


@pytest.mark.parametrize("value", [b"-5", b"abc", b"5, 5", b"5 "])
def test_a_lone_bad_length_is_refused_by_libmicrohttpd_and_closed(floe, uniq, value):
    # libmicrohttpd refuses these itself, before floe sees the request, with
    # its own 400 page (not an Iceberg body; 0.9.75 even writes its status
    # line and headers twice): what matters is that the connection ends
    # there and the rest is never served.
    ns = f"smug_{uniq}"
    data = (b"GET /v1/config HTTP/1.1\r\nHost: floe\r\nContent-Length: " + value +
            b"\r\n\r\n") + create_namespace_request(ns)
    responses, closed = exchange(floe, data)
    assert responses and responses[0]["status"] == 400, responses
    assert all(r["status"] in (400, None) for r in responses), responses
    assert closed
    assert_namespace_absent(floe, ns)


# --- Transfer-Encoding other than exactly "chunked" ---

@pytest.mark.parametrize("coding", [b"chunked, gzip", b"gzip, chunked", b"identity",
                                    b"xchunked", b"chunked ", b""])
def test_a_coding_other_than_chunked_is_refused(floe, uniq, coding):
    # libmicrohttpd reads such a body to the end of the connection, and
    # floe answered nothing until the client gave up; a proxy reads it as
    # chunked, or refuses it.
    ns = f"smug_{uniq}"
    data = (b"POST /v1/namespaces HTTP/1.1\r\nHost: floe\r\n"
            b"Transfer-Encoding: " + coding + b"\r\n\r\n0\r\n\r\n") + create_namespace_request(ns)
    err = assert_refused_and_closed(floe, data, ns, "only \"chunked\" is")
    assert f'"{coding.decode()}"' in err["message"], err


def test_two_coding_fields_are_refused(floe, uniq):
    # floe decoded the first; a proxy that joins them reads "chunked, x",
    # whose last coding is not chunked.
    ns = f"smug_{uniq}"
    data = (b"GET /v1/config HTTP/1.1\r\nHost: floe\r\n"
            b"Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n0\r\n\r\n"
            ) + create_namespace_request(ns)
    assert_refused_and_closed(floe, data, ns, "Transfer-Encoding is given more than once")


def test_chunked_in_an_http10_request_is_refused(floe, uniq):
    # RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty
    # framing, whatever Content-Length says.
    ns = f"smug_{uniq}"
    data = (b"GET /v1/config HTTP/1.0\r\nHost: floe\r\nConnection: keep-alive\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n") + create_namespace_request(ns)
    assert_refused_and_closed(floe, data, ns, "HTTP/1.0")


# --- whitespace and folded lines ---
# libmicrohttpd keeps whitespace before the colon in the name, and appends a
# folded line to the name above it, so it frames these by Content-Length;
# a proxy that trims the name or unfolds the line frames them as chunked.

@pytest.mark.parametrize("field", [
    b"Transfer-Encoding : chunked",
    b"Transfer-Encoding\t: chunked",
    b"Transfer-Encoding:\r\n chunked",
    b"X-Note: 1\r\n Transfer-Encoding: chunked",
], ids=["space-before-colon", "tab-before-colon", "folded-value", "folded-field"])
def test_whitespace_and_folds_around_framing_fields_are_refused(floe, uniq, field):
    ns = f"smug_{uniq}"
    body, length = te_cl_body(create_namespace_request(ns))
    data = (b"GET /v1/config HTTP/1.1\r\nHost: floe\r\n" + field +
            b"\r\nContent-Length: %d\r\n\r\n" % length) + body
    assert_refused_and_closed(floe, data, ns, "malformed header field name")


# --- what must keep working ---

def test_well_framed_requests_keep_the_connection(floe, uniq):
    # A chunked create and a Content-Length create pipelined on one
    # connection are both served, and the connection then serves a third.
    a, b = f"ok_a_{uniq}", f"ok_b_{uniq}"
    body = json.dumps({"namespace": [a]}).encode()
    chunked = (b"POST /v1/namespaces HTTP/1.1\r\nHost: floe\r\n"
               b"Content-Type: application/json\r\nTransfer-Encoding: Chunked\r\n\r\n"
               b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    got = b""

    def read_until(count):
        nonlocal got
        while True:
            done = [r for r in parse_responses(got) if r["status"] is not None]
            if len(done) >= count:
                return done
            chunk = s.recv(65536)
            assert chunk, f"floe closed a well-framed connection after {got!r}"
            got += chunk

    with socket.create_connection((floe.host, floe.port), timeout=15 * TIME_SCALE) as s:
        s.sendall(chunked + create_namespace_request(b))
        assert [r["status"] for r in read_until(2)] == [200, 200], got
        s.sendall(b"GET /v1/config HTTP/1.1\r\nHost: floe\r\n\r\n")
        assert [r["status"] for r in read_until(3)] == [200, 200, 200], got
    for ns in (a, b):
        assert floe.get(f"/v1/namespaces/{ns}").status_code == 200


def test_a_body_refused_on_the_first_call_closes_the_connection(floe_factory, postgres, uniq):
    # The 413 for a declared length over the limit is answered before the
    # body is read, as the framing refusal is: libmicrohttpd then discards
    # what follows and closes, so the bytes after the headers are never
    # read as a request.
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database(),
                          "FLOE_MAX_BODY_BYTES": "1024"})
    ns = f"smug_{uniq}"
    smuggled = create_namespace_request(ns)
    data = (b"POST /v1/namespaces HTTP/1.1\r\nHost: floe\r\nContent-Type: application/json\r\n"
            b"Content-Length: 4096\r\n\r\n") + smuggled
    responses, closed = exchange(f, data)
    assert [r["status"] for r in responses] == [413], responses
    assert responses[0]["headers"].get("connection", "").lower() == "close"
    assert closed
    assert_namespace_absent(f, ns)


# --- with authentication: the victim's token ---

def test_a_smuggled_request_never_runs_under_the_next_clients_token(floe_factory, postgres, uniq):
    # Behind a proxy that frames by Content-Length and reuses its
    # connection to floe, the attacker's smuggled bytes are prefixed to the
    # next client's request, whose Authorization header then authenticates
    # them. Here the attacker (no token) sends to the public /health route
    # and the smuggled DELETE ends in a header that swallows the victim's
    # request line.
    f = floe_factory(env={"FLOE_DATABASE_URL": postgres.new_database(), "FLOE_AUTH": "floe"})
    f.authenticate()
    victim = {"Authorization": f"Bearer {f.token}"}
    ns = f"victim_{uniq}"
    f.create_namespace([ns])

    prefix = b"DELETE /v1/namespaces/%s HTTP/1.1\r\nX-Swallow: " % ns.encode()
    body = b"0\r\n\r\n" + prefix
    attacker = (b"GET /health HTTP/1.1\r\nHost: floe\r\n"
                b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n" % len(body)) + body
    victims_request = (b"GET /v1/config HTTP/1.1\r\nHost: floe\r\n"
                       b"Authorization: Bearer %s\r\n\r\n" % f.token.encode())
    responses, closed = exchange(f, attacker + victims_request)
    assert [r["status"] for r in responses] == [400], responses
    err = assert_error_body(json.loads(responses[0]["body"]), 400, "BadRequestException")
    assert "both Content-Length and Transfer-Encoding" in err["message"], err
    assert closed
    r = f.get(f"/v1/namespaces/{ns}", headers=victim)
    assert r.status_code == 200, f"the smuggled DELETE ran with the victim's token: {describe(r)}"
    # The access log has the victim's GET and no DELETE; the operator is
    # told why the connection was closed.
    assert wait_until(lambda: re.search(rf"\[access\] GET /v1/namespaces/{ns} 200", f.log()), 5)
    assert not re.search(r"\[access\] DELETE ", f.log()), "floe served the smuggled DELETE"
    assert "ambiguous framing refused" in f.log()
