-- 0027: a purge is claimed by a lease, not by a row lock.
--
-- The janitor used to lock a purge's row (FOR UPDATE SKIP LOCKED) and
-- keep that transaction open while it removed the table's files or
-- objects: for the whole purge it held back the horizon the audit log,
-- the change feed and subscriptions read up to, and vacuum. Now a short
-- statement leases the row to one janitor (owner and expiry), the files go
-- with no transaction open, and the outcome is written under the lease in
-- a statement of its own. A lease is over once it expires, or at once when
-- the server process of the janitor's connection (lease_pid) is gone, as a
-- row lock ends with its session: a floe killed mid-purge leaves its purge
-- to the next janitor that looks.
ALTER TABLE purges ADD COLUMN lease_owner text;
ALTER TABLE purges ADD COLUMN lease_until timestamptz;
ALTER TABLE purges ADD COLUMN lease_pid integer;
