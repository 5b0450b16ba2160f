-- 0009: who acted, recorded with what they did.
--
-- commit_log and audit_events already name the principal; they gain the
-- client id of the token it acted with (NULL: none, or no authentication).
-- commit_log.refs names the refs a commit set: created or moved to another
-- snapshot (a ref removed is not named), so the commits to one branch can
-- be told apart; rows from before this migration have NULL.
--
-- A write-audit-publish run records who staged it, who published it and
-- who abandoned it, each with a client id. staged_after is the commit_log
-- id after which a commit to the run's branch counts as writing to the run
-- (its written-by): the staging commit's for a run that made its branch,
-- 0 for one that adopted a branch, whose earlier commits are its content.
ALTER TABLE commit_log ADD COLUMN client_id text;
ALTER TABLE commit_log ADD COLUMN refs text[];
CREATE INDEX commit_log_uuid_id_idx ON commit_log (table_uuid, id);

ALTER TABLE audit_events ADD COLUMN client_id text;

ALTER TABLE wap_runs ADD COLUMN staged_by text NOT NULL DEFAULT 'anonymous';
ALTER TABLE wap_runs ADD COLUMN staged_client_id text;
ALTER TABLE wap_runs ADD COLUMN staged_after bigint NOT NULL DEFAULT 0;
ALTER TABLE wap_runs ADD COLUMN published_by text;
ALTER TABLE wap_runs ADD COLUMN published_client_id text;
ALTER TABLE wap_runs ADD COLUMN abandoned_by text;
ALTER TABLE wap_runs ADD COLUMN abandoned_client_id text;
