-- 0026: a claimed idempotency key names the database session that claimed it.
--
-- owner_pid and owner_started are the process id and backend_start of the
-- PostgreSQL session of the floe that claimed the key. While that session
-- is in pg_stat_activity the claim is presumed live until its lease runs
-- out; once it is gone (its floe was killed, and PostgreSQL ended the
-- session), a retry takes the key over at once instead of waiting out the
-- lease. A backend_start is part of the identity because process ids are
-- reused.

ALTER TABLE idempotency_keys ADD COLUMN owner_pid integer;
ALTER TABLE idempotency_keys ADD COLUMN owner_started timestamptz;
