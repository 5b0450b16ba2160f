"""Gives a floe table N snapshots (fake manifest lists), BATCH per commit,
with main at the last one. Used by bench/run.sh."""
import json
import sys
import urllib.request

url, total, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
base_ts = 1767225600000
for start in range(1, total + 1, batch):
    updates = []
    for i in range(start, min(start + batch, total + 1)):
        snap = {"snapshot-id": i, "sequence-number": i, "timestamp-ms": base_ts + i,
                "manifest-list": f"file:///bench/snap-{i}.avro",
                "summary": {"operation": "append", "added-records": "1"}}
        if i > 1:
            snap["parent-snapshot-id"] = i - 1
        updates.append({"action": "add-snapshot", "snapshot": snap})
    last = min(start + batch - 1, total)
    updates.append({"action": "set-snapshot-ref", "ref-name": "main",
                    "type": "branch", "snapshot-id": last})
    body = json.dumps({"requirements": [], "updates": updates}).encode()
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        meta = json.load(r)["metadata"]
print(f"   big table: {len(meta['snapshots'])} snapshots, main at {meta['current-snapshot-id']}")
