-- 0009_metadata_in_files: a table's metadata may live only in its file.
--
-- table_entry.metadata held every table's current metadata JSON. A table's
-- document grows with its snapshots (~0.9 MB at 2,000), and each commit
-- stored it again: TOAST chunks rewritten, lz4 run over it and ~170 KB of
-- WAL, for text that is already in the metadata file the row names, written
-- and synced before the row names it. A table's document larger than
-- metadata-inline-max-bytes (256 KiB by default) is now NULL here, and its
-- readers (loads that miss the cache, commits, replays, the maintenance
-- scheduler) read the file at metadata_location. Views keep theirs.
--
-- A binary older than this schema takes such a row for a broken one ("table
-- row is incomplete"); it also refuses to serve a database whose schema is
-- newer than its own, which this version keeps it from doing.
COMMENT ON COLUMN table_entry.metadata IS
    'current metadata JSON (views always; tables up to metadata-inline-max-bytes); NULL when only the file at metadata_location holds it';
