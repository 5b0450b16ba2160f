#!/usr/bin/env python3
"""floe reference audit webhook: checks a staged snapshot against expectations.

floe calls this service during a write-audit-publish (WAP) publish. The
service reads exactly the audited snapshot with PyIceberg, checks every row
against named SQL-style predicates ("expectations") and answers a verdict in
the form floe understands. For a release (many tables published together)
it also checks relations across the release's tables: every order line has
its order, every currency its rate. It is a reference implementation to copy and
adapt, not a general data-quality engine: the predicate language is a small,
safe subset of SQL, evaluated row by row, and nothing in it can run code.

Dependencies: the Python standard library and pyiceberg[pyarrow].
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import hashlib
import hmac
import json
import logging
import os
import re
import signal
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

LOG = logging.getLogger("floe-auditor")

DEFAULT_LISTEN = "127.0.0.1:8282"
DEFAULT_SECRET_ENV = "FLOE_AUDIT_SECRET"
MAX_BODY_BYTES = 16 * 1024 * 1024  # a payload carries one schema and one snapshot
AUDIT_PATHS = ("/", "/audit")
EVENT = "wap.audit"
RELEASE_EVENT = "release.audit"
RELATIONS_KEY = "relations"
SIGNATURE_HEADER = "X-Floe-Signature-256"
TIMESTAMP_HEADER = "X-Floe-Timestamp"
DEFAULT_MAX_AGE = 300  # seconds a signed delivery stays acceptable (either side of now)
EXPECTATION_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


# ---------------------------------------------------------------------------
# Errors. Each maps to one HTTP answer, so the handler never guesses.


class PredicateError(ValueError):
    """A predicate is not valid in the supported SQL subset (found at load)."""


class ConfigError(ValueError):
    """The expectations file or the command line is unusable (found at load)."""


class ExpectationError(Exception):
    """An expectation cannot be applied to this table: 422, the publish is rejected."""


class PayloadError(Exception):
    """The request is not a well-formed wap.audit delivery: 400."""


class ReadError(Exception):
    """The audited snapshot could not be read: 500, floe fails closed."""


class _TypeMismatch(Exception):
    """Raised while evaluating; wrapped into ExpectationError with the expectation's name."""


# ---------------------------------------------------------------------------
# Predicate language.
#
#   condition  := or_expr
#   or_expr    := and_expr ( OR and_expr )*
#   and_expr   := not_expr ( AND not_expr )*
#   not_expr   := NOT not_expr | predicate
#   predicate  := operand [ cmp_op operand
#                         | IS [NOT] NULL
#                         | [NOT] IN ( operand {, operand} )
#                         | [NOT] BETWEEN operand AND operand
#                         | [NOT] LIKE 'pattern' ]
#   operand    := column | literal | ( condition )
#   literal    := number | 'string' | TRUE | FALSE | NULL
#               | TIMESTAMP 'YYYY-MM-DD[ HH:MM:SS[.ffffff]][Z|+HH:MM]' | DATE 'YYYY-MM-DD'
#
# A predicate is parsed into a tree of tuples and bound to closures; there is
# no eval, no attribute access and no function call anywhere, so a predicate
# such as __import__('os') is simply a syntax error.

_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "LIKE", "TRUE", "FALSE"}
_TYPED_LITERALS = {"TIMESTAMP", "DATE"}
_COMPARISONS = {"=", "<>", "!=", "<", "<=", ">", ">="}
_BOOLEAN_NODES = {"cmp", "and", "or", "not", "in", "between", "like", "isnull"}

_TOKEN_RE = re.compile(
    r"""
     (?P<ws>\s+)
    |(?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
    |(?P<str>'(?:[^']|'')*')
    |(?P<qident>"(?:[^"]|"")+"|`(?:[^`]|``)+`)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<op><=|>=|<>|!=|=|<|>)
    |(?P<punct>[(),+\-])
    """,
    re.VERBOSE,
)

_TIMESTAMP_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?(?:Z|[+-]\d{2}:\d{2})?$"
)
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _tokenize(text: str) -> List[Tuple[str, Any, int]]:
    """Split a predicate into (kind, value, position) tokens; kinds: num str ident kw op punct eof."""
    tokens: List[Tuple[str, Any, int]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            if text[pos] == "'":
                raise PredicateError(f"unterminated string literal at position {pos}")
            if text[pos] in "\"`":
                raise PredicateError(f"unterminated quoted identifier at position {pos}")
            raise PredicateError(f"unexpected character {text[pos]!r} at position {pos}")
        kind = m.lastgroup
        raw = m.group()
        if kind == "ws":
            pass
        elif kind == "str":
            tokens.append(("str", raw[1:-1].replace("''", "'"), pos))
        elif kind == "qident":
            quote = raw[0]
            tokens.append(("ident", raw[1:-1].replace(quote * 2, quote), pos))
        elif kind == "ident":
            if raw.upper() in _KEYWORDS:
                tokens.append(("kw", raw.upper(), pos))
            else:
                tokens.append(("ident", raw, pos))
        else:
            tokens.append((kind, raw, pos))
        pos = m.end()
    tokens.append(("eof", None, len(text)))
    return tokens


def _describe(tok: Tuple[str, Any, int]) -> str:
    kind, value, _ = tok
    if kind == "eof":
        return "end of predicate"
    if kind == "str":
        return f"string '{value}'"
    return repr(value)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> Tuple[str, Any, int]:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def advance(self) -> Tuple[str, Any, int]:
        tok = self.tokens[self.i]
        if tok[0] != "eof":
            self.i += 1
        return tok

    def is_kw(self, word: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok[0] == "kw" and tok[1] == word

    def is_punct(self, ch: str) -> bool:
        tok = self.peek()
        return tok[0] == "punct" and tok[1] == ch

    def fail(self, what: str) -> PredicateError:
        tok = self.peek()
        return PredicateError(f"{what}, found {_describe(tok)} at position {tok[2]}")

    def expect_kw(self, word: str) -> None:
        if not self.is_kw(word):
            raise self.fail(f"expected {word}")
        self.advance()

    def expect_punct(self, ch: str) -> None:
        if not self.is_punct(ch):
            raise self.fail(f"expected {ch!r}")
        self.advance()

    # condition := or_expr, and nothing after it
    def parse(self) -> tuple:
        if self.peek()[0] == "eof":
            raise PredicateError("empty predicate")
        node = self.parse_or()
        if self.peek()[0] != "eof":
            raise self.fail("expected AND, OR or the end of the predicate")
        _require_condition(node)
        return node

    def parse_or(self) -> tuple:
        node = self.parse_and()
        while self.is_kw("OR"):
            self.advance()
            node = ("or", node, self.parse_and())
        return node

    def parse_and(self) -> tuple:
        node = self.parse_not()
        while self.is_kw("AND"):
            self.advance()
            node = ("and", node, self.parse_not())
        return node

    def parse_not(self) -> tuple:
        if self.is_kw("NOT"):
            self.advance()
            return ("not", self.parse_not())
        return self.parse_predicate()

    def parse_value(self) -> tuple:
        start = self.peek()
        node = self.parse_operand()
        if node[0] not in ("col", "lit"):
            raise PredicateError(
                f"expected a column or a literal at position {start[2]}, found a condition"
            )
        return node

    def parse_predicate(self) -> tuple:
        left = self.parse_operand()
        tok = self.peek()
        if tok[0] == "op":
            self.advance()
            right = self.parse_value()
            _require_value(left, tok)
            if _is_null_literal(left) or _is_null_literal(right):
                raise PredicateError(
                    f"comparison with NULL at position {tok[2]} is never true; "
                    "use IS NULL or IS NOT NULL"
                )
            return ("cmp", "!=" if tok[1] == "<>" else tok[1], left, right)
        if self.is_kw("IS"):
            self.advance()
            negated = False
            if self.is_kw("NOT"):
                self.advance()
                negated = True
            self.expect_kw("NULL")
            _require_value(left, tok)
            return ("isnull", left, negated)
        negated = False
        if self.is_kw("NOT") and (self.is_kw("IN", 1) or self.is_kw("BETWEEN", 1) or self.is_kw("LIKE", 1)):
            self.advance()
            negated = True
        if self.is_kw("IN"):
            self.advance()
            _require_value(left, tok)
            self.expect_punct("(")
            if self.is_punct(")"):
                raise self.fail("expected at least one value in IN (...)")
            items = [self.parse_value()]
            while self.is_punct(","):
                self.advance()
                items.append(self.parse_value())
            self.expect_punct(")")
            return ("in", left, tuple(items), negated)
        if self.is_kw("BETWEEN"):
            self.advance()
            _require_value(left, tok)
            low = self.parse_value()
            self.expect_kw("AND")
            high = self.parse_value()
            if _is_null_literal(low) or _is_null_literal(high):
                raise PredicateError(f"BETWEEN at position {tok[2]} with a NULL bound is never true")
            return ("between", left, low, high, negated)
        if self.is_kw("LIKE"):
            self.advance()
            _require_value(left, tok)
            pat = self.peek()
            if pat[0] != "str":
                raise self.fail("expected a string pattern after LIKE")
            self.advance()
            return ("like", left, _like_regex(pat[1]), pat[1], negated)
        return left

    def parse_operand(self) -> tuple:
        tok = self.peek()
        kind, value, pos = tok
        if kind == "punct" and value == "(":
            self.advance()
            node = self.parse_or()
            self.expect_punct(")")
            return node
        if kind == "punct" and value in "+-":
            nxt = self.peek(1)
            if nxt[0] != "num":
                raise self.fail("expected a column or a literal")
            self.advance()
            self.advance()
            number = _number(nxt[1])
            return ("lit", -number if value == "-" else number)
        if kind == "num":
            self.advance()
            return ("lit", _number(value))
        if kind == "str":
            self.advance()
            return ("lit", value)
        if kind == "kw" and value in ("NULL", "TRUE", "FALSE"):
            self.advance()
            return ("lit", {"NULL": None, "TRUE": True, "FALSE": False}[value])
        if kind == "ident":
            nxt = self.peek(1)
            if value.upper() in _TYPED_LITERALS and nxt[0] == "str" and self.text[pos] not in "\"`":
                self.advance()
                self.advance()
                return ("lit", _typed_literal(value.upper(), nxt[1], nxt[2]))
            self.advance()
            if self.is_punct("("):
                raise PredicateError(
                    f"function calls are not supported: {value}( at position {pos}"
                )
            if self.peek()[0] == "punct" and self.peek()[1] in "+-":
                raise PredicateError(
                    f"arithmetic is not supported (position {self.peek()[2]})"
                )
            return ("col", value)
        raise self.fail("expected a column or a literal")


def _number(text: str):
    if any(c in text for c in ".eE"):
        return decimal.Decimal(text)
    return int(text)


def _typed_literal(kind: str, text: str, pos: int):
    if kind == "DATE":
        if not _DATE_RE.match(text):
            raise PredicateError(f"DATE literal at position {pos} must be 'YYYY-MM-DD', got '{text}'")
        try:
            return dt.date.fromisoformat(text)
        except ValueError as e:
            raise PredicateError(f"invalid DATE literal '{text}' at position {pos}: {e}") from None
    if not _TIMESTAMP_RE.match(text):
        raise PredicateError(
            f"TIMESTAMP literal at position {pos} must be 'YYYY-MM-DD[ HH:MM:SS]', got '{text}'"
        )
    iso = text[:-1] + "+00:00" if text.endswith("Z") else text
    try:
        return dt.datetime.fromisoformat(iso)
    except ValueError as e:
        raise PredicateError(f"invalid TIMESTAMP literal '{text}' at position {pos}: {e}") from None


def _like_regex(pattern: str) -> "re.Pattern[str]":
    out = []
    for ch in pattern:
        if ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        else:
            out.append(re.escape(ch))
    return re.compile("".join(out), re.DOTALL)


def _is_null_literal(node: tuple) -> bool:
    return node[0] == "lit" and node[1] is None


def _require_value(node: tuple, at: Tuple[str, Any, int]) -> None:
    if node[0] not in ("col", "lit"):
        raise PredicateError(
            f"{_describe(at)} at position {at[2]} needs a column or a literal on its left, not a condition"
        )


def _require_condition(node: tuple) -> None:
    kind = node[0]
    if kind in ("and", "or"):
        _require_condition(node[1])
        _require_condition(node[2])
    elif kind == "not":
        _require_condition(node[1])
    elif kind == "lit" and not isinstance(node[1], bool):
        raise PredicateError(f"{node[1]!r} is a value, not a condition")


def _columns_of(node: tuple, out: set) -> set:
    kind = node[0]
    if kind == "col":
        out.add(node[1])
    elif kind == "lit":
        pass
    elif kind == "in":
        _columns_of(node[1], out)
        for item in node[2]:
            _columns_of(item, out)
    else:
        for child in node[1:]:
            if isinstance(child, tuple) and child and isinstance(child[0], str):
                _columns_of(child, out)
    return out


# --- evaluation -----------------------------------------------------------
# Values are Python objects as PyArrow returns them; None is SQL NULL. Every
# bound condition returns True, False or None (unknown), per SQL's
# three-valued logic.

_NUMBER_TYPES = (int, float, decimal.Decimal)


def _family(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, _NUMBER_TYPES):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dt.datetime):
        return "timestamp"
    if isinstance(v, dt.date):
        return "date"
    if isinstance(v, dt.time):
        return "time"
    if isinstance(v, uuid.UUID):
        return "uuid"
    if isinstance(v, (bytes, bytearray)):
        return "binary"
    return type(v).__name__


def _align_tz(a: dt.datetime, b: dt.datetime) -> Tuple[dt.datetime, dt.datetime]:
    # A literal without a zone compared with a timestamptz value means UTC.
    if a.tzinfo is None and b.tzinfo is not None:
        a = a.replace(tzinfo=dt.timezone.utc)
    elif b.tzinfo is None and a.tzinfo is not None:
        b = b.replace(tzinfo=dt.timezone.utc)
    return a, b


def _coerce(a: Any, b: Any) -> Tuple[Any, Any]:
    fa, fb = _family(a), _family(b)
    if fa == fb:
        if fa == "number":
            if isinstance(a, float) and isinstance(b, decimal.Decimal):
                b = float(b)
            elif isinstance(b, float) and isinstance(a, decimal.Decimal):
                a = float(a)
        elif fa == "timestamp":
            a, b = _align_tz(a, b)
        return a, b
    if {fa, fb} == {"timestamp", "date"}:
        if fa == "date":
            a = dt.datetime.combine(a, dt.time())
        else:
            b = dt.datetime.combine(b, dt.time())
        return _align_tz(a, b)
    if {fa, fb} == {"uuid", "string"}:
        try:
            return (uuid.UUID(a) if fa == "string" else a), (uuid.UUID(b) if fb == "string" else b)
        except ValueError:
            raise _TypeMismatch(f"'{a if fa == 'string' else b}' is not a UUID") from None
    raise _TypeMismatch(f"cannot compare {fa} with {fb}")


_CMP_OPS: Dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _compare(op: str, a: Any, b: Any) -> Optional[bool]:
    if a is None or b is None:
        return None
    a, b = _coerce(a, b)
    try:
        return _CMP_OPS[op](a, b)
    except TypeError:
        raise _TypeMismatch(f"cannot order {_family(a)} values with {op}") from None


def _bind(node: tuple, resolve: Callable[[str], str]) -> Callable[[Mapping[str, Any]], Any]:
    """Turn a parsed node into a function of one row; resolve maps a column name to the row key."""
    kind = node[0]
    if kind == "col":
        key = resolve(node[1])
        return lambda row: row[key]
    if kind == "lit":
        value = node[1]
        return lambda row: value
    if kind == "cmp":
        op, left, right = node[1], _bind(node[2], resolve), _bind(node[3], resolve)
        return lambda row: _compare(op, left(row), right(row))
    if kind == "and":
        left, right = _as_condition(node[1], resolve), _as_condition(node[2], resolve)

        def and_(row):
            a = left(row)
            if a is False:
                return False
            b = right(row)
            if b is False:
                return False
            return None if a is None or b is None else True

        return and_
    if kind == "or":
        left, right = _as_condition(node[1], resolve), _as_condition(node[2], resolve)

        def or_(row):
            a = left(row)
            if a is True:
                return True
            b = right(row)
            if b is True:
                return True
            return None if a is None or b is None else False

        return or_
    if kind == "not":
        inner = _as_condition(node[1], resolve)

        def not_(row):
            v = inner(row)
            return None if v is None else not v

        return not_
    if kind == "isnull":
        operand, negated = _bind(node[1], resolve), node[2]
        return lambda row: (operand(row) is None) != negated
    if kind == "in":
        operand = _bind(node[1], resolve)
        items = [_bind(item, resolve) for item in node[2]]
        negated = node[3]

        def in_(row):
            v = operand(row)
            if v is None:
                return None
            unknown = False
            for item in items:
                r = _compare("=", v, item(row))
                if r is True:
                    return not negated
                if r is None:
                    unknown = True
            return None if unknown else negated

        return in_
    if kind == "between":
        operand, low, high, negated = (
            _bind(node[1], resolve),
            _bind(node[2], resolve),
            _bind(node[3], resolve),
            node[4],
        )

        def between(row):
            v = operand(row)
            lo = _compare(">=", v, low(row))
            hi = _compare("<=", v, high(row))
            if lo is False or hi is False:
                r: Optional[bool] = False
            elif lo is None or hi is None:
                r = None
            else:
                r = True
            return r if r is None or not negated else not r

        return between
    if kind == "like":
        operand, regex, negated = _bind(node[1], resolve), node[2], node[4]

        def like(row):
            v = operand(row)
            if v is None:
                return None
            if not isinstance(v, str):
                raise _TypeMismatch(f"LIKE needs a string, got {_family(v)}")
            return (regex.fullmatch(v) is not None) != negated

        return like
    raise AssertionError(f"unknown node {kind}")


def _as_condition(node: tuple, resolve: Callable[[str], str]) -> Callable[[Mapping[str, Any]], Any]:
    fn = _bind(node, resolve)
    if node[0] in _BOOLEAN_NODES or (node[0] == "lit"):
        return fn
    name = node[1]

    def column_condition(row):
        v = fn(row)
        if v is None or isinstance(v, bool):
            return v
        raise _TypeMismatch(f"column {name} is {_family(v)}, not boolean, so it is not a condition")

    return column_condition


class Predicate:
    """A parsed expectation predicate. Parsing fails with PredicateError."""

    def __init__(self, text: str):
        if not isinstance(text, str):
            raise PredicateError("a predicate must be a string")
        self.text = text
        self.tree = _Parser(text).parse()
        self.columns = frozenset(_columns_of(self.tree, set()))

    def bind(self, columns: Sequence[str]) -> Callable[[Mapping[str, Any]], Optional[bool]]:
        """Return row -> True/False/None for a table with these columns.

        A column the table lacks raises ExpectationError. Names match exactly,
        else case-insensitively when that is unambiguous (as in Spark SQL).
        """
        exact = set(columns)
        folded: Dict[str, List[str]] = {}
        for c in columns:
            folded.setdefault(c.lower(), []).append(c)

        def resolve(name: str) -> str:
            if name in exact:
                return name
            matches = folded.get(name.lower(), [])
            if len(matches) == 1:
                return matches[0]
            if matches:
                raise ExpectationError(f"column {name} is ambiguous: {', '.join(sorted(matches))}")
            raise ExpectationError(f"names column {name}, which the table does not have")

        return _as_condition(self.tree, resolve)

    def evaluate(self, row: Mapping[str, Any]) -> Optional[bool]:
        """Evaluate on one row (a dict); for tests and ad-hoc use."""
        try:
            return self.bind(list(row.keys()))(row)
        except _TypeMismatch as e:
            raise ExpectationError(str(e)) from None

    def __repr__(self) -> str:
        return f"Predicate({self.text!r})"


# ---------------------------------------------------------------------------
# Expectations file: {"<namespace>.<table>" | "<namespace>.*" | "*": {name: predicate}}


class ExpectationSet:
    """The expectations per table key, parsed once at start."""

    def __init__(self, doc: Any, source: str = "expectations"):
        if not isinstance(doc, dict) or not doc:
            raise ConfigError(f"{source}: must be a non-empty JSON object of table -> {{name: predicate}}")
        self.rules: Dict[str, Dict[str, Predicate]] = {}
        self.relations: List[Relation] = []
        for key, group in doc.items():
            if key == RELATIONS_KEY:
                if not isinstance(group, list) or not group:
                    raise ConfigError(f"{source}: {RELATIONS_KEY}: must be a non-empty array of relations")
                self.relations = [Relation(r, f"{source}: {RELATIONS_KEY}[{i}]") for i, r in enumerate(group)]
                continue
            if not isinstance(key, str) or not _valid_table_key(key):
                raise ConfigError(
                    f"{source}: {key!r} is not a table key ('namespace.table', 'namespace.*' or '*')"
                )
            if not isinstance(group, dict) or not group:
                raise ConfigError(f"{source}: {key}: must be a non-empty object of name -> predicate")
            parsed: Dict[str, Predicate] = {}
            for name, text in group.items():
                if not EXPECTATION_NAME_RE.match(name):
                    raise ConfigError(
                        f"{source}: {key}: expectation name {name!r} must match {EXPECTATION_NAME_RE.pattern}"
                    )
                try:
                    parsed[name] = Predicate(text)
                except PredicateError as e:
                    raise ConfigError(f"{source}: {key}: expectation {name}: {e}") from None
            self.rules[key] = parsed

    @classmethod
    def load(cls, path: str) -> "ExpectationSet":
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except OSError as e:
            raise ConfigError(f"cannot read expectations file {path}: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: not valid JSON: {e}") from None
        return cls(doc, source=path)

    def for_table(self, namespace: Sequence[str], name: str) -> Dict[str, Predicate]:
        """All expectations that apply, least specific first; a more specific key
        overrides an expectation of the same name ('*' < 'a.*' < 'a.b.*' < 'a.b.t')."""
        matches: List[Tuple[int, Dict[str, Predicate]]] = []
        for key, group in self.rules.items():
            if key == "*":
                matches.append((0, group))
            elif key.endswith(".*"):
                levels = key[:-2].split(".")
                if list(namespace[: len(levels)]) == levels:
                    matches.append((len(levels), group))
            elif key.split(".") == [*namespace, name]:
                matches.append((10_000, group))
        merged: Dict[str, Predicate] = {}
        for _, group in sorted(matches, key=lambda m: m[0]):
            merged.update(group)
        return merged


class Relation:
    """A reference across tables: every row of `table` whose `columns` are all
    non-NULL must match some row of `references` on `referenced-columns`
    (default the same names), as a foreign key would. Checked on releases,
    where both tables are members and both are read at their audited
    snapshots."""

    def __init__(self, doc: Any, where: str):
        if not isinstance(doc, dict):
            raise ConfigError(f"{where}: must be an object")
        unknown = set(doc) - {"name", "table", "columns", "references", "referenced-columns"}
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        self.name = doc.get("name")
        if not isinstance(self.name, str) or not EXPECTATION_NAME_RE.match(self.name):
            raise ConfigError(f"{where}: name must match {EXPECTATION_NAME_RE.pattern}")
        where = f"{where} ({self.name})"
        self.table = self._table(doc.get("table"), "table", where)
        self.references = self._table(doc.get("references"), "references", where)
        self.columns = self._columns(doc.get("columns"), "columns", where)
        self.referenced = self._columns(doc.get("referenced-columns", self.columns), "referenced-columns", where)
        if len(self.referenced) != len(self.columns):
            raise ConfigError(f"{where}: columns and referenced-columns must be as many")

    @staticmethod
    def _table(v: Any, field: str, where: str) -> Tuple[str, ...]:
        if not isinstance(v, str) or not _valid_table_key(v) or v.endswith("*"):
            raise ConfigError(f"{where}: {field} must name one table, 'namespace.table'")
        return tuple(v.split("."))

    @staticmethod
    def _columns(v: Any, field: str, where: str) -> List[str]:
        if not isinstance(v, list) or not v or not all(isinstance(c, str) and c for c in v):
            raise ConfigError(f"{where}: {field} must be a non-empty array of column names")
        return list(v)

    def describe(self) -> str:
        return (f"{'.'.join(self.table)}({', '.join(self.columns)}) references "
                f"{'.'.join(self.references)}({', '.join(self.referenced)})")


def _column_index(columns: Sequence[str], wanted: Sequence[str], table: str) -> List[str]:
    """The table's own spelling of each wanted column (matched case-insensitively)."""
    by_lower = {c.lower(): c for c in columns}
    out = []
    for w in wanted:
        c = w if w in columns else by_lower.get(w.lower())
        if c is None:
            raise ExpectationError(f"{table} has no column {w}")
        out.append(c)
    return out


def check_relation(rel: Relation, child: Rows, parent: Rows) -> Tuple[int, int]:
    """(child rows checked, child rows without a match in parent).

    The parent's keys are held in memory, so a relation suits staged
    batches and reference tables, not two tables of billions of rows.
    """
    child_cols, child_rows = child
    parent_cols, parent_rows = parent
    pk = _column_index(parent_cols, rel.referenced, ".".join(rel.references))
    ck = _column_index(child_cols, rel.columns, ".".join(rel.table))
    keys = set()
    for row in parent_rows:
        key = tuple(row[c] for c in pk)
        if all(v is not None for v in key):
            keys.add(key)
    checked = orphans = 0
    for row in child_rows:
        checked += 1
        key = tuple(row[c] for c in ck)
        if all(v is not None for v in key) and key not in keys:
            orphans += 1
    return checked, orphans


def _valid_table_key(key: str) -> bool:
    if key == "*":
        return True
    parts = key.split(".")
    if parts[-1] == "*":
        parts = parts[:-1]
        return len(parts) >= 1 and all(parts)
    return len(parts) >= 2 and all(parts)


# ---------------------------------------------------------------------------
# Reading the audited snapshot.

Rows = Tuple[Sequence[str], Iterable[Mapping[str, Any]]]
RowReader = Callable[[Mapping[str, Any]], Rows]


def _load_through_catalog(payload: Mapping[str, Any], catalog_uri: str, credential: Optional[str]):
    """The audited table as floe answers it to this auditor's principal.

    The load asks for vended credentials (X-Iceberg-Access-Delegation), so
    PyIceberg reads the data files with the storage credentials floe hands
    out for the table: read-only ones when the auditor's principal may only
    read it (floe --s3-vended-credentials=sts). The auditor holds none of
    its own, and a table in object storage that comes without credentials
    is refused rather than read with whatever the environment offers.
    """
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import ForbiddenError, NoSuchTableError

    props = {"header.X-Iceberg-Access-Delegation": "vended-credentials"}
    if credential:
        props["credential"] = credential
        props["oauth2-server-uri"] = catalog_uri.rstrip("/") + "/v1/oauth/tokens"
    namespace, name = payload["table"]["namespace"], payload["table"]["name"]
    try:
        # A catalog per delivery: a fresh token, and nothing kept between
        # audits that could go stale (audits are rare, loads cheap).
        catalog = RestCatalog("floe", uri=catalog_uri, **props)
        table = catalog.load_table((*namespace, name))
    except NoSuchTableError:
        raise ReadError("floe does not know the table (dropped since the audit began?)") from None
    except ForbiddenError as e:
        raise ReadError(f"floe refused the auditor's principal: {e}") from None
    want = payload.get("table-uuid")
    if want and str(table.metadata.table_uuid) != str(want):
        raise ReadError(f"the table is now another table (uuid {table.metadata.table_uuid}, not {want})")
    if table.location().startswith(("s3://", "s3a://", "s3n://")):
        io_props = getattr(table.io, "properties", {}) or {}
        if not io_props.get("s3.access-key-id") and io_props.get("s3.remote-signing-enabled") != "true":
            raise ReadError(
                "floe answered no storage credentials for the table "
                "(start floe with --s3-vended-credentials=sts or static)"
            )
    return table


def make_snapshot_reader(catalog_uri: Optional[str] = None, credential: Optional[str] = None) -> RowReader:
    """Return a reader: payload -> (column names, rows of exactly the audited snapshot).

    With catalog_uri the table is loaded from floe's REST catalog as the
    principal of credential (CLIENT_ID:SECRET) with vended storage
    credentials, which the rows are read with; the payload's table-uuid
    must still be the table's. Without it the table is opened from the
    payload's metadata-location (a StaticTable: no catalog round trip,
    and the file cannot change under us) with the storage access the
    auditor's own machine has. Rows stream batch by batch, so memory
    stays bounded.
    """

    def read(payload: Mapping[str, Any]) -> Rows:
        from pyiceberg.table import StaticTable

        snapshot_id = payload["snapshot-id"]
        location = payload.get("metadata-location")
        if catalog_uri:
            table = _load_through_catalog(payload, catalog_uri, credential)
        elif location:
            table = StaticTable.from_metadata(location)
        else:
            raise ReadError("the payload has no metadata-location and no --catalog-uri is set")
        if table.metadata.snapshot_by_id(snapshot_id) is None:
            raise ReadError(f"snapshot {snapshot_id} is not in the table metadata")
        reader = table.scan(snapshot_id=snapshot_id).to_arrow_batch_reader()

        def rows() -> Iterable[Mapping[str, Any]]:
            for batch in reader:
                yield from batch.to_pylist()

        return list(reader.schema.names), rows()

    return read


# ---------------------------------------------------------------------------
# The audit.


def _plural(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def evaluate(
    expectations: Mapping[str, Predicate], columns: Sequence[str], rows: Iterable[Mapping[str, Any]]
) -> Tuple[int, Dict[str, int]]:
    """Check every row against every expectation; return (rows checked, failures per name).

    A row passes an expectation only if the predicate is TRUE; FALSE and
    unknown (NULL) both count as a failure. Raises ExpectationError when an
    expectation names a column the table lacks or compares unlike types.
    """
    bound = []
    for name, pred in expectations.items():
        try:
            bound.append((name, pred.bind(columns)))
        except ExpectationError as e:
            raise ExpectationError(f"expectation {name} ({pred.text}) {e}") from None
    failures = {name: 0 for name in expectations}
    checked = 0
    for row in rows:
        checked += 1
        for name, check in bound:
            try:
                ok = check(row)
            except _TypeMismatch as e:
                raise ExpectationError(
                    f"expectation {name} ({expectations[name].text}): {e}"
                ) from None
            if ok is not True:
                failures[name] += 1
    return checked, failures


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """The X-Floe-Signature-256 value floe sends: HMAC-SHA256 over "<timestamp>.<body>"."""
    return "sha256=" + hmac.new(secret, timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()


class Auditor:
    """The webhook's logic, independent of the HTTP server (tests call handle directly)."""

    def __init__(
        self,
        expectations: ExpectationSet,
        secret: Optional[bytes] = None,
        read_rows: Optional[RowReader] = None,
        max_age: int = DEFAULT_MAX_AGE,
        clock: Callable[[], float] = time.time,
    ):
        self.expectations = expectations
        self.secret = secret
        self.read_rows = read_rows or make_snapshot_reader()
        self.max_age = max_age
        self.clock = clock

    def authenticate(self, headers: Mapping[str, str], body: bytes) -> Optional[str]:
        """None when the delivery is signed by floe and fresh, else why not.

        The signature covers the timestamp, so a captured delivery replayed
        after the window (either side of now, for clock skew) is refused.
        Inside the window a replay only gets the same verdict again: an
        audit reads and changes nothing.
        """
        if self.secret is None:
            return None
        provided = headers.get(SIGNATURE_HEADER.lower())
        stamp = headers.get(TIMESTAMP_HEADER.lower())
        if not provided or not stamp:
            return f"missing {SIGNATURE_HEADER} or {TIMESTAMP_HEADER}"
        stamp = stamp.strip()
        if not stamp.isascii() or not stamp.isdigit() or len(stamp) > 12:
            return f"{TIMESTAMP_HEADER} must be Unix seconds"
        provided = provided.strip()
        if provided[:7].lower() != "sha256=":
            return f"invalid {SIGNATURE_HEADER}"
        try:
            given = ("sha256=" + provided[7:].lower()).encode("ascii")
        except UnicodeEncodeError:
            return f"invalid {SIGNATURE_HEADER}"
        if not hmac.compare_digest(sign(self.secret, stamp, body).encode("ascii"), given):
            return f"invalid {SIGNATURE_HEADER}"
        if abs(self.clock() - int(stamp)) > self.max_age:
            return f"{TIMESTAMP_HEADER} is outside the {self.max_age} s window (a replay, or a skewed clock)"
        return None

    def handle(self, headers: Mapping[str, str], body: bytes) -> Tuple[int, Dict[str, Any]]:
        """Answer one delivery: (HTTP status, JSON body). Logs one line."""
        started = time.monotonic()
        hdrs = {k.lower(): v for k, v in headers.items()}
        info: Dict[str, Any] = {"delivery": hdrs.get("x-floe-delivery", "-")}
        status, doc = self._handle(hdrs, body, info)
        verdict = (
            ("pass" if doc.get("passed") else "reject")
            if status in (200, 422)
            else "error"
        )
        LOG.info(
            "audit run=%s delivery=%s table=%s snapshot=%s status=%d verdict=%s rows=%s ms=%d%s",
            info.get("run", "-"),
            info["delivery"],
            info.get("table", "-"),
            info.get("snapshot", "-"),
            status,
            verdict,
            doc.get("checked-rows", "-"),
            int((time.monotonic() - started) * 1000),
            f" reason={json.dumps(doc['reason'])}" if doc.get("reason") else "",
        )
        return status, doc

    def _handle(self, hdrs: Dict[str, str], body: bytes, info: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
        refused = self.authenticate(hdrs, body)
        if refused is not None:
            return 401, {"passed": False, "reason": refused}
        event = hdrs.get("x-floe-event")
        if event == RELEASE_EVENT:
            return self._handle_release(body, info)
        if event != EVENT:
            return 400, {"passed": False,
                         "reason": f"X-Floe-Event must be {EVENT} or {RELEASE_EVENT}, got {event or 'nothing'}"}
        try:
            payload = _parse_payload(body)
        except PayloadError as e:
            return 400, {"passed": False, "reason": str(e)}
        namespace, name = payload["table"]["namespace"], payload["table"]["name"]
        table = ".".join([*namespace, name])
        info.update(run=payload.get("run-id", "-"), table=table, snapshot=payload["snapshot-id"])

        expectations = self.expectations.for_table(namespace, name)
        if not expectations:
            return 422, {"passed": False, "reason": f"no expectations are configured for table {table}"}
        try:
            columns, rows = self.read_rows(payload)
            checked, failures = evaluate(expectations, columns, rows)
        except ExpectationError as e:
            return 422, {"passed": False, "reason": f"{table}: {e}"}
        except Exception as e:  # anything else is ours or the storage's fault: fail closed
            LOG.exception("reading snapshot %s of %s failed", payload["snapshot-id"], table)
            detail = str(e) if isinstance(e, ReadError) else f"{type(e).__name__}: {e}"
            if len(detail) > 300:
                detail = detail[:297] + "..."
            return 500, {
                "passed": False,
                "reason": f"cannot read snapshot {payload['snapshot-id']} of {table}: {detail}",
            }

        names = list(expectations)
        failed = {n: c for n, c in failures.items() if c}
        if not failed:
            return 200, {"passed": True, "checked-rows": checked, "expectations": names}
        return 200, {
            "passed": False,
            "reason": ", ".join(f"{n}: {_plural(c)}" for n, c in failed.items()),
            "failures": failed,
            "checked-rows": checked,
            "expectations": names,
        }


    def _handle_release(self, body: bytes, info: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
        """One verdict for a whole release: every member's expectations, and
        every relation between two members, each table read at exactly its
        audited snapshot."""
        try:
            payload = _parse_release_payload(body)
        except PayloadError as e:
            return 400, {"passed": False, "reason": str(e)}
        members = {(*m["table"]["namespace"], m["table"]["name"]): m for m in payload["tables"]}
        info.update(run=payload["release-id"], table=f"{len(members)} tables",
                    snapshot=",".join(str(m["snapshot-id"]) for m in members.values()))
        relations = [r for r in self.expectations.relations if r.table in members or r.references in members]
        problems: List[str] = []
        checked = 0
        current = "-"
        try:
            for key, m in members.items():
                current = ".".join(key)
                exps = self.expectations.for_table(list(key[:-1]), key[-1])
                related = any(key in (r.table, r.references) for r in relations)
                if not exps and not related:
                    problems.append(f"no expectations are configured for table {current}")
                    continue
                if not exps:
                    continue
                columns, rows = self.read_rows(m)
                n, failures = evaluate(exps, columns, rows)
                checked += n
                problems += [f"{current}: {name}: {_plural(c)}" for name, c in failures.items() if c]
            for rel in relations:
                current = ".".join(rel.table)
                missing = [".".join(t) for t in (rel.table, rel.references) if t not in members]
                if missing:
                    problems.append(f"relation {rel.name}: {', '.join(missing)} is not in the release")
                    continue
                n, orphans = check_relation(rel, self.read_rows(members[rel.table]),
                                            self.read_rows(members[rel.references]))
                checked += n
                if orphans:
                    problems.append(f"relation {rel.name}: {_plural(orphans)} of {'.'.join(rel.table)} "
                                    f"without a match in {'.'.join(rel.references)}")
        except ExpectationError as e:
            return 422, {"passed": False, "reason": f"{current}: {e}"}
        except Exception as e:  # ours or the storage's fault: fail closed
            LOG.exception("reading release %s failed at %s", payload["release-id"], current)
            detail = str(e) if isinstance(e, ReadError) else f"{type(e).__name__}: {e}"
            if len(detail) > 300:
                detail = detail[:297] + "..."
            return 500, {"passed": False, "reason": f"cannot read {current}: {detail}"}
        names = [r.name for r in relations]
        if not problems:
            return 200, {"passed": True, "checked-rows": checked, "relations": names}
        return 200, {"passed": False, "reason": "; ".join(problems), "problems": problems,
                     "checked-rows": checked, "relations": names}


def _parse_release_payload(body: bytes) -> Dict[str, Any]:
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise PayloadError("the body is not JSON") from None
    if not isinstance(payload, dict):
        raise PayloadError("the body is not a JSON object")
    if payload.get("event") != RELEASE_EVENT:
        raise PayloadError(f"event must be {RELEASE_EVENT}")
    if not isinstance(payload.get("release-id"), str):
        raise PayloadError("release-id must be a string")
    tables = payload.get("tables")
    if not isinstance(tables, list) or not tables:
        raise PayloadError("tables must be a non-empty array")
    for m in tables:
        if not isinstance(m, dict):
            raise PayloadError("each member of tables must be an object")
        _check_member(m)
    return payload


def _check_member(payload: Dict[str, Any]) -> None:
    table = payload.get("table")
    if (
        not isinstance(table, dict)
        or not isinstance(table.get("name"), str)
        or not isinstance(table.get("namespace"), list)
        or not table["namespace"]
        or not all(isinstance(level, str) for level in table["namespace"])
    ):
        raise PayloadError("table must be {\"namespace\": [...], \"name\": \"...\"}")
    sid = payload.get("snapshot-id")
    if not isinstance(sid, int) or isinstance(sid, bool):
        raise PayloadError("snapshot-id must be an integer")
    loc = payload.get("metadata-location")
    if loc is not None and not isinstance(loc, str):
        raise PayloadError("metadata-location must be a string")


def _parse_payload(body: bytes) -> Dict[str, Any]:
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise PayloadError("the body is not JSON") from None
    if not isinstance(payload, dict):
        raise PayloadError("the body is not a JSON object")
    if payload.get("event") != EVENT:
        raise PayloadError(f"event must be {EVENT}")
    _check_member(payload)
    return payload


# ---------------------------------------------------------------------------
# HTTP.


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "floe-auditor/1"
    server: "AuditServer"

    def _send(self, status: int, doc: Dict[str, Any], close: bool = False) -> None:
        data = json.dumps(doc).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        if path not in AUDIT_PATHS:
            self._send(404, {"error": f"no such path {path}; POST / or /audit"}, close=True)
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            self._send(411, {"passed": False, "reason": "Content-Length is required"}, close=True)
            return
        if int(length) > MAX_BODY_BYTES:
            self._send(413, {"passed": False, "reason": "body too large"}, close=True)
            return
        body = self.rfile.read(int(length))
        status, doc = self.server.auditor.handle(dict(self.headers.items()), body)
        self._send(status, doc)

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] == "/healthz":
            self._send(200, {"status": "ok", "tables": sorted(self.server.auditor.expectations.rules)})
        else:
            self._send(404, {"error": "not found"})

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # one line per audit is logged by Auditor.handle


class AuditServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: Tuple[str, int], auditor: Auditor):
        self.auditor = auditor
        super().__init__(address, _Handler)


def parse_listen(text: str) -> Tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"listen address {text!r} must be HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


# ---------------------------------------------------------------------------
# Command line.

_EPILOG = f"""\
environment variables (a flag wins over its variable):
  AUDITOR_LISTEN        --listen (default {DEFAULT_LISTEN})
  AUDITOR_EXPECTATIONS  --expectations
  AUDITOR_CATALOG_URI   --catalog-uri
  AUDITOR_CATALOG_CREDENTIAL
                        CLIENT_ID:SECRET of the floe client the auditor loads
                        tables as, with --catalog-uri (give it only read grants)
  AUDITOR_MAX_AGE       --max-age (default {DEFAULT_MAX_AGE})
  {DEFAULT_SECRET_ENV}     the shared secret of the floe audit hook (the variable
                        name can be changed with --secret-env). When set, every
                        request must carry X-Floe-Timestamp (Unix seconds, within
                        --max-age of now) and X-Floe-Signature-256: sha256=<hex
                        HMAC-SHA256(secret, "<timestamp>.<raw body>")>; otherwise 401.

verdicts: 200 {{"passed": true}} passes; 200 {{"passed": false, "reason"}} and 422
reject the publish; 400/401/500 are errors, which floe treats as fail-closed.
"""


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="auditor.py",
        description="Audit webhook for floe's write-audit-publish: checks every row of the "
        "staged snapshot against named SQL-style expectations.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--listen", default=os.environ.get("AUDITOR_LISTEN", DEFAULT_LISTEN),
                   help="HOST:PORT to listen on (env AUDITOR_LISTEN)")
    p.add_argument("--expectations", default=os.environ.get("AUDITOR_EXPECTATIONS"),
                   help="JSON file: table -> {name: predicate} (env AUDITOR_EXPECTATIONS)")
    p.add_argument("--secret-env", default=None,
                   help=f"name of the environment variable holding the hook secret "
                        f"(default {DEFAULT_SECRET_ENV}; when given explicitly it must be set)")
    p.add_argument("--max-age", type=int, default=None,
                   help=f"seconds a signed delivery stays acceptable, either side of now "
                        f"(default {DEFAULT_MAX_AGE}; env AUDITOR_MAX_AGE)")
    p.add_argument("--catalog-uri", default=os.environ.get("AUDITOR_CATALOG_URI"),
                   help="floe REST catalog URI: load each audited table from floe and read its "
                        "files with the storage credentials floe vends "
                        "(env AUDITOR_CATALOG_URI; unset: open the payload's metadata-location "
                        "with this machine's own storage access)")
    p.add_argument("--check", action="store_true",
                   help="parse the expectations file, print what applies to which table, and exit")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_arg_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s floe-auditor %(levelname)s %(message)s",
    )
    try:
        if not args.expectations:
            raise ConfigError("no expectations file: pass --expectations or set AUDITOR_EXPECTATIONS")
        expectations = ExpectationSet.load(args.expectations)
        secret_env = args.secret_env or DEFAULT_SECRET_ENV
        secret_text = os.environ.get(secret_env)
        if args.secret_env and not secret_text:
            raise ConfigError(f"--secret-env {args.secret_env}: that variable is not set")
        host, port = parse_listen(args.listen)
        max_age = args.max_age
        if max_age is None:
            text = os.environ.get("AUDITOR_MAX_AGE", "").strip()
            if text and not text.isdigit():
                raise ConfigError(f"AUDITOR_MAX_AGE {text!r} must be a number of seconds")
            max_age = int(text) if text else DEFAULT_MAX_AGE
        if max_age < 1:
            raise ConfigError("--max-age must be at least 1 second")
    except ConfigError as e:
        LOG.error("%s", e)
        return 2

    if args.check:
        for key, group in expectations.rules.items():
            for name, pred in group.items():
                print(f"{key}\t{name}\t{pred.text}")
        for rel in expectations.relations:
            print(f"{RELATIONS_KEY}\t{rel.name}\t{rel.describe()}")
        return 0

    try:
        # Imported now, not at the first delivery: loading pyarrow takes
        # seconds, which the first audit's hook timeout should not pay.
        import pyiceberg.catalog.rest  # noqa: F401
        import pyiceberg.table  # noqa: F401
    except ImportError as e:
        LOG.error("cannot import PyIceberg (pip install 'pyiceberg[pyarrow]'): %s", e)
        return 2
    secret = secret_text.encode("utf-8") if secret_text else None
    if secret is None:
        LOG.warning("%s is not set: request signatures are NOT checked", secret_env)
    reader = make_snapshot_reader(args.catalog_uri, os.environ.get("AUDITOR_CATALOG_CREDENTIAL"))
    auditor = Auditor(expectations, secret=secret, read_rows=reader, max_age=max_age)
    if args.catalog_uri:
        LOG.info("tables are loaded from %s and read with the storage credentials it vends",
                 args.catalog_uri)
    try:
        server = AuditServer((host, port), auditor)
    except OSError as e:
        LOG.error("cannot listen on %s: %s", args.listen, e.strerror)
        return 1

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    bound_host, bound_port = server.server_address[:2]
    LOG.info(
        "listening on http://%s:%d/ with %d expectation group(s) from %s",
        bound_host, bound_port, len(expectations.rules), args.expectations,
    )
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()
    LOG.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
