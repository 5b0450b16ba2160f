-- 0008: principals, roles and grants (docs/auth.md).
--
-- A principal is a user or a service client, made by floe or on first
-- sight of an external issuer's token; roles hold grants and principals
-- hold roles. A grant names its object by id: on the catalog (no object),
-- a namespace, or a table. A rename keeps the row and so its grants; a
-- drop deletes the row and, by the cascades below, every grant on it, so
-- a new table of an old name starts with none.

CREATE TABLE principals (
    id           bigserial PRIMARY KEY,
    name         text COLLATE "C" NOT NULL UNIQUE,
    kind         text NOT NULL CHECK (kind IN ('user', 'client')),
    client_id    text COLLATE "C" UNIQUE,
    secret_hash  text,                -- scrypt$N$r$p$salt$hash; NULL: no secret
    source       text NOT NULL DEFAULT 'floe' CHECK (source IN ('floe', 'oidc')),
    disabled     boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE roles (
    id          bigserial PRIMARY KEY,
    name        text COLLATE "C" NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE role_members (
    role_id       bigint NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
    principal_id  bigint NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    PRIMARY KEY (role_id, principal_id)
);
CREATE INDEX role_members_principal_idx ON role_members (principal_id);

-- object_kind says which object the grant is on, and exactly that one of
-- namespace_id and table_id is set. A privilege is granted only where the
-- table of docs/auth.md allows it.
CREATE TABLE grants (
    id            bigserial PRIMARY KEY,
    role_id       bigint NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
    privilege     text NOT NULL CHECK (privilege IN (
                      'NAMESPACE_READ', 'NAMESPACE_CREATE', 'NAMESPACE_DROP',
                      'NAMESPACE_UPDATE_PROPERTIES', 'TABLE_READ', 'TABLE_CREATE',
                      'TABLE_DROP', 'TABLE_UPDATE_PROPERTIES', 'TABLE_WRITE',
                      'TABLE_WRITE_MAIN', 'WAP_STAGE', 'WAP_PUBLISH', 'HOOKS_MANAGE',
                      'CONTROLS_MANAGE', 'AUDIT_READ', 'ADMIN')),
    object_kind   text NOT NULL CHECK (object_kind IN ('catalog', 'namespace', 'table')),
    namespace_id  bigint REFERENCES namespaces (id) ON DELETE CASCADE,
    table_id      bigint REFERENCES tables (id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((object_kind = 'catalog' AND namespace_id IS NULL AND table_id IS NULL)
        OR (object_kind = 'namespace' AND namespace_id IS NOT NULL AND table_id IS NULL)
        OR (object_kind = 'table' AND table_id IS NOT NULL AND namespace_id IS NULL)),
    CHECK (privilege <> 'ADMIN' OR object_kind = 'catalog'),
    CHECK (object_kind <> 'table' OR privilege NOT IN ('NAMESPACE_READ',
        'NAMESPACE_CREATE', 'NAMESPACE_DROP', 'NAMESPACE_UPDATE_PROPERTIES', 'TABLE_CREATE'))
);
-- The same grant twice is one row (NULL ids compare equal here).
CREATE UNIQUE INDEX grants_unique_idx ON grants (role_id, privilege, object_kind,
    coalesce(namespace_id, 0), coalesce(table_id, 0));
CREATE INDEX grants_namespace_idx ON grants (namespace_id) WHERE namespace_id IS NOT NULL;
CREATE INDEX grants_table_idx ON grants (table_id) WHERE table_id IS NOT NULL;
