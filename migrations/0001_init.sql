-- 0001_init: warehouses, namespaces, table/view entries, and the server secret.
--
-- Names are compared byte-wise (COLLATE "C") so that ordering and uniqueness do
-- not depend on the database's locale: a namespace called "a" and one called
-- "A" are different, and pagination order is stable across servers.

CREATE TABLE server_secret (
    id          smallint PRIMARY KEY CHECK (id = 1),
    secret      bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE warehouse (
    id               uuid PRIMARY KEY,
    name             text COLLATE "C" NOT NULL UNIQUE,
    storage_profile  jsonb NOT NULL,
    properties       jsonb NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE namespace (
    id            bigserial PRIMARY KEY,
    warehouse_id  uuid NOT NULL REFERENCES warehouse(id) ON DELETE RESTRICT,
    levels        text[] COLLATE "C" NOT NULL CHECK (cardinality(levels) >= 1),
    properties    jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (warehouse_id, levels)
);
-- Children of a parent are listed by (warehouse, depth, levels).
CREATE INDEX namespace_by_depth ON namespace (warehouse_id, cardinality(levels), levels);

CREATE TABLE table_entry (
    id                 uuid PRIMARY KEY,
    warehouse_id       uuid NOT NULL REFERENCES warehouse(id) ON DELETE RESTRICT,
    namespace_id       bigint NOT NULL REFERENCES namespace(id) ON DELETE RESTRICT,
    name               text COLLATE "C" NOT NULL,
    kind               text NOT NULL CHECK (kind IN ('TABLE', 'VIEW')),
    metadata_location  text,
    metadata           text,      -- the current metadata JSON, byte for byte as written
    version            bigint NOT NULL DEFAULT 0,
    location           text COLLATE "C" NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
-- A table or view name is unique in its namespace; the commit path's row
-- lock and loadTable probe it.
CREATE UNIQUE INDEX table_entry_name ON table_entry (namespace_id, name);
-- Location overlap checks are equality and range probes on this index.
CREATE INDEX table_entry_location ON table_entry (warehouse_id, location);
