-- 0007_maintenance_policy: each table's maintenance properties, kept by version.
--
-- Scheduling maintenance needs each table's floe.maintenance.* properties,
-- which live in its metadata JSON. Reading them from table_entry.metadata on
-- every pass detoasted, decompressed and searched every table's whole
-- metadata every maintenance-poll (30 s by default): ~50 us of PostgreSQL CPU
-- per 20 KB document, i.e. seconds per pass at 100,000 tables, and the pages
-- read that way pushed the working set out of shared buffers. A pass now
-- reads the metadata only of tables whose version differs from the one noted
-- here (table_entry.version grows with every change of the metadata, and a
-- new table has a new id), notes their properties, and schedules from this
-- table. No foreign key: one would add a check to every commit's UPDATE;
-- rows of dropped tables are deleted by the pass.
CREATE TABLE table_maintenance_policy (
    table_id  uuid PRIMARY KEY,
    version   bigint NOT NULL,
    props     jsonb            -- the floe.maintenance.* properties; NULL when none is set
);
