-- 0011: a notification on every change that can alter a decision of
-- authorization, so that each floe forgets the decisions and resolved
-- tokens it keeps (docs/auth.md "Decisions kept"): a change through the
-- management API of another replica, or by hand in SQL, takes effect
-- within milliseconds everywhere.
--
-- The channel is floe_authz; the payload is the name of the table that
-- changed. Tables and namespaces notify only when a row goes away or a
-- table changes its name or namespace (a grant follows the object by id,
-- while a kept decision is keyed by name); commits, which update tables
-- rows all the time, do not notify. Notifications of one transaction are
-- sent once, at its commit.
CREATE FUNCTION floe_authz_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('floe_authz', TG_TABLE_NAME);
    RETURN NULL;
END
$$;

CREATE TRIGGER grants_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON grants
    FOR EACH STATEMENT EXECUTE FUNCTION floe_authz_changed();
CREATE TRIGGER role_members_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON role_members
    FOR EACH STATEMENT EXECUTE FUNCTION floe_authz_changed();
CREATE TRIGGER roles_notify AFTER UPDATE OR DELETE OR TRUNCATE ON roles
    FOR EACH STATEMENT EXECUTE FUNCTION floe_authz_changed();
CREATE TRIGGER principals_notify AFTER UPDATE OR DELETE OR TRUNCATE ON principals
    FOR EACH STATEMENT EXECUTE FUNCTION floe_authz_changed();
CREATE TRIGGER tables_notify AFTER DELETE OR UPDATE OF name, namespace_id ON tables
    FOR EACH STATEMENT EXECUTE FUNCTION floe_authz_changed();
CREATE TRIGGER namespaces_notify AFTER DELETE OR UPDATE OF levels ON namespaces
    FOR EACH STATEMENT EXECUTE FUNCTION floe_authz_changed();
