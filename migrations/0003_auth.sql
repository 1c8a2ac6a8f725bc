-- 0003_auth: principals, roles, grants, and the acting principal of a commit.
--
-- A principal is a client (client id = name, secret stored only as a salted
-- PBKDF2 hash) or an external subject (an OIDC issuer's iss + sub).  Roles
-- hold grants; a principal holds roles.  A grant names its resource by
-- warehouse name ('*' = every warehouse, and the only scope that covers the
-- management API), an optional namespace (covering it and everything below
-- it) and an optional table in that namespace.

CREATE TABLE principal (
    id             bigserial PRIMARY KEY,
    name           text COLLATE "C" NOT NULL UNIQUE,
    kind           text NOT NULL CHECK (kind IN ('client', 'external')),
    secret_hash    text,
    issuer         text,
    subject        text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    rotated_at     timestamptz,
    CHECK ((kind = 'client' AND secret_hash IS NOT NULL AND subject IS NULL)
        OR (kind = 'external' AND secret_hash IS NULL AND issuer IS NOT NULL AND subject IS NOT NULL)),
    UNIQUE (issuer, subject)
);

CREATE TABLE role (
    id          bigserial PRIMARY KEY,
    name        text COLLATE "C" NOT NULL UNIQUE,
    builtin     boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE role_grant (
    id          bigserial PRIMARY KEY,
    role_id     bigint NOT NULL REFERENCES role(id) ON DELETE CASCADE,
    warehouse   text COLLATE "C" NOT NULL,
    namespace   text[] COLLATE "C",
    table_name  text COLLATE "C",
    privilege   text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (table_name IS NULL OR namespace IS NOT NULL),
    CHECK (warehouse <> '*' OR namespace IS NULL),
    UNIQUE NULLS NOT DISTINCT (role_id, warehouse, namespace, table_name, privilege)
);

CREATE TABLE principal_role (
    principal_id  bigint NOT NULL REFERENCES principal(id) ON DELETE CASCADE,
    role_id       bigint NOT NULL REFERENCES role(id) ON DELETE CASCADE,
    PRIMARY KEY (principal_id, role_id)
);
CREATE INDEX principal_role_by_role ON principal_role (role_id);

INSERT INTO role (name, builtin) VALUES ('admin', true), ('writer', true), ('reader', true);
INSERT INTO role_grant (role_id, warehouse, privilege)
    SELECT id, '*', CASE name WHEN 'admin' THEN 'all' WHEN 'writer' THEN 'write' ELSE 'read' END
    FROM role WHERE builtin;

-- Any change to access data notifies floe_auth (delivered at COMMIT), so every
-- replica drops its cached principals at once.
CREATE FUNCTION floe_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('floe_auth', '');
    RETURN NULL;
END $$;
CREATE TRIGGER principal_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON principal
    FOR EACH STATEMENT EXECUTE FUNCTION floe_auth_changed();
CREATE TRIGGER role_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON role
    FOR EACH STATEMENT EXECUTE FUNCTION floe_auth_changed();
CREATE TRIGGER role_grant_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON role_grant
    FOR EACH STATEMENT EXECUTE FUNCTION floe_auth_changed();
CREATE TRIGGER principal_role_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON principal_role
    FOR EACH STATEMENT EXECUTE FUNCTION floe_auth_changed();

-- NULL = Floe itself (feeds, maintenance) or a server running with auth none.
ALTER TABLE commit_event ADD COLUMN actor text;
