-- 0029: the no-overlap rule of locations by index, not by scan.
--
-- A location's key is its canonical form with one trailing '/', so a
-- location holds another exactly when its key is a prefix of the other's.
-- Indexed byte-wise ("C"), the locations inside a key K are the range
-- K <= key < K with its last '/' raised to '0', and those holding it are
-- the keys equal to one of K's prefixes at a '/': both are index lookups
-- (store/tables.c), so a create costs the same with 1,000 tables or
-- 100,000. Purges count too: a dropped table's files keep its location
-- taken until the janitor has removed them.
CREATE INDEX tables_location_key_idx ON tables ((rtrim(location, '/') || '/') COLLATE "C");
CREATE INDEX purges_location_key_idx ON purges ((rtrim(location, '/') || '/') COLLATE "C");
