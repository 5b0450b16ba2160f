"""The audit log read page by page while other clients keep writing to it:
every walk serves each event once, in the order of the transactions that
wrote them, and an event committed after a walk passed its place is never
skipped by a later walk. A page token names the database and timeline it
was issued on, as the change feed's does: one from a history the database
does not have (lost in a failover) is refused, never paged on from."""

from __future__ import annotations

import re
import threading
import time

from conftest import (TableHandle, assert_ok_json, database_identity, far_xid,
                      timeline_first_xid)

# "<xid>.<id>.<timeline>.<system identifier>"
TOKEN = re.compile(r"^([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)$")
AGAIN = "read the audit log again from a time (since) or the start"


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
            cursors = [tuple(map(int, t.split(".")[:2])) for t in dict.fromkeys(tokens) if t]
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


def logged(f, n: int) -> list:
    """n write-audit-publish runs staged: at least n events."""
    f.create_namespace(["pos"])
    t = TableHandle(f, ["pos"], "t")
    t.create()
    t.add_snapshot()
    for _ in range(n):
        t.stage()
    return [e["id"] for e in walk(f, 1000)[0]]


def page(f, token: str, size: int = 2) -> dict:
    return assert_ok_json(f.get("/v1/audit-log", params={"pageSize": size, "pageToken": token}))


def test_a_page_token_names_the_database_and_timeline_and_resumes_exactly(fresh_floe):
    f = fresh_floe
    everything = logged(f, 5)
    assert len(everything) >= 5, everything
    sysid, timeline = database_identity(f)
    served, token = [], ""
    while True:
        body = page(f, token)
        served += [e["id"] for e in body["events"]]
        if body["next-page-token"] is None:
            break
        # The position of the last event served, on this database's
        # timeline; asked again, the same page follows it.
        m = TOKEN.match(body["next-page-token"])
        assert m, body["next-page-token"]
        assert (int(m.group(2)), m.group(3), m.group(4)) == (served[-1], str(timeline), sysid), m.groups()
        token = body["next-page-token"]
        assert page(f, token) == page(f, token)
    assert served == everything, "a page skipped or repeated an event"


def test_a_page_token_of_the_older_form_still_pages_on(fresh_floe):
    """"<xid>-<id>", as floe issued it before: read as of this timeline,
    and the next token is the new form."""
    f = fresh_floe
    everything = logged(f, 4)
    first = page(f, "")
    xid, eid, timeline, sysid = first["next-page-token"].split(".")
    old = page(f, f"{xid}-{eid}")
    assert old == page(f, first["next-page-token"])
    assert [e["id"] for e in first["events"] + old["events"]] == everything[:4]
    assert TOKEN.match(old["next-page-token"]).groups()[2:] == (timeline, sysid)


def test_a_page_token_from_a_lost_history_is_refused(fresh_floe):
    """A token of a history this database does not have (a failover to an
    asynchronous standby that never received it, a restore) is 400 with
    the reason, whatever its form: never a page that skips the events the
    new primary wrote at the same transaction ids."""
    f = fresh_floe
    logged(f, 3)
    xid, eid, timeline, sysid = page(f, "")["next-page-token"].split(".")
    far = far_xid(f)
    beyond = ("pageToken is past the last event this database has (a history lost in a "
              "failover or a restore); " + AGAIN)
    cases = {
        # a later timeline: a future this database never reached
        f"{xid}.{eid}.{int(timeline) + 1}.{sysid}": beyond,
        # a transaction id this database has not handed out yet
        f"{far}.{eid}.{timeline}.{sysid}": beyond,
        f"{far}-{eid}": beyond,
        f"{far}.{eid}": beyond,
        # another database
        f"{xid}.{eid}.{timeline}.{int(sysid) + 1}":
            "pageToken was issued by another catalog database; " + AGAIN,
        # an earlier timeline's position past the switch to this one
        f"{xid}.{eid}.{int(timeline) - 1}.{sysid}":
            "pageToken points into a history this database no longer has (it failed over "
            f"to timeline {timeline} and the events after the switch were lost); " + AGAIN,
    }
    for token, message in cases.items():
        r = f.get("/v1/audit-log", params={"pageToken": token})
        assert (r.status_code, r.json()) == (400, {"error": {
            "message": message, "type": "BadRequestException", "code": 400}}), token
    for token in ("1.2.3", "1.2.3.4.5", "1.-2", "1-2.3.4", "-1-2", "1-2-3", "1.2.x.4", "1-",
                  # past what the columns hold: xid8, bigint, int
                  "18446744073709551616.1", "18446744073709551616-1", "1.9223372036854775808",
                  f"{xid}.{eid}.2147483648.{sysid}"):
        r = f.get("/v1/audit-log", params={"pageToken": token})
        assert (r.status_code, r.json()) == (400, {"error": {
            "message": "pageToken is not a token this server issued",
            "type": "BadRequestException", "code": 400}}), token


def test_a_page_token_from_before_the_switch_to_this_timeline_pages_on(fresh_floe):
    """A token of an earlier timeline is good when its position is in the
    history this timeline shares: below the first transaction floe ran on
    this one. A position before every event of a transaction (id 0) names
    no event, so its transaction alone places it; one at an event this
    database does not have, or at or past the switch, is refused."""
    f = fresh_floe
    everything = logged(f, 2)
    sysid, timeline = database_identity(f)
    first = timeline_first_xid(f)
    before = page(f, f"{first - 1}.0.{timeline - 1}.{sysid}", 1000)
    assert [e["id"] for e in before["events"]] == everything
    lost = ("pageToken points into a history this database no longer has (it failed over "
            f"to timeline {timeline} and the events after the switch were lost); " + AGAIN)
    for token in (f"{first}.0.{timeline - 1}.{sysid}", f"{first - 1}.1.{timeline - 1}.{sysid}"):
        r = f.get("/v1/audit-log", params={"pageToken": token})
        assert (r.status_code, r.json()) == (400, {"error": {
            "message": lost, "type": "BadRequestException", "code": 400}}), token
