-- 0032: the timelines the change feed was written on.
--
-- A continuation token of the change feed is a position (xid, id). When
-- PostgreSQL fails over to a standby, the new primary starts a new
-- timeline from the last WAL the standby had: transactions an
-- asynchronous standby never received are gone, and the new primary
-- hands their transaction ids (and possibly event ids) out again. A
-- token from before the failover can then point past, or at, an event
-- that no longer exists, and reading on from it would skip the new
-- primary's events with lower transaction ids.
--
-- floe records each (system identifier, timeline) it writes on before
-- its first write there (store/feed.c, on every new connection), with a
-- transaction id below every transaction floe runs on that timeline.
-- Every event with a lower xid was written before the switch, so a token
-- of an earlier timeline is still good when its xid is below the next
-- timeline's first_xid and its event is still there; any other is from
-- a history this database does not have, and the feed says so.
CREATE TABLE feed_timelines (
    system_identifier text NOT NULL,
    timeline          integer NOT NULL,
    first_xid         xid8 NOT NULL,
    recorded_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (system_identifier, timeline)
);
