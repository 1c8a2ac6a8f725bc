-- 0005_maintenance: table maintenance run by the daemon (issue 10).
--
-- table_maintenance_job is the queue of table maintenance runs (the purge
-- jobs of 0002's maintenance_job are another queue, run by the scheduler
-- thread; a run here can take minutes and has its own workers): the caretaker of any replica claims the
-- oldest queued job with FOR UPDATE SKIP LOCKED and an advisory lock keyed
-- by the table, so one table has one caretaker at a time across replicas;
-- the row stays locked in the claiming transaction while the actions run,
-- and a replica that dies mid-run leaves the job queued for another.
-- Scheduled jobs are added by the caretakers for the tables whose policy
-- (floe.maintenance.* table properties, else the warehouse's properties)
-- is enabled and whose last scheduled job is older than the interval;
-- requested jobs come from POST .../maintenance.
CREATE TABLE table_maintenance_job (
    id bigserial PRIMARY KEY,
    warehouse_id uuid NOT NULL REFERENCES warehouse(id) ON DELETE CASCADE,
    namespace text[] COLLATE "C" NOT NULL,
    table_name text COLLATE "C" NOT NULL,
    origin text NOT NULL CHECK (origin IN ('schedule', 'request')),
    actions text[] NOT NULL,
    dry_run boolean NOT NULL DEFAULT false,
    requested_by text,
    state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'done', 'failed')),
    created_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    result jsonb
);
-- At most one queued job per table and origin: two replicas scheduling at
-- once, or a client posting twice, add one.
CREATE UNIQUE INDEX table_maintenance_job_queued
    ON table_maintenance_job (warehouse_id, namespace, table_name, origin) WHERE state = 'queued';
CREATE INDEX table_maintenance_job_by_table
    ON table_maintenance_job (warehouse_id, namespace, table_name, origin, created_at);

-- The last outcome of each action per table (whoever ran it: the daemon,
-- a request or `floe maintain`), and counters for /metrics.
CREATE TABLE maintenance_outcome (
    warehouse_id uuid NOT NULL REFERENCES warehouse(id) ON DELETE CASCADE,
    namespace text[] COLLATE "C" NOT NULL,
    table_name text COLLATE "C" NOT NULL,
    action text NOT NULL,
    job_id bigint,
    dry_run boolean NOT NULL,
    outcome text NOT NULL CHECK (outcome IN ('ok', 'failed')),
    files_removed bigint NOT NULL DEFAULT 0,
    bytes_removed bigint NOT NULL DEFAULT 0,
    files_added bigint NOT NULL DEFAULT 0,
    bytes_added bigint NOT NULL DEFAULT 0,
    error text,
    report jsonb,
    started_at timestamptz NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now(),
    runs bigint NOT NULL DEFAULT 1,
    failures bigint NOT NULL DEFAULT 0,
    -- bytes deleted from storage (expire and orphans, not dry runs)
    bytes_reclaimed_total bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (warehouse_id, namespace, table_name, action)
);

-- The shape of a table as the caretaker last measured it (after each run):
-- snapshots kept and live data files per partition, for /metrics.
CREATE TABLE maintenance_table_stats (
    warehouse_id uuid NOT NULL REFERENCES warehouse(id) ON DELETE CASCADE,
    namespace text[] COLLATE "C" NOT NULL,
    table_name text COLLATE "C" NOT NULL,
    snapshots bigint NOT NULL,
    data_files bigint NOT NULL,
    data_bytes bigint NOT NULL,
    partitions bigint NOT NULL,
    max_files_per_partition bigint NOT NULL,
    measured_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (warehouse_id, namespace, table_name)
);

-- An ISO-8601 duration (or any interval text) as an interval; dflt when it
-- does not parse, and never below one second.
CREATE FUNCTION floe_maintenance_interval(v text, dflt interval) RETURNS interval
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF v IS NULL THEN
        RETURN dflt;
    END IF;
    RETURN greatest(v::interval, interval '1 second');
EXCEPTION WHEN others THEN
    RETURN dflt;
END
$$;
