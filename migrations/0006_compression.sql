-- 0006_compression: the large values a commit writes are compressed with lz4.
--
-- Every table commit stores the new metadata JSON in table_entry.metadata and,
-- under an Idempotency-Key, the response that embeds it in
-- idempotency_record.body; both are TOASTed and, by default, compressed with
-- pglz. For a table of 1,000 snapshots (~0.4 MB of metadata) pglz costs
-- PostgreSQL ~9-11 ms of CPU per value against ~2-4 ms for lz4, at about the
-- same size (measured: pgbench inserting the same 0.4 MB JSON, one client).
-- New values use the column's method; stored ones keep theirs and stay
-- readable. A server built without lz4 (or older than PostgreSQL 14) keeps
-- pglz: the change is skipped with a notice, nothing else depends on it.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE table_entry ALTER COLUMN metadata SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE idempotency_record ALTER COLUMN body SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
    RAISE NOTICE 'lz4 column compression not available (%); values stay pglz-compressed', SQLERRM;
END
$$;
