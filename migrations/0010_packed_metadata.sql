-- 0010_packed_metadata: a row may store its document packed.
--
-- PostgreSQL compresses table_entry.metadata (lz4, 0006) but decompresses
-- and sends the whole text to every reader, and a loadTable that misses the
-- cache pays for those bytes on both sides of the connection. A document is
-- now stored packed, "zstd:" and the unpadded base64url of a zstd frame of
-- its text, which the catalog unpacks when it reads the row
-- (catalog/db/doc.c). A value that begins with '{' is a document as it is:
-- every row written before this version, short documents, and documents
-- that name a floe.maintenance.* property, which the maintenance
-- scheduler still reads here in SQL.
--
-- A binary older than this schema would take a packed document for broken
-- JSON; it refuses a database whose schema is newer than its own, which this
-- version keeps it from serving.
COMMENT ON COLUMN table_entry.metadata IS
    'current metadata JSON, or packed ("zstd:" + base64url of a zstd frame of it; catalog/db/doc.c); tables up to metadata-inline-max-bytes, views always; NULL when only the file at metadata_location holds it';
