-- 0002: idempotency keys and metrics reports.
--
-- An idempotency key is claimed (status 0) before its request runs and
-- holds the final answer afterwards, so a retry gets the first answer.

CREATE TABLE idempotency_keys (
    key         text PRIMARY KEY,
    route       text NOT NULL,
    status      integer NOT NULL DEFAULT 0,
    response    text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

CREATE TABLE metrics_reports (
    id           bigserial PRIMARY KEY,
    namespace    text[] NOT NULL,
    table_name   text NOT NULL,
    report       jsonb NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now()
);
