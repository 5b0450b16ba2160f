"""PyIceberg client for the docker test, run inside the compose network.

The docker test runs it in the compose file's pyiceberg service (PyIceberg
and PyArrow, floe at http://floe:8181, the warehouse volume mounted
read-write at the path floe writes it to):

    python pyiceberg_rows.py append NAMESPACE.TABLE BRANCH BATCH   # BATCH: first, good or bad
    python pyiceberg_rows.py read NAMESPACE.TABLE [REF]

Prints one JSON object on stdout: for append the branch's new head, for read
the rows (sorted by id) of the ref (main by default).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys

import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog

ARROW_SCHEMA = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("amount_eur", pa.float64()),
    pa.field("currency", pa.string()),
    pa.field("status", pa.string()),
    pa.field("order_ts", pa.timestamp("us")),
])

TS = dt.datetime(2026, 11, 30, 9, 30)

# Rows for sales.orders under the shipped examples/auditor/expectations.json.
BATCHES = {
    # main's first rows, written before floe.wap.required is set
    "first": [
        (1, 120.0, "EUR", "SHIPPED"),
        (2, 35.5, "CHF", "OPEN"),
    ],
    # every row passes every expectation
    "good": [
        (3, 250.0, "EUR", "OPEN"),
        (4, 0.0, "EUR", "CANCELLED"),
        (5, 17.25, "CHF", "SHIPPED"),
        (6, 64.0, "EUR", "OPEN"),
    ],
    # amount_positive fails once (-12.0) and known_currency once (USD)
    "bad": [
        (101, 80.0, "EUR", "OPEN"),
        (102, -12.0, "EUR", "OPEN"),
        (103, 44.0, "USD", "SHIPPED"),
    ],
}


def batch(name: str) -> pa.Table:
    rows = [{"id": i, "amount_eur": a, "currency": c, "status": s, "order_ts": TS}
            for i, a, c, s in BATCHES[name]]
    return pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)


def catalog() -> RestCatalog:
    props = {"uri": os.environ.get("PYICEBERG_CATALOG__FLOE__URI", "http://floe:8181")}
    if os.environ.get("PYICEBERG_CATALOG__FLOE__CREDENTIAL"):
        props["credential"] = os.environ["PYICEBERG_CATALOG__FLOE__CREDENTIAL"]
    return RestCatalog("floe", **props)


def main(argv: list[str]) -> int:
    if len(argv) >= 4 and argv[0] == "append":
        _, ident, branch, name = argv[:4]
        table = catalog().load_table(ident)
        table.append(batch(name), branch=branch)
        table = catalog().load_table(ident)
        print(json.dumps({"branch": branch, "snapshot-id": table.metadata.refs[branch].snapshot_id,
                          "rows": len(BATCHES[name])}))
        return 0
    if len(argv) >= 2 and argv[0] == "read":
        ident = argv[1]
        ref = argv[2] if len(argv) > 2 else "main"
        scan = catalog().load_table(ident).scan()
        if ref != "main":
            scan = scan.use_ref(ref)
        rows = sorted(scan.to_arrow().to_pylist(), key=lambda r: r["id"])
        print(json.dumps({"ref": ref, "ids": [r["id"] for r in rows], "rows": len(rows)}))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
