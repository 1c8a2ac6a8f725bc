-- 0004_feeds: feeds, the ledger of processed objects, batches, dead letters
-- and the push spool (DESIGN §5b).  Ledger rows are inserted in the
-- transaction of the commit that lands their objects.

CREATE TABLE feed (
    id bigserial PRIMARY KEY,
    name text COLLATE "C" NOT NULL UNIQUE,
    warehouse_id uuid NOT NULL REFERENCES warehouse(id) ON DELETE CASCADE,
    namespace text[] COLLATE "C" NOT NULL,
    table_name text COLLATE "C" NOT NULL,
    definition jsonb NOT NULL,
    state text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'paused')),
    -- when it is due next; runs failed in a row (for backoff)
    next_run_at timestamptz NOT NULL DEFAULT now(),
    failures integer NOT NULL DEFAULT 0,
    last_error text,
    replay jsonb, -- a pending replay request
    -- Counters for /metrics, added to in the transaction of each run, so
    -- they count exactly what landed whichever replica ran it.
    rows_committed bigint NOT NULL DEFAULT 0,
    bytes_read bigint NOT NULL DEFAULT 0,
    bytes_written bigint NOT NULL DEFAULT 0,
    batches_committed bigint NOT NULL DEFAULT 0,
    batch_seconds double precision NOT NULL DEFAULT 0,
    dead_letter_rows bigint NOT NULL DEFAULT 0,
    dead_letter_objects bigint NOT NULL DEFAULT 0,
    runs_failed bigint NOT NULL DEFAULT 0,
    backlog_objects bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX feed_due ON feed (next_run_at) WHERE state = 'active';

-- One row per run that did something, for `floe feed show` (the newest 100
-- per feed are kept).
CREATE TABLE feed_batch (
    id bigserial PRIMARY KEY,
    feed_id bigint NOT NULL REFERENCES feed(id) ON DELETE CASCADE,
    batch_id text NOT NULL,
    outcome text NOT NULL CHECK (outcome IN ('committed', 'nothing', 'failed')),
    objects integer NOT NULL DEFAULT 0,
    rows_ok bigint NOT NULL DEFAULT 0,
    rows_bad bigint NOT NULL DEFAULT 0,
    bytes_in bigint NOT NULL DEFAULT 0,
    bytes_out bigint NOT NULL DEFAULT 0,
    snapshot_id bigint,
    forced boolean NOT NULL DEFAULT false,
    error text,
    started_at timestamptz NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX feed_batch_by_feed ON feed_batch (feed_id, id);

-- The ledger: source objects (for a directory, etag = mtime in ns) and the
-- batch that processed them; a forced replay adds a row under a new batch.
CREATE TABLE feed_object (
    feed_id bigint NOT NULL REFERENCES feed(id) ON DELETE CASCADE,
    key text COLLATE "C" NOT NULL,
    size bigint NOT NULL,
    etag text COLLATE "C" NOT NULL,
    batch_id text NOT NULL,
    outcome text NOT NULL CHECK (outcome IN ('committed', 'dead-letter', 'empty')),
    rows_ok bigint NOT NULL DEFAULT 0,
    rows_bad bigint NOT NULL DEFAULT 0,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (feed_id, key, size, etag, batch_id)
);

-- Rows and whole objects set aside, with where their bytes went and why.
CREATE TABLE feed_dead_letter (
    id bigserial PRIMARY KEY,
    feed_id bigint NOT NULL REFERENCES feed(id) ON DELETE CASCADE,
    batch_id text NOT NULL,
    key text COLLATE "C" NOT NULL,
    whole_object boolean NOT NULL,
    rows_bad bigint NOT NULL DEFAULT 0,
    location text NOT NULL,
    reason text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX feed_dead_letter_by_feed ON feed_dead_letter (feed_id, id);

-- Pushed bodies, durable before the 202.  Landing one sets batch_id and
-- drops the body; the row stays until expires_at so a retried push with the
-- same Idempotency-Key is still recognised.
CREATE TABLE feed_spool (
    id bigserial PRIMARY KEY,
    feed_id bigint NOT NULL REFERENCES feed(id) ON DELETE CASCADE,
    idem_key text,
    content_type text NOT NULL,
    body text,
    bytes bigint NOT NULL,
    batch_id text,
    received_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    UNIQUE (feed_id, idem_key)
);
CREATE INDEX feed_spool_pending ON feed_spool (feed_id, id) WHERE batch_id IS NULL;
