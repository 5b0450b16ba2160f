-- 0006: idempotency keys know who runs them and for how long.
--
-- A claimed key (status 0) names its owner, a random token of the request
-- that claimed it, and the lease until which that request is presumed to
-- be running. A retry while the lease lasts is told to come back; once it
-- has run out (the floe that claimed the key died), the key may be claimed
-- again. Table commits record their answer in the same transaction as the
-- commit, and only while they still own the key, so a status-0 key after
-- a crash means that commit did not happen.

ALTER TABLE idempotency_keys ADD COLUMN owner text;
ALTER TABLE idempotency_keys ADD COLUMN lease_until timestamptz;
