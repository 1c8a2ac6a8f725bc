-- 0002_commits: idempotency records, the commit audit trail, per-table
-- statistics for /metrics, background jobs and scan/commit metrics reports.

-- One row per Idempotency-Key.  It is inserted in the same transaction as
-- the mutation it records, so a replay can never observe a mutation without
-- its record or the other way round; status is NULL only inside that
-- transaction, which is why no reader ever sees it NULL.
CREATE TABLE idempotency_record (
    key           uuid PRIMARY KEY,
    method        text NOT NULL,
    route         text NOT NULL,
    fingerprint   bytea NOT NULL,
    status        integer,
    content_type  text,
    etag          text,
    body          bytea,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL
);
CREATE INDEX idempotency_record_expiry ON idempotency_record (expires_at);

CREATE TABLE commit_event (
    id                 bigserial PRIMARY KEY,
    table_id           uuid NOT NULL,
    warehouse_id       uuid NOT NULL,
    namespace          text[] COLLATE "C" NOT NULL,
    table_name         text COLLATE "C" NOT NULL,
    version            bigint NOT NULL,
    metadata_location  text NOT NULL,
    snapshot_id        bigint,
    operation          text,
    request_id         text,
    created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX commit_event_by_table ON commit_event (table_id, id);

ALTER TABLE table_entry
    ADD COLUMN last_commit_at    timestamptz,
    ADD COLUMN total_records     bigint,
    ADD COLUMN total_data_files  bigint,
    ADD COLUMN total_files_size  bigint;

-- Work for the background scheduler; taken with FOR UPDATE SKIP LOCKED so
-- any number of replicas share it and one job has one worker.
CREATE TABLE maintenance_job (
    id           bigserial PRIMARY KEY,
    kind         text NOT NULL CHECK (kind IN ('purge')),
    warehouse_id uuid NOT NULL,
    location     text NOT NULL,
    state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'failed', 'cancelled')),
    attempts     integer NOT NULL DEFAULT 0,
    last_error   text,
    run_after    timestamptz NOT NULL DEFAULT now(),
    created_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz
);
CREATE INDEX maintenance_job_pending ON maintenance_job (run_after) WHERE state = 'pending';

CREATE TABLE metrics_report (
    id           bigserial PRIMARY KEY,
    table_id     uuid NOT NULL,
    report       jsonb NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX metrics_report_by_table ON metrics_report (table_id, id);
