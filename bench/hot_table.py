"""Reads a hot table's loadTable answer on stdin and prints each wrk
thread's property: the last counter value that thread committed, which
must equal its count of 200 answers (no acknowledged commit lost)."""

import json
import sys

m = json.load(sys.stdin)["metadata"]
props = {k: v for k, v in m["properties"].items() if k.startswith("w")}
print("   hot table: %d writers seen, last values %s" % (len(props), sorted(props.items())))
