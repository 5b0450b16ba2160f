"""Tests of the reference audit webhook in examples/auditor (no floe needed).

They cover the predicate language (every operator, SQL's NULL logic, seed
rules on good and bad rows, malformed predicates), the HTTP contract floe
relies on (signature, event header, verdict bodies and status codes), and
one audit of a real Iceberg table written with PyIceberg.
"""

from __future__ import annotations

import ast
import datetime as dt
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from decimal import Decimal
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
AUDITOR_DIR = REPO / "examples" / "auditor"
sys.path.insert(0, str(AUDITOR_DIR))

import auditor as aud  # noqa: E402

SEED_RULES = {
    "amount_positive": "amount_eur > 0 OR status = 'CANCELLED'",
    "known_currency": "currency IN ('EUR', 'CHF')",
    "fx_rate_resolved": "fx_rate IS NOT NULL",
    "order_not_ancient": "order_ts >= TIMESTAMP '2020-01-01'",
    "status_domain": "status IN ('OPEN', 'SHIPPED', 'CANCELLED')",
}


def ev(predicate, **row):
    return aud.Predicate(predicate).evaluate(row)


# ---------------------------------------------------------------------------
# Operators


@pytest.mark.parametrize(
    "predicate, expected",
    [
        ("x = 5", True),
        ("x = 6", False),
        ("x <> 6", True),
        ("x <> 5", False),
        ("x != 6", True),
        ("x != 5", False),
        ("x < 6", True),
        ("x < 5", False),
        ("x <= 5", True),
        ("x <= 4", False),
        ("x > 4", True),
        ("x > 5", False),
        ("x >= 5", True),
        ("x >= 6", False),
        ("x > -1", True),
        ("x = +5", True),
        ("x = 5.0", True),
        ("x < 5.5e0", True),
        ("5 = x", True),
        ("x = y", False),
        ("x < y", True),
    ],
)
def test_comparison_operators(predicate, expected):
    assert ev(predicate, x=5, y=7) is expected


def test_string_comparisons_and_quote_escape():
    assert ev("s = 'O''Brien'", s="O'Brien") is True
    assert ev("s < 'b'", s="a") is True
    assert ev("s = 'A'", s="a") is False  # case-sensitive, as in SQL


def test_boolean_connectives_and_precedence():
    assert ev("x = 1 AND y = 2", x=1, y=2) is True
    assert ev("x = 1 AND y = 3", x=1, y=2) is False
    assert ev("x = 0 OR y = 2", x=1, y=2) is True
    assert ev("x = 0 OR y = 0", x=1, y=2) is False
    assert ev("NOT x = 0", x=1) is True
    assert ev("NOT NOT x = 0", x=1) is False
    # AND binds tighter than OR
    assert ev("x = 0 AND y = 0 OR z = 1", x=1, y=1, z=1) is True
    assert ev("x = 0 AND (y = 0 OR z = 1)", x=1, y=1, z=1) is False
    assert ev("((x = 1))", x=1) is True


def test_keywords_are_case_insensitive():
    assert ev("x in (1, 2) and not y is null or false", x=1, y=2) is True


def test_in_and_not_in():
    assert ev("c IN ('EUR', 'CHF')", c="EUR") is True
    assert ev("c IN ('EUR', 'CHF')", c="USD") is False
    assert ev("c NOT IN ('EUR', 'CHF')", c="USD") is True
    assert ev("c NOT IN ('EUR', 'CHF')", c="CHF") is False
    assert ev("x IN (1, y)", x=3, y=3) is True


def test_is_null_and_is_not_null():
    assert ev("x IS NULL", x=None) is True
    assert ev("x IS NULL", x=0) is False
    assert ev("x IS NOT NULL", x=0) is True
    assert ev("x IS NOT NULL", x=None) is False


def test_between():
    assert ev("x BETWEEN 1 AND 10", x=1) is True
    assert ev("x BETWEEN 1 AND 10", x=10) is True
    assert ev("x BETWEEN 1 AND 10", x=11) is False
    assert ev("x NOT BETWEEN 1 AND 10", x=11) is True
    assert ev("x NOT BETWEEN 1 AND 10", x=5) is False
    # BETWEEN's AND is not the boolean AND
    assert ev("x BETWEEN 1 AND 10 AND y = 2", x=5, y=2) is True


def test_like():
    assert ev("s LIKE 'ORD-%'", s="ORD-17") is True
    assert ev("s LIKE 'ORD-_'", s="ORD-17") is False
    assert ev("s LIKE 'a.c'", s="abc") is False  # '.' is literal, not a regex
    assert ev("s NOT LIKE '%test%'", s="prod") is True


def test_timestamp_and_date_literals():
    ts = dt.datetime(2024, 5, 1, 12, 30)
    assert ev("t >= TIMESTAMP '2020-01-01'", t=ts) is True
    assert ev("t >= TIMESTAMP '2024-05-01 12:30:01'", t=ts) is False
    assert ev("t < TIMESTAMP '2024-05-01T12:30:00.5'", t=ts) is True
    assert ev("t >= DATE '2024-05-01'", t=ts) is True  # a date is midnight
    assert ev("t < DATE '2024-05-02'", t=ts) is True
    assert ev("d = DATE '2024-05-01'", d=dt.date(2024, 5, 1)) is True
    # timestamptz against a zone-less literal: the literal is UTC
    tz = dt.datetime(2020, 1, 1, 0, 0, tzinfo=dt.timezone.utc)
    assert ev("t >= TIMESTAMP '2020-01-01'", t=tz) is True
    assert ev("t < TIMESTAMP '2020-01-01 01:00:00+02:00'", t=tz) is False


def test_decimal_and_double_columns():
    assert ev("a > 0", a=Decimal("0.01")) is True
    assert ev("a > 0.005", a=Decimal("0.01")) is True
    assert ev("a = 0.1", a=0.1) is True  # a double compares with the literal as a double
    assert ev("a = 0.1", a=Decimal("0.1")) is True


def test_boolean_columns_and_literals():
    assert ev("flag", flag=True) is True
    assert ev("NOT flag", flag=False) is True
    assert ev("flag = TRUE", flag=True) is True
    assert ev("flag", flag=None) is None
    assert ev("TRUE") is True


def test_quoted_identifiers_and_case_folding():
    assert ev('"order date" = 1', **{"order date": 1}) is True
    assert ev("`select` = 1", select=1) is True
    assert ev("AMOUNT_EUR > 0", amount_eur=1) is True  # unambiguous case-insensitive match
    assert ev("date = DATE '2024-01-01'", date=dt.date(2024, 1, 1)) is True  # DATE as a column name


# ---------------------------------------------------------------------------
# NULL semantics (SQL three-valued logic)


def test_null_comparisons_are_unknown():
    for op in ("=", "<>", "!=", "<", "<=", ">", ">="):
        assert ev(f"x {op} 1", x=None) is None, op
    assert ev("x = y", x=1, y=None) is None


def test_unknown_through_connectives():
    assert ev("x > 0 OR y = 1", x=None, y=1) is True
    assert ev("x > 0 OR y = 1", x=None, y=2) is None
    assert ev("x > 0 AND y = 1", x=None, y=2) is False
    assert ev("x > 0 AND y = 1", x=None, y=1) is None
    assert ev("NOT x > 0", x=None) is None


def test_in_with_nulls():
    assert ev("c IN ('EUR')", c=None) is None
    assert ev("c NOT IN ('EUR')", c=None) is None
    assert ev("c IN ('EUR', y)", c="EUR", y=None) is True
    assert ev("c IN ('CHF', y)", c="EUR", y=None) is None
    assert ev("c NOT IN ('CHF', y)", c="EUR", y=None) is None  # the classic NOT IN trap


def test_between_and_like_with_nulls():
    assert ev("x BETWEEN 1 AND 10", x=None) is None
    assert ev("x NOT BETWEEN 1 AND 10", x=None) is None
    assert ev("x BETWEEN 1 AND y", x=20, y=None) is None  # 20 >= 1 is true, 20 <= NULL unknown
    assert ev("x BETWEEN y AND 10", x=20, y=None) is False  # 20 <= 10 is false whatever y is
    assert ev("x BETWEEN y AND 10", x=5, y=None) is None
    assert ev("s LIKE 'a%'", s=None) is None


def test_row_passes_only_when_true():
    exps = {"p": aud.Predicate("x > 0")}
    checked, failures = aud.evaluate(exps, ["x"], [{"x": 1}, {"x": None}, {"x": -1}])
    assert checked == 3
    assert failures == {"p": 2}  # NULL counts as a failure, like FALSE


# ---------------------------------------------------------------------------
# Seed rules on good and bad rows

GOOD_ROWS = [
    {"id": 1, "amount_eur": 10.5, "currency": "EUR", "fx_rate": Decimal("1"), "status": "OPEN",
     "order_ts": dt.datetime(2024, 3, 1, 9, 0)},
    {"id": 2, "amount_eur": 0.0, "currency": "CHF", "fx_rate": Decimal("0.95"), "status": "CANCELLED",
     "order_ts": dt.datetime(2021, 1, 1)},
    {"id": 3, "amount_eur": Decimal("99.99"), "currency": "CHF", "fx_rate": Decimal("0.95"),
     "status": "SHIPPED", "order_ts": dt.datetime(2020, 1, 1)},
]


@pytest.mark.parametrize("row", GOOD_ROWS, ids=lambda r: f"id{r['id']}")
def test_seed_rules_pass_good_rows(row):
    for name, text in SEED_RULES.items():
        assert aud.Predicate(text).evaluate(row) is True, name


@pytest.mark.parametrize(
    "change, failing",
    [
        ({"amount_eur": -1.0}, "amount_positive"),
        ({"amount_eur": 0}, "amount_positive"),
        ({"amount_eur": None}, "amount_positive"),
        ({"currency": "USD"}, "known_currency"),
        ({"currency": None}, "known_currency"),
        ({"fx_rate": None}, "fx_rate_resolved"),
        ({"order_ts": dt.datetime(2019, 12, 31, 23, 59, 59)}, "order_not_ancient"),
        ({"order_ts": None}, "order_not_ancient"),
        ({"status": "open"}, "status_domain"),
        ({"status": None}, "status_domain"),
    ],
)
def test_seed_rules_reject_bad_rows(change, failing):
    row = {**GOOD_ROWS[0], **change}
    results = {name: aud.Predicate(text).evaluate(row) for name, text in SEED_RULES.items()}
    assert {name for name, ok in results.items() if ok is not True} == {failing}


def test_cancelled_order_may_have_zero_amount_but_not_null_status():
    row = {**GOOD_ROWS[0], "amount_eur": -5.0, "status": "CANCELLED"}
    assert aud.Predicate(SEED_RULES["amount_positive"]).evaluate(row) is True


def test_evaluate_counts_failures_per_expectation():
    exps = {name: aud.Predicate(text) for name, text in SEED_RULES.items()}
    rows = GOOD_ROWS + [
        {**GOOD_ROWS[0], "id": 10, "amount_eur": -3.0},
        {**GOOD_ROWS[0], "id": 11, "amount_eur": -4.0, "currency": "USD"},
    ]
    checked, failures = aud.evaluate(exps, list(GOOD_ROWS[0]), rows)
    assert checked == 5
    assert {k: v for k, v in failures.items() if v} == {"amount_positive": 2, "known_currency": 1}


def test_missing_column_is_an_expectation_error():
    exps = {name: aud.Predicate(text) for name, text in SEED_RULES.items()}
    columns = ["id", "amount_eur", "currency", "status", "order_ts"]
    with pytest.raises(aud.ExpectationError, match="fx_rate_resolved.*fx_rate, which the table does not have"):
        aud.evaluate(exps, columns, [])


def test_type_mismatch_is_an_expectation_error():
    exps = {"bad": aud.Predicate("currency > 5")}
    with pytest.raises(aud.ExpectationError, match="bad.*cannot compare string with number"):
        aud.evaluate(exps, ["currency"], [{"currency": "EUR"}])


# ---------------------------------------------------------------------------
# Malformed predicates and code injection


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty predicate"),
        ("   ", "empty predicate"),
        ("amount >", "expected a column or a literal, found end of predicate"),
        ("a = = 1", "expected a column or a literal"),
        ("status IN ()", "at least one value"),
        ("status IN 'A'", "expected '('"),
        ("status IN ('A'", "expected ')'"),
        ("currency = 'EUR", "unterminated string literal"),
        ('"col = 1', "unterminated quoted identifier"),
        ("a = 1 b = 2", "expected AND, OR or the end"),
        ("a = 1 OR", "expected a column or a literal"),
        ("NOT", "expected a column or a literal"),
        ("(a = 1", "expected ')'"),
        ("a BETWEEN 1", "expected AND"),
        ("a LIKE b", "string pattern after LIKE"),
        ("a IS 1", "expected NULL"),
        ("fx_rate = NULL", "use IS NULL"),
        ("fx_rate <> NULL", "use IS NULL"),
        ("5", "is a value, not a condition"),
        ("'EUR'", "is a value, not a condition"),
        ("a = 1 OR 2", "is a value, not a condition"),
        ("(a = 1) = TRUE", "not a condition"),
        ("TIMESTAMP 'yesterday' < t", "TIMESTAMP literal"),
        ("t > TIMESTAMP '2020-13-01'", "invalid TIMESTAMP"),
        ("d = DATE '2020-01-01 00:00'", "DATE literal"),
        ("amount_eur * 2 > 0", "unexpected character '*'"),
        ("amount_eur - 2 > 0", "arithmetic is not supported"),
        ("a = 1; DROP TABLE x", "unexpected character ';'"),
        ("upper(currency) = 'EUR'", "function calls are not supported"),
    ],
)
def test_malformed_predicates_are_rejected(text, message):
    with pytest.raises(aud.PredicateError) as info:
        aud.Predicate(text)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('touch {marker}')",
        "__import__('os')",
        "x = __import__('os').system('touch {marker}')",
        "().__class__.__bases__[0].__subclasses__()",
        "open('{marker}', 'w')",
        "x = 1 or __import__('os').system('touch {marker}')",
        "lambda: 1",
        "exec('1')",
    ],
)
def test_no_code_execution(text, tmp_path):
    marker = tmp_path / "pwned"
    with pytest.raises(aud.PredicateError):
        aud.Predicate(text.format(marker=marker)).evaluate({"x": 1})
    assert not marker.exists()


def test_auditor_source_calls_no_dynamic_code():
    tree = ast.parse((AUDITOR_DIR / "auditor.py").read_text())
    forbidden = {"eval", "exec", "compile", "__import__"}
    calls = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not calls & forbidden


# ---------------------------------------------------------------------------
# Expectations file


def test_shipped_expectations_load():
    exps = aud.ExpectationSet.load(str(AUDITOR_DIR / "expectations.json"))
    rules = exps.for_table(["sales"], "orders")
    assert {"amount_positive", "known_currency", "order_not_ancient", "status_domain"} <= set(rules)
    # the shipped rules only name columns a sales.orders table has
    for pred in rules.values():
        assert pred.columns <= {"id", "amount_eur", "currency", "status", "order_ts"}


def test_expectation_keys_merge_from_general_to_specific():
    exps = aud.ExpectationSet({
        "*": {"has_id": "id IS NOT NULL", "small": "id < 100"},
        "sales.*": {"small": "id < 1000"},
        "sales.orders": {"small": "id < 10", "known_currency": "currency IN ('EUR')"},
    })
    orders = exps.for_table(["sales"], "orders")
    assert set(orders) == {"has_id", "small", "known_currency"}
    assert orders["small"].text == "id < 10"
    assert exps.for_table(["sales", "eu"], "returns")["small"].text == "id < 1000"
    assert exps.for_table(["hr"], "people")["small"].text == "id < 100"
    assert aud.ExpectationSet({"sales.orders": {"a": "id > 0"}}).for_table(["hr"], "orders") == {}


@pytest.mark.parametrize(
    "doc, message",
    [
        ({}, "non-empty JSON object"),
        ([], "non-empty JSON object"),
        ({"orders": {"a": "id > 0"}}, "not a table key"),
        ({"sales.orders": {}}, "non-empty object"),
        ({"sales.orders": ["id > 0"]}, "non-empty object"),
        ({"sales.orders": {"bad name, x": "id > 0"}}, "expectation name"),
        ({"sales.orders": {"a": "id >"}}, "expectation a: expected a column or a literal"),
        ({"sales.orders": {"a": 5}}, "must be a string"),
    ],
)
def test_bad_expectation_files_are_rejected(doc, message):
    with pytest.raises(aud.ConfigError) as info:
        aud.ExpectationSet(doc)
    assert message in str(info.value)


# ---------------------------------------------------------------------------
# HTTP contract, with an injected row reader

SECRET = b"s3cret-for-tests"
COLUMNS = ["id", "amount_eur", "currency", "status", "order_ts"]


def payload(**over):
    doc = {
        "event": "wap.audit",
        "run-id": "run-1",
        "delivery-id": "d-1",
        "table": {"namespace": ["sales"], "name": "orders"},
        "table-uuid": "9f0e7c1e-0000-4000-8000-000000000001",
        "branch": "wap-run-1",
        "snapshot-id": 42,
        "parent-snapshot-id": 41,
        "main-snapshot-id": 41,
        "snapshot": {"snapshot-id": 42},
        "schema": {"type": "struct", "fields": []},
        "metadata-location": "file:///nowhere/v3.metadata.json",
        "requested-at": "2026-01-01T00:00:00Z",
        "requested-by": "tester",
    }
    doc.update(over)
    return doc


def row(i, **over):
    base = {"id": i, "amount_eur": 10.0, "currency": "EUR", "status": "OPEN",
            "order_ts": dt.datetime(2024, 1, 1)}
    base.update(over)
    return base


class FakeReader:
    def __init__(self, columns=COLUMNS, rows=(), error=None):
        self.columns, self.rows, self.error, self.calls = columns, list(rows), error, []

    def __call__(self, p):
        self.calls.append(p)
        if self.error:
            raise self.error
        return self.columns, iter(self.rows)


@pytest.fixture
def serve():
    servers = []

    def start(reader, secret=SECRET, expectations=None):
        exps = aud.ExpectationSet.load(str(AUDITOR_DIR / "expectations.json")) if expectations is None \
            else aud.ExpectationSet(expectations)
        server = aud.AuditServer(("127.0.0.1", 0), aud.Auditor(exps, secret=secret, read_rows=reader))
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def floe_signature(secret: bytes, timestamp, body: bytes) -> str:
    """What floe sends: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>."""
    return "sha256=" + hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def post(url, doc=None, body=None, secret=SECRET, event="wap.audit", signature=None, path="/",
         timestamp="now"):
    data = body if body is not None else json.dumps(doc).encode()
    headers = {"Content-Type": "application/json", "X-Floe-Delivery": "d-1"}
    if timestamp == "now":
        timestamp = int(time.time())
    if timestamp is not None:
        headers["X-Floe-Timestamp"] = str(timestamp)
    if event is not None:
        headers["X-Floe-Event"] = event
    if signature is not None:
        headers["X-Floe-Signature-256"] = signature
    elif secret is not None:
        headers["X-Floe-Signature-256"] = floe_signature(secret, timestamp, data)
    req = urllib.request.Request(url + path, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_http_pass(serve):
    reader = FakeReader(rows=[row(1), row(2, status="CANCELLED", amount_eur=0.0)])
    url = serve(reader)
    status, doc = post(url, payload())
    assert status == 200
    assert doc == {
        "passed": True,
        "checked-rows": 2,
        "expectations": ["amount_positive", "known_currency", "order_not_ancient", "status_domain"],
    }
    assert reader.calls[0]["snapshot-id"] == 42  # exactly the audited snapshot is read
    assert reader.calls[0]["metadata-location"] == "file:///nowhere/v3.metadata.json"


def test_http_reject_names_failing_expectations_with_counts(serve):
    rows = [row(1), row(2, amount_eur=-1.0), row(3, amount_eur=None), row(4, currency="USD")]
    url = serve(FakeReader(rows=rows))
    status, doc = post(url, payload())
    assert status == 200
    assert doc["passed"] is False
    assert doc["reason"] == "amount_positive: 2 rows, known_currency: 1 row"
    assert doc["failures"] == {"amount_positive": 2, "known_currency": 1}
    assert doc["checked-rows"] == 4


def test_http_audit_path_also_served(serve):
    url = serve(FakeReader(rows=[row(1)]))
    assert post(url, payload(), path="/audit")[0] == 200
    assert post(url, payload(), path="/elsewhere")[0] == 404


def test_http_missing_signature_is_401(serve):
    reader = FakeReader(rows=[row(1)])
    url = serve(reader)
    status, doc = post(url, payload(), secret=None)
    assert status == 401
    assert doc["passed"] is False
    assert reader.calls == []  # nothing is read for an unauthenticated caller


@pytest.mark.parametrize(
    "signature",
    [
        "sha256=" + "0" * 64,
        "sha256=",
        "sha1=abc",
        "garbage",
        "sha256=" + hmac.new(b"other-secret", b"x", hashlib.sha256).hexdigest(),
    ],
)
def test_http_wrong_signature_is_401(serve, signature):
    url = serve(FakeReader(rows=[row(1)]))
    assert post(url, payload(), signature=signature)[0] == 401


def test_http_signature_covers_the_timestamp_and_the_raw_body(serve):
    url = serve(FakeReader(rows=[row(1)]))
    body = json.dumps(payload()).encode()
    ts = int(time.time())
    good = floe_signature(SECRET, ts, body)
    assert post(url, body=body, signature=good, timestamp=ts)[0] == 200
    assert post(url, body=body, signature=good.upper().replace("SHA256=", "sha256="), timestamp=ts)[0] == 200
    tampered = body.replace(b'"snapshot-id": 42', b'"snapshot-id": 43')
    assert tampered != body
    assert post(url, body=tampered, signature=good, timestamp=ts)[0] == 401
    # The body alone, as floe signed before timestamps, is no longer enough.
    body_only = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    assert post(url, body=body, signature=body_only, timestamp=ts)[0] == 401
    # The same signature under another timestamp does not verify.
    assert post(url, body=body, signature=good, timestamp=ts - 1)[0] == 401


@pytest.mark.parametrize("age", [301, -301, 3600, 10**9])
def test_http_delivery_outside_the_window_is_401(serve, age):
    reader = FakeReader(rows=[row(1)])
    url = serve(reader)
    status, doc = post(url, payload(), timestamp=int(time.time()) - age)  # correctly signed
    assert status == 401
    assert doc["passed"] is False and "window" in doc["reason"]
    assert reader.calls == []


@pytest.mark.parametrize("stamp", [None, "", "abc", "1.5", "-5", "+17", "1e9"])
def test_http_missing_or_malformed_timestamp_is_401(serve, stamp):
    url = serve(FakeReader(rows=[row(1)]))
    body = json.dumps(payload()).encode()
    headers = {"Content-Type": "application/json", "X-Floe-Event": "wap.audit",
               "X-Floe-Signature-256": floe_signature(SECRET, stamp or "", body)}
    if stamp is not None:
        headers["X-Floe-Timestamp"] = stamp
    req = urllib.request.Request(url + "/", data=body, headers=headers, method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 401


def test_a_captured_delivery_replayed_later_is_refused():
    clock = [1_800_000_000.0]
    exps = aud.ExpectationSet.load(str(AUDITOR_DIR / "expectations.json"))
    auditor = aud.Auditor(exps, secret=SECRET, read_rows=FakeReader(rows=[row(1)]), max_age=60,
                          clock=lambda: clock[0])
    body = json.dumps(payload()).encode()
    ts = str(int(clock[0]))
    headers = {"X-Floe-Event": "wap.audit", "X-Floe-Timestamp": ts,
               "X-Floe-Signature-256": floe_signature(SECRET, ts, body)}
    assert auditor.handle(headers, body)[0] == 200
    clock[0] += 60
    assert auditor.handle(headers, body)[0] == 200  # inside the window
    clock[0] += 1
    status, doc = auditor.handle(headers, body)
    assert status == 401 and "window" in doc["reason"]


def test_http_wrong_secret_is_401(serve):
    url = serve(FakeReader(rows=[row(1)]))
    assert post(url, payload(), secret=b"not-the-secret")[0] == 401


def test_http_without_configured_secret_accepts_unsigned(serve):
    url = serve(FakeReader(rows=[row(1)]), secret=None)
    assert post(url, payload(), secret=None)[0] == 200


def test_http_event_header_is_checked(serve):
    url = serve(FakeReader(rows=[row(1)]))
    assert post(url, payload(), event=None)[0] == 400
    assert post(url, payload(), event="wap.publish")[0] == 400


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        json.dumps(payload(event="other")).encode(),
        json.dumps(payload(**{"snapshot-id": "42"})).encode(),
        json.dumps(payload(table={"name": "orders"})).encode(),
        json.dumps(payload(**{"metadata-location": 7})).encode(),
    ],
)
def test_http_bad_payload_is_400(serve, body):
    url = serve(FakeReader(rows=[row(1)]))
    assert post(url, body=body)[0] == 400


def test_http_missing_column_is_422(serve):
    rules = {"sales.orders": SEED_RULES}
    url = serve(FakeReader(rows=[row(1)]), expectations=rules)
    status, doc = post(url, payload())
    assert status == 422
    assert doc["passed"] is False
    assert "fx_rate_resolved" in doc["reason"]
    assert "does not have" in doc["reason"]


def test_http_table_without_expectations_is_422(serve):
    url = serve(FakeReader(rows=[row(1)]))
    status, doc = post(url, payload(table={"namespace": ["sales"], "name": "returns"}))
    assert status == 422
    assert "no expectations" in doc["reason"]


def test_http_read_failure_is_500(serve):
    url = serve(FakeReader(error=OSError("disk on fire")))
    status, doc = post(url, payload())
    assert status == 500
    assert doc["passed"] is False
    assert "disk on fire" in doc["reason"]


def test_http_empty_snapshot_passes(serve):
    url = serve(FakeReader(rows=[]))
    status, doc = post(url, payload())
    assert (status, doc["passed"], doc["checked-rows"]) == (200, True, 0)


def test_http_healthz(serve):
    url = serve(FakeReader())
    with urllib.request.urlopen(url + "/healthz", timeout=5) as resp:
        assert json.loads(resp.read())["status"] == "ok"


# ---------------------------------------------------------------------------
# A real Iceberg table: main holds good rows, a staging branch adds bad ones.


def _file_catalog(warehouse):
    """A tiny file-only catalog, so PyIceberg writes real metadata without a database."""
    from pyiceberg.catalog import MetastoreCatalog
    from pyiceberg.catalog.noop import NoopCatalog
    from pyiceberg.exceptions import NoSuchTableError
    from pyiceberg.table import CommitTableResponse, StaticTable, Table

    class FileCatalog(MetastoreCatalog, NoopCatalog):
        def __init__(self):
            super().__init__("test", warehouse=warehouse)
            self.locations = {}

        def create_table(self, identifier, schema, location=None, *args, **kwargs):
            staged = self._create_staged_table(identifier, schema, location)
            self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
            self.locations[tuple(identifier)] = staged.metadata_location
            return self.load_table(identifier)

        def load_table(self, identifier):
            ident = tuple(identifier)
            if ident not in self.locations:
                raise NoSuchTableError(str(ident))
            st = StaticTable.from_metadata(self.locations[ident])
            return Table(ident, st.metadata, st.metadata_location, st.io, self)

        def commit_table(self, table, requirements, updates):
            current = self.load_table(table.name())
            staged = self._update_and_stage_table(current, table.name(), requirements, updates)
            self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
            self.locations[tuple(table.name())] = staged.metadata_location
            return CommitTableResponse(metadata=staged.metadata, metadata_location=staged.metadata_location)

    return FileCatalog()


@pytest.fixture
def staged_table(tmp_path):
    pa = pytest.importorskip("pyarrow")
    catalog = _file_catalog(f"file://{tmp_path}")
    schema = pa.schema([
        ("id", pa.int64()),
        ("amount_eur", pa.decimal128(18, 2)),
        ("currency", pa.string()),
        ("status", pa.string()),
        ("order_ts", pa.timestamp("us")),
    ])
    table = catalog.create_table(("sales", "orders"), schema, location=f"file://{tmp_path}/sales/orders")
    good = [row(1, amount_eur=Decimal("10.00")), row(2, amount_eur=Decimal("0.00"), status="CANCELLED")]
    table.append(pa.Table.from_pylist(good, schema=schema))
    table = catalog.load_table(("sales", "orders"))
    main_id = table.metadata.current_snapshot_id
    table.manage_snapshots().create_branch(main_id, "wap-1").commit()
    table = catalog.load_table(("sales", "orders"))
    bad = [
        row(3, amount_eur=Decimal("-5.00")),
        row(4, amount_eur=Decimal("7.00"), currency="USD"),
        row(5, amount_eur=Decimal("8.00"), status=None),
    ]
    table.append(pa.Table.from_pylist(bad, schema=schema), branch="wap-1")
    table = catalog.load_table(("sales", "orders"))
    branch_id = table.metadata.snapshot_by_name("wap-1").snapshot_id
    assert table.metadata.current_snapshot_id == main_id  # main untouched by the staged write
    return {"metadata-location": table.metadata_location, "main": main_id, "branch": branch_id}


def test_real_table_branch_snapshot_is_rejected(staged_table):
    exps = aud.ExpectationSet.load(str(AUDITOR_DIR / "expectations.json"))
    auditor = aud.Auditor(exps, secret=None)  # the default reader: StaticTable + scan(snapshot_id)
    doc = payload(**{
        "snapshot-id": staged_table["branch"],
        "parent-snapshot-id": staged_table["main"],
        "main-snapshot-id": staged_table["main"],
        "metadata-location": staged_table["metadata-location"],
    })
    status, verdict = auditor.handle({"X-Floe-Event": "wap.audit"}, json.dumps(doc).encode())
    assert status == 200
    assert verdict["passed"] is False
    assert verdict["checked-rows"] == 5  # main's 2 rows plus the 3 staged ones
    assert verdict["failures"] == {"amount_positive": 1, "known_currency": 1, "status_domain": 1}


def test_real_table_main_snapshot_passes(staged_table):
    exps = aud.ExpectationSet.load(str(AUDITOR_DIR / "expectations.json"))
    auditor = aud.Auditor(exps, secret=None)
    doc = payload(**{"snapshot-id": staged_table["main"], "metadata-location": staged_table["metadata-location"]})
    status, verdict = auditor.handle({"X-Floe-Event": "wap.audit"}, json.dumps(doc).encode())
    assert (status, verdict["passed"], verdict["checked-rows"]) == (200, True, 2)


def test_real_table_unknown_snapshot_is_500(staged_table):
    exps = aud.ExpectationSet.load(str(AUDITOR_DIR / "expectations.json"))
    auditor = aud.Auditor(exps, secret=None)
    doc = payload(**{"snapshot-id": 12345, "metadata-location": staged_table["metadata-location"]})
    status, verdict = auditor.handle({"X-Floe-Event": "wap.audit"}, json.dumps(doc).encode())
    assert status == 500
    assert "12345" in verdict["reason"]


# ---------------------------------------------------------------------------
# The command line, as an operator runs it


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_help_documents_environment():
    out = subprocess.run([sys.executable, str(AUDITOR_DIR / "auditor.py"), "--help"],
                         capture_output=True, text=True, check=True).stdout
    for word in ("AUDITOR_LISTEN", "AUDITOR_EXPECTATIONS", "FLOE_AUDIT_SECRET", "AUDITOR_CATALOG_URI",
                 "--secret-env", "--catalog-uri", "--max-age", "AUDITOR_MAX_AGE", "X-Floe-Timestamp"):
        assert word in out


def test_cli_rejects_bad_expectations(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"sales.orders": {"x": "__import__('os')"}}))
    proc = subprocess.run([sys.executable, str(AUDITOR_DIR / "auditor.py"), "--expectations", str(bad), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "function calls are not supported" in proc.stderr


def test_cli_missing_secret_variable_refuses_to_start():
    env = {k: v for k, v in os.environ.items() if k != "NO_SUCH_SECRET_VAR"}
    proc = subprocess.run([sys.executable, str(AUDITOR_DIR / "auditor.py"),
                           "--expectations", str(AUDITOR_DIR / "expectations.json"),
                           "--secret-env", "NO_SUCH_SECRET_VAR"], capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    assert "NO_SUCH_SECRET_VAR" in proc.stderr


def test_cli_serves_from_environment(staged_table):
    port = _free_port()
    env = dict(os.environ,
               AUDITOR_LISTEN=f"127.0.0.1:{port}",
               AUDITOR_EXPECTATIONS=str(AUDITOR_DIR / "expectations.json"),
               FLOE_AUDIT_SECRET=SECRET.decode(),
               AUDITOR_MAX_AGE="30")
    proc = subprocess.Popen([sys.executable, str(AUDITOR_DIR / "auditor.py")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(url + "/healthz", timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "auditor did not start"
                time.sleep(0.1)
        doc = payload(**{"snapshot-id": staged_table["branch"],
                         "metadata-location": staged_table["metadata-location"]})
        assert post(url, doc, secret=None)[0] == 401
        assert post(url, doc, timestamp=int(time.time()) - 100)[0] == 401  # AUDITOR_MAX_AGE=30
        status, verdict = post(url, doc)
        assert status == 200
        assert verdict["reason"] == "amount_positive: 1 row, known_currency: 1 row, status_domain: 1 row"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    audit_lines = [line for line in err.splitlines() if " audit run=" in line]
    assert len(audit_lines) == 3  # one line per audit, the refused ones included
    assert "verdict=reject" in audit_lines[-1] and "table=sales.orders" in audit_lines[-1]


# ---------------------------------------------------------------------------
# Releases: one delivery for many tables, relations across them

RELEASE_RULES = {
    "sales.orders": {"amount_positive": "amount_eur > 0 OR status = 'CANCELLED'"},
    "relations": [
        {"name": "line_has_order", "table": "sales.order_lines", "columns": ["order_id"],
         "references": "sales.orders", "referenced-columns": ["id"]},
        {"name": "currency_has_rate", "table": "sales.orders", "columns": ["currency"],
         "references": "ref.fx_rates"},
    ],
}


class TablesReader:
    """Rows per table name, as a release's members are read."""

    def __init__(self, tables):
        self.tables, self.calls = tables, []

    def __call__(self, p):
        self.calls.append((p["table"]["name"], p["snapshot-id"]))
        cols, rows = self.tables[p["table"]["name"]]
        return cols, iter(rows)


def member(ns, name, sid):
    return {"table": {"namespace": ns, "name": name}, "table-uuid": f"uuid-{name}", "run-id": f"run-{name}",
            "snapshot-id": sid, "parent-snapshot-id": sid - 1, "main-snapshot-id": sid - 1,
            "snapshot": {"snapshot-id": sid}, "schema": {"type": "struct", "fields": []},
            "metadata-location": f"file:///nowhere/{name}.metadata.json"}


def release(*members):
    return {"event": "release.audit", "release-id": "rel-1", "delivery-id": "d-1", "branch": "nightly",
            "tables": list(members), "requested-at": "2026-01-01T00:00:00Z", "requested-by": "tester"}


MEMBERS = (member(["sales"], "orders", 10), member(["sales"], "order_lines", 20),
           member(["ref"], "fx_rates", 30))
ORDER_COLS = ["id", "amount_eur", "currency", "status"]


def release_tables(lines=((1, 1), (2, 1), (3, 2)), rates=("EUR", "CHF")):
    return {
        "orders": (ORDER_COLS, [{"id": 1, "amount_eur": 5.0, "currency": "EUR", "status": "OPEN"},
                                {"id": 2, "amount_eur": 7.0, "currency": "CHF", "status": "OPEN"}]),
        "order_lines": (["line_id", "order_id"], [{"line_id": a, "order_id": b} for a, b in lines]
                        + [{"line_id": 99, "order_id": None}]),
        "fx_rates": (["currency", "rate"], [{"currency": c, "rate": 1.0} for c in rates]),
    }


def test_release_passes_when_every_relation_holds(serve):
    reader = TablesReader(release_tables())
    status, doc = post(serve(reader, expectations=RELEASE_RULES), release(*MEMBERS),
                       event="release.audit")
    assert status == 200 and doc["passed"] is True, doc
    assert doc["relations"] == ["line_has_order", "currency_has_rate"]
    # Each member is read at exactly its audited snapshot.
    assert set(reader.calls) == {("orders", 10), ("order_lines", 20), ("fx_rates", 30)}


def test_release_rejects_an_orphan_line_and_a_currency_without_rate(serve):
    reader = TablesReader(release_tables(lines=((1, 1), (2, 3), (3, 4)), rates=("EUR",)))
    status, doc = post(serve(reader, expectations=RELEASE_RULES), release(*MEMBERS),
                       event="release.audit")
    assert status == 200 and doc["passed"] is False
    assert doc["problems"] == [
        "relation line_has_order: 2 rows of sales.order_lines without a match in sales.orders",
        "relation currency_has_rate: 1 row of sales.orders without a match in ref.fx_rates",
    ]


def test_release_runs_each_members_expectations(serve):
    tables = release_tables()
    tables["orders"][1][0]["amount_eur"] = -1.0
    status, doc = post(serve(TablesReader(tables), expectations=RELEASE_RULES), release(*MEMBERS),
                       event="release.audit")
    assert doc["passed"] is False and doc["problems"] == ["sales.orders: amount_positive: 1 row"], doc


def test_release_refuses_a_relation_whose_table_is_not_a_member(serve):
    status, doc = post(serve(TablesReader(release_tables()), expectations=RELEASE_RULES),
                       release(*MEMBERS[:2]), event="release.audit")
    assert doc["passed"] is False
    assert "relation currency_has_rate: ref.fx_rates is not in the release" in doc["problems"]


def test_release_member_with_no_rule_is_rejected(serve):
    stray = member(["other"], "stray", 40)
    status, doc = post(serve(TablesReader(release_tables()), expectations=RELEASE_RULES),
                       release(*MEMBERS, stray), event="release.audit")
    assert doc["passed"] is False
    assert "no expectations are configured for table other.stray" in doc["problems"]


def test_release_relation_on_a_missing_column_is_a_reject(serve):
    tables = release_tables()
    tables["order_lines"] = (["line_id"], [{"line_id": 1}])
    status, doc = post(serve(TablesReader(tables), expectations=RELEASE_RULES), release(*MEMBERS),
                       event="release.audit")
    assert status == 422 and "has no column order_id" in doc["reason"], doc


def test_release_read_error_fails_closed(serve):
    def broken(p):
        raise aud.ReadError("storage down")
    status, doc = post(serve(broken, expectations=RELEASE_RULES), release(*MEMBERS), event="release.audit")
    assert status == 500 and "storage down" in doc["reason"]


@pytest.mark.parametrize("doc", [
    release(),
    {**release(*MEMBERS), "release-id": 5},
    {**release(*MEMBERS), "tables": [{"table": "x", "snapshot-id": 1}]},
    {**release(*MEMBERS), "event": "wap.audit"},
])
def test_release_malformed_payload_is_400(serve, doc):
    status, body = post(serve(TablesReader(release_tables()), expectations=RELEASE_RULES), doc,
                        event="release.audit")
    assert status == 400 and body["passed"] is False


@pytest.mark.parametrize("relations, message", [
    ([], "non-empty array"),
    ([{"name": "r", "table": "a.b", "columns": ["x"]}], "references must name one table"),
    ([{"name": "r", "table": "a.*", "columns": ["x"], "references": "c.d"}], "table must name one table"),
    ([{"name": "r", "table": "a.b", "columns": [], "references": "c.d"}], "columns must be"),
    ([{"name": "r", "table": "a.b", "columns": ["x"], "references": "c.d",
       "referenced-columns": ["y", "z"]}], "as many"),
    ([{"name": "bad name", "table": "a.b", "columns": ["x"], "references": "c.d"}], "name must match"),
    ([{"name": "r", "table": "a.b", "columns": ["x"], "references": "c.d", "on": 1}], "unknown field"),
])
def test_bad_relations_stop_the_auditor_at_load(relations, message):
    with pytest.raises(aud.ConfigError, match=message):
        aud.ExpectationSet({"relations": relations})
