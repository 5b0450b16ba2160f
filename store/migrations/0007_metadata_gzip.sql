-- 0007: the current metadata deflated once per commit, for gzip answers.
--
-- metadata_gz is the metadata text as raw deflate ended by a sync flush
-- (byte-aligned, no final block), with the CRC-32 and length of the text,
-- so a loadTable answer is one gzip member built around these bytes
-- without compressing anything then. refs_gz is the same for
-- refs_metadata (NULL when refs_metadata is). gz_version is the version
-- they were made for: a row swapped by a writer that does not keep them
-- (an older floe) has a newer version, and is answered uncompressed until
-- the next commit. Rows from before this migration have none.

ALTER TABLE tables ADD COLUMN metadata_gz bytea;
ALTER TABLE tables ADD COLUMN metadata_gz_crc bigint;
ALTER TABLE tables ADD COLUMN metadata_gz_size bigint;
ALTER TABLE tables ADD COLUMN refs_gz bytea;
ALTER TABLE tables ADD COLUMN refs_gz_crc bigint;
ALTER TABLE tables ADD COLUMN refs_gz_size bigint;
ALTER TABLE tables ADD COLUMN gz_version bigint;
-- Deflated already: kept out of line without a second compression.
ALTER TABLE tables ALTER COLUMN metadata_gz SET STORAGE EXTERNAL;
ALTER TABLE tables ALTER COLUMN refs_gz SET STORAGE EXTERNAL;
