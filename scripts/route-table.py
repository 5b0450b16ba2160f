#!/usr/bin/env python3
"""Writes what floe's route table says into the documents that show it.

    scripts/route-table.py [--check] [FLOE_BINARY]

The route table (server/routes.c) is the one place that says what each
route demands; `floe --print-routes=json` prints it. This script puts it
into:

  - api-spec/openapi.yaml: an `x-floe-authorization` object on every
    operation (who may call it, its privileges, their object, what the
    body adds);
  - docs/auth.md: the table of routes between the markers
    `<!-- route-table: begin -->` and `<!-- route-table: end -->`.

With --check nothing is written: the exit status is 1, and the routes
that differ are printed, when either document is out of date or a route
that changes the catalog does not record its Idempotency-Key answer in
the change's own transaction (the flag idempotent-in-transaction).
tests/integration/test_openapi.py runs the check.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "api-spec" / "openapi.yaml"
AUTH_DOC = REPO / "docs" / "auth.md"
BEGIN = "<!-- route-table: begin -->"
END = "<!-- route-table: end -->"
METHODS = ("get", "put", "post", "delete", "head", "patch")


def load_table(binary):
    out = subprocess.run([str(binary), "--print-routes=json"], capture_output=True,
                         text=True, check=True, timeout=30).stdout
    return {(r["method"], r["path"]): r for r in json.loads(out)}


def authorization_lines(route, indent):
    """The x-floe-authorization block of one operation."""
    pad = " " * indent
    lines = [f"{pad}x-floe-authorization:", f"{pad}  access: {route['access']}"]
    if route["access"] == "privileged":
        lines.append(f"{pad}  privileges: [{', '.join(route['privileges'])}]")
        lines.append(f"{pad}  object: {route['object']}")
        if "any-of" in route["flags"]:
            lines.append(f"{pad}  any-of: true")
        if route["demands"] is not None:
            lines.append(f"{pad}  demands: {json.dumps(route['demands'])}")
    return lines


def rewrite_spec(text, table):
    """The document with every operation's block made from table; also
    the set of operations that had none to match."""
    out = []
    path = method = None
    unmatched = set()
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^  (/\S*):\s*$", line)
        if m:
            path = m.group(1)
        m = re.match(r"^    (\w+):\s*$", line)
        if m and m.group(1) in METHODS:
            method = m.group(1).upper()
        out.append(line)
        i += 1
        if path is not None and re.match(r"^      operationId: ", line):
            # Drop the old block, if any (its key, then the lines indented
            # below it), then write the new one.
            if i < len(lines) and lines[i].startswith("      x-floe-authorization:"):
                i += 1
                while i < len(lines) and lines[i].startswith("        "):
                    i += 1
            route = table.get((method, path))
            if route is None:
                unmatched.add((method, path))
                continue
            out.extend(authorization_lines(route, 6))
    return "\n".join(out), unmatched


def privileges_cell(route):
    if route["access"] == "public":
        return "none: public"
    if route["access"] == "public-if-configured":
        return "none: public unless `--auth-public-routes` leaves it out"
    if route["access"] == "any-principal":
        return "none: any authenticated principal"
    joiner = " or " if "any-of" in route["flags"] else " and "
    names = joiner.join(f"`{p}`" for p in route["privileges"])
    cell = names if names else ""
    if route["demands"] is not None:
        cell = (cell + "; " if cell else "") + route["demands"]
    return cell


ON_WORDS = {
    "-": "",
    "catalog": "the catalog",
    "namespace": "the namespace",
    "table": "the table (or view) the path names",
    "listing": "the namespace listed, as a listing",
    "filter": "what the filter names, else the catalog",
    "body": "what the body names",
    "hook-scope": "the hook's scope",
    "release-members": "every member table",
}


def auth_doc_table(table):
    rows = ["| route | privileges | on |", "|---|---|---|"]
    for (method, path), r in table.items():
        rows.append(f"| `{method} {path}` | {privileges_cell(r)} | {ON_WORDS[r['object']]} |")
    return "\n".join(rows)


def rewrite_auth_doc(text, table):
    start = text.index(BEGIN) + len(BEGIN)
    end = text.index(END)
    return text[:start] + "\n" + auth_doc_table(table) + "\n" + text[end:]


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    binary = Path(args[0]) if args else REPO / "build" / "server" / "floe"
    table = load_table(binary)
    spec_old = SPEC.read_text(encoding="utf-8")
    doc_old = AUTH_DOC.read_text(encoding="utf-8")
    spec_new, unmatched = rewrite_spec(spec_old, table)
    doc_new = rewrite_auth_doc(doc_old, table)
    problems = [f"{m} {p}: documented, not in the route table" for m, p in sorted(unmatched)]
    # The rule of every route that changes the catalog: its Idempotency-Key
    # answer is recorded in the change's own transaction.
    problems += [f"{m} {p}: mutating, but its Idempotency-Key answer is not recorded in "
                 "its change's transaction (idempotent-in-transaction)"
                 for (m, p), r in sorted(table.items())
                 if "mutating" in r["flags"] and "idempotent-in-transaction" not in r["flags"]]
    if check:
        if spec_new != spec_old:
            problems.append("api-spec/openapi.yaml: x-floe-authorization differs from the route table")
        if doc_new != doc_old:
            problems.append("docs/auth.md: the route table differs from floe's")
    else:
        SPEC.write_text(spec_new, encoding="utf-8")
        AUTH_DOC.write_text(doc_new, encoding="utf-8")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
