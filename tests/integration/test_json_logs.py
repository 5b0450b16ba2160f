"""--log-format=json (FLOE_LOG_FORMAT=json): every line floe writes is one
JSON object, the lines of a request carry its id (on the HTTP thread and on
the commit and publish threads alike), and what a client named is escaped,
never able to break a line or forge a field."""

from __future__ import annotations

import json
import re
import time

from conftest import TableHandle, assert_ok_json, describe, run_floe, wait_until
from webhook import PASS

TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (ERROR|WARN |INFO |DEBUG) \[[a-z]+\] ")


def json_lines(f) -> list[dict]:
    """floe's stderr, each line parsed; fails on any line that is not an object."""
    raw = f.stderr_path.read_bytes()
    out = []
    for n, line in enumerate(raw.split(b"\n")):
        if not line:
            continue
        # Strict: valid UTF-8, and JSON that Python's parser takes as is.
        text = line.decode("utf-8")
        obj = json.loads(text)
        assert isinstance(obj, dict), f"line {n}: {text!r}"
        for key in ("time", "level", "component", "message"):
            assert isinstance(obj.get(key), str), f"line {n} has no {key}: {text!r}"
        assert obj["level"] in ("error", "warn", "info", "debug"), text
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", obj["time"]), text
        out.append(obj)
    return out


def lines_of(f, rid: str, timeout: float = 5.0, want=lambda lines: bool(lines)):
    def find():
        f._stderr.flush()
        found = [o for o in json_lines(f) if o.get("request_id") == rid]
        return found if want(found) else None
    return wait_until(find, timeout) or []


def test_default_format_stays_text(floe_factory):
    f = floe_factory()
    assert f.get("/v1/config").status_code == 200
    f._stderr.flush()
    lines = [ln for ln in f.log().splitlines() if ln]
    assert lines
    for ln in lines:
        assert TEXT_LINE.match(ln), ln


def test_bad_format_is_refused(tmp_path):
    res = run_floe(["--log-format=xml"], cwd=tmp_path)
    assert res.returncode == 2, res
    assert "log-format" in res.stderr and "text or json" in res.stderr, res.stderr


def test_every_line_is_json_and_requests_carry_their_id(floe_factory, uniq):
    f = floe_factory(env={"FLOE_LOG_FORMAT": "json"})
    r = f.get("/v1/config")
    rid = r.headers["X-Request-Id"]
    access = lines_of(f, rid)
    assert [o["component"] for o in access] == ["access"], access
    assert access[0]["principal"] == "anonymous"
    assert access[0]["message"].startswith("GET /v1/config 200 ")
    # A request id the client chose is the one logged.
    r = f.get("/v1/config", headers={"X-Request-Id": f"client-{uniq[:20]}"})
    assert r.headers["X-Request-Id"] == f"client-{uniq[:20]}"
    assert lines_of(f, f"client-{uniq[:20]}")
    # Start-up lines belong to no request: no request_id, no principal.
    start = [o for o in json_lines(f) if o["component"] == "main"]
    assert any(o["message"].startswith("listening on http://") for o in start), start
    assert all("request_id" not in o and "principal" not in o for o in start), start


def test_flag_selects_json_too(floe_factory):
    f = floe_factory(args=["--log-format=json"])
    r = f.get("/v1/config")
    assert lines_of(f, r.headers["X-Request-Id"])


def test_commit_and_publish_threads_log_with_the_request_id(floe_factory, uniq, webhooks, hooks):
    f = floe_factory(env={"FLOE_LOG_FORMAT": "json"})
    f.create_namespace([uniq])
    t = TableHandle(f, [uniq], "t")
    r = f.post(f"{t.ns_url}/tables", json={"name": "t", "schema": TableHandle.SCHEMA})
    assert r.status_code == 200, describe(r)
    created = lines_of(f, r.headers["X-Request-Id"], want=lambda ls: len(ls) >= 2)
    assert {o["component"] for o in created} >= {"table", "access"}, created
    t.add_snapshot("main")
    rcv = webhooks(PASS)
    hooks(f, f"{uniq}-h", rcv.url, scope={"namespace": [uniq]})
    run = t.stage()
    r = t.publish(run["id"])
    assert r.status_code == 200, describe(r)
    rid = r.headers["X-Request-Id"]
    # The audit runs on a publish thread: its lines carry the request's id.
    lines = lines_of(f, rid, want=lambda ls: len([o for o in ls if o["component"] == "wap"]) >= 2)
    wap = [o["message"] for o in lines if o["component"] == "wap"]
    assert any(m.startswith(f"run {run['id']}: auditing snapshot") for m in wap), lines
    assert any(m.startswith(f"run {run['id']} published snapshot") for m in wap), lines
    assert all(o["principal"] == "anonymous" for o in lines)


def test_names_with_quotes_and_control_characters_are_escaped(floe_factory, uniq):
    f = floe_factory(env={"FLOE_LOG_FORMAT": "json"})
    ns = f'{uniq[:20]} "quoted" \\back\\'
    f.create_namespace([ns])
    # Quotes, backslashes, a C1 control character, a line and a paragraph
    # separator, a brace: none may end the string or the line.
    name = 'tab"le\\ \u0085 \u2028\u2029 }{"x":1} \u00fcnic\u00f8de \U0001f9ca'
    t = TableHandle(f, [ns], name)
    r = f.post(f"{t.ns_url}/tables", json={"name": name, "schema": TableHandle.SCHEMA})
    assert r.status_code == 200, describe(r)
    lines = lines_of(f, r.headers["X-Request-Id"], want=lambda ls: any(
        o["component"] == "table" for o in ls))
    table = [o for o in lines if o["component"] == "table"]
    assert table and table[0]["message"].startswith(f"created {name} ("), table
    assert "x" not in table[0], "a name forged a field"

    # A raw request line with bytes no client library would send: a quote,
    # a backslash, DEL and a byte that is no UTF-8 (floe logs the path as
    # it came, so the logger must escape and repair it).
    raw = f.raw(b'GET /v1/namespaces/a"b\\c\x7f\xff HTTP/1.1\r\nHost: x\r\n'
                b"X-Request-Id: raw-" + uniq[:20].encode() + b"\r\nConnection: close\r\n\r\n")
    assert raw.status >= 400
    time.sleep(0.2)
    lines = json_lines(f)  # every line still parses
    access = [o for o in lines if o.get("request_id") == f"raw-{uniq[:20]}"]
    if access:  # libmicrohttpd may refuse the line before floe sees it
        assert access[0]["message"].startswith('GET /v1/namespaces/a"b\\c\x7f\ufffd '), access
    # The raw log text has no unescaped control character at all.
    body = f.stderr_path.read_bytes()
    assert not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", body)
