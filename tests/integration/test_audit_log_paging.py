"""The audit log read page by page while other clients keep writing to it:
every walk serves each event once, in the order of the transactions that
wrote them, and an event committed after a walk passed its place is never
skipped by a later walk."""

from __future__ import annotations

import threading
import time

from conftest import TableHandle, assert_ok_json


def walk(f, page_size: int) -> tuple[list, list]:
    """Every event, page by page; also the tokens that led to each page."""
    out, tokens, token = [], [], ""
    while True:
        body = assert_ok_json(f.get("/v1/audit-log",
                                    params={"pageSize": page_size, "pageToken": token}))
        assert len(body["events"]) <= page_size
        out.extend((token, e) for e in body["events"])
        token = body.get("next-page-token")
        if not token:
            return [e for _, e in out], [t for t, _ in out]
        tokens.append(token)


def test_walks_under_concurrent_writers_serve_each_event_once(fresh_floe):
    f = fresh_floe
    f.create_namespace(["paging"])
    tables = []
    for i in range(4):
        t = TableHandle(f, ["paging"], f"t{i}")
        t.create()
        t.add_snapshot()
        tables.append(t)

    stop = threading.Event()
    failures = []

    def writer(t):
        while not stop.is_set():
            try:
                run = t.stage()
                assert_ok_json(f.delete(t.run_url(run["id"])))
            except Exception as e:  # noqa: BLE001 - reported below
                failures.append(repr(e))
                return

    threads = [threading.Thread(target=writer, args=(t,)) for t in tables]
    for th in threads:
        th.start()
    try:
        seen_before: set = set()
        deadline = time.monotonic() + 60
        walks, widths = 0, set()
        # Until the walks have crossed from three-digit transaction ids to
        # four (a fresh database starts below 1000), which text order and
        # number order do not agree on.
        while walks < 5 or (len(widths) < 2 and time.monotonic() < deadline):
            events, tokens = walk(f, 7)
            walks += 1
            cursors = [tuple(map(int, t.split("-"))) for t in dict.fromkeys(tokens) if t]
            assert cursors == sorted(set(cursors)), f"walk {walks}: the cursor went back"
            widths |= {len(str(x)) for x, _ in cursors}
            ids = [e["id"] for e in events]
            dups = sorted({i for i in ids if ids.count(i) > 1})
            assert not dups, (f"walk {walks}: {len(ids)} served, {len(set(ids))} distinct; "
                              f"twice: {dups[:5]}; tokens before them: "
                              f"{[tokens[ids.index(d)] for d in dups[:5]]} and {[tokens[len(ids)-1-ids[::-1].index(d)] for d in dups[:5]]}")
            # Nothing a previous walk served is missing from a later one.
            missing = seen_before - set(ids)
            assert not missing, f"walk {walks}: {len(missing)} events vanished"
            seen_before = set(ids)
    finally:
        stop.set()
        for th in threads:
            th.join(30)
    assert not failures, failures[:3]
    assert len(widths) >= 2, f"the walks never crossed a digit of the transaction ids: {widths}"
