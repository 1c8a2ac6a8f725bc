-- 0008_idempotency_ref: a keyed commit's record names the metadata file it wrote.
--
-- A CommitTableResponse is the new metadata-location and the whole metadata
-- document, which is the text of that file. Stored as the record's body it
-- was written a third time per commit (the file, table_entry.metadata, the
-- record): on a table of 1,000 snapshots ~140 KB of WAL and the lz4
-- compression of ~500 KB of PostgreSQL CPU per commit. The record now keeps
-- the location instead (body NULL) and a replay reads the answer back
-- (server: srv_replay_commit). Records of other responses keep their body.
ALTER TABLE idempotency_record ADD COLUMN metadata_location text;
