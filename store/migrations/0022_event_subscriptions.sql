-- 0022: event subscriptions, the change feed pushed to receivers.
--
-- A subscription reads the change feed (migration 0020) of its warehouse
-- from its position on, through its filter, and delivers one event at a
-- time to its URL; the position moves only once the receiver has
-- acknowledged the event, so delivery is at least once and in the feed's
-- order. A floe takes a subscription for a delivery by a lease (owner and
-- expiry), not a row lock, so no transaction stays open across an HTTP
-- call and the feed's late-commit horizon is never held back.
CREATE TABLE event_subscriptions (
    id               uuid PRIMARY KEY,
    warehouse        text COLLATE "C" NOT NULL DEFAULT '',
    name             text NOT NULL,
    url              text NOT NULL,
    secret           text NOT NULL,          -- sealed, as audit hook secrets are
    filter           jsonb NOT NULL DEFAULT '{}'::jsonb,
    timeout_ms       integer NOT NULL CHECK (timeout_ms BETWEEN 1 AND 60000),
    max_attempts     integer NOT NULL CHECK (max_attempts BETWEEN 1 AND 100),
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    created_by       text,
    -- Delivered up to here: the (xid, id) of the last event acknowledged,
    -- or where the subscription started.
    position_xid     xid8 NOT NULL,
    position_id      bigint NOT NULL,
    delivered        bigint NOT NULL DEFAULT 0,
    last_delivered_at timestamptz,
    state            text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'dead-letter')),
    attempts         integer NOT NULL DEFAULT 0,   -- failed, at the next event
    next_attempt_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_error_xid   xid8,
    last_error_event bigint,
    last_error_status integer,
    last_error_reason text,
    last_error_at    timestamptz,
    held_since       timestamptz,                  -- dead-letter: since when
    lease_owner      text,
    lease_until      timestamptz
);
CREATE INDEX event_subscriptions_due_idx ON event_subscriptions (next_attempt_at)
    WHERE state = 'active';
