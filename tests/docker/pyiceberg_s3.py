"""PyIceberg client for the docker test of the s3:// deployment
(docker/docker-compose.s3.yml), run inside the compose network in the
pyiceberg service: the catalog floe comes from the service's
PYICEBERG_CATALOG__FLOE__* variables (URI and credential only); its S3
settings and credentials from floe's answers (vended credentials).

    python pyiceberg_s3.py NAMESPACE.TABLE

Creates the namespace and the table, appends two batches, reads the table
back through a fresh catalog and prints one JSON object on stdout: the
table's location, its metadata location, the ids read, the names (never
the values) of the S3 settings its FileIO got, and what storage
credentials the process could have found on its own (AWS_* or PyIceberg
S3 variables, an ~/.aws directory).
"""

from __future__ import annotations

import json
import os
import sys

import pyarrow as pa
from pyiceberg.catalog import load_catalog

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("city", pa.string())])


def main(argv: list[str]) -> int:
    if len(argv) != 1 or "." not in argv[0]:
        print(__doc__, file=sys.stderr)
        return 2
    ident = argv[0]
    ns = ident.rsplit(".", 1)[0]
    cat = load_catalog("floe")
    cat.create_namespace_if_not_exists(ns)
    table = cat.create_table(ident, schema=SCHEMA)
    table.append(pa.table({"id": [1, 2, 3], "city": ["Oslo", "Lima", "Pune"]}, schema=SCHEMA))
    table.append(pa.table({"id": [4], "city": ["Kyiv"]}, schema=SCHEMA))
    again = load_catalog("floe").load_table(ident)
    rows = sorted(again.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    own = sorted(k for k in os.environ
                 if k.upper().startswith("AWS") or "__S3__" in k.upper() or "__S3." in k.upper())
    io_keys = sorted(k for k in again.io.properties if k.startswith(("s3.", "client.")))
    print(json.dumps({"location": again.location(), "metadata-location": again.metadata_location,
                      "ids": [r["id"] for r in rows], "cities": [r["city"] for r in rows],
                      "io-keys": io_keys, "own-variables": own,
                      "aws-dir": os.path.exists(os.path.expanduser("~/.aws"))}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
