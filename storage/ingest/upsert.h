/* upsert.h - a batch of rows that replace the table's rows with the same
 * key, as one copy-on-write snapshot (DESIGN §5b "Upsert").
 *
 * The key is the schema's identifier fields.  Within the batch the last row
 * of a key wins (inputs in order, rows in order); rows of the table whose
 * key the batch holds are removed by rewriting the data files that hold
 * them without those rows.  Files are chosen by the lower/upper bounds of
 * the key columns in their manifest entries (a file whose bounds hold no
 * batch key is not read; one without bounds is), then confirmed by reading
 * the key columns; only files that really hold a batch key are rewritten.
 * The commit is one `overwrite` snapshot (`append` when no file had to go):
 * the rewritten files DELETED, the other live files of the manifests that
 * held them carried as EXISTING, the survivors and the batch's files ADDED.
 * No delete files are written, so every reader (DuckDB, PyIceberg, icebird)
 * reads the result without delete support.
 *
 * Files are found by their bounds in every partition, so a key's new row
 * may land in another partition than its old one (a table partitioned on a
 * column outside the key).  A file rewritten also loses the rows that the
 * table's position and equality delete files remove from it (its copy has
 * a newer sequence number, which they no longer reach); the delete files
 * stay for the files that are not rewritten.
 *
 * On format v3 the rows a rewrite copies keep their _row_id and
 * _last_updated_sequence_number (inherited ones written out), and the
 * entries carried keep their first_row_id.  A batch row that replaces a
 * table row takes over its _row_id (the least, when the key had several
 * rows) and inherits the snapshot's sequence number, as an update does
 * under "Row Lineage": the batch's files holding such rows are written
 * again with those ids on every plan (their other rows inherit new ids).
 * A key the table did not hold, or held only in rows a delete file
 * removed, gets a new id.
 * A deletion vector of a rewritten file, or a position delete file that
 * references only it (its referenced_data_file, or, from a v2 writer,
 * equal lower and upper bounds of its file_path column, as Iceberg Java
 * reads them), is applied to the copy and removed in the
 * same snapshot: DELETED in a delete manifest of its spec that carries the
 * other live entries of its manifest as EXISTING.
 *
 * Change data capture (opts cdc_field): a row whose cdc field says
 * delete (a string beginning with 'D' or 'd', as Debezium's "d" and the
 * Iceberg Kafka Connect sink's "D" do; a boolean true) removes its key's
 * row from the table and is not written itself.  It takes part in the
 * batch's last-row-wins like any other row: a later row of its key puts
 * the key back, a later delete removes an earlier row of the batch.  A
 * null or any other value is an upsert.
 * Not thread-safe per upsert. */
#ifndef ST_UPSERT_H
#define ST_UPSERT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "iceberg/snapshot.h"
#include "ingest.h"
#include "io/io.h"

/* The identifier field ids of schema (a Schema JSON object) into ids (at
 * most cap); *n = 0 when it has none.  FL_ERR_BAD_REQUEST when there are
 * more than cap or one names no primitive field. */
int st_upsert_key_ids(const json_t *schema, int32_t *ids, size_t cap, size_t *n,
                      struct fl_err *err) FL_MUST_CHECK;

/* The field of schema (a Schema JSON object) that cdc_field names, in
 * *field (borrowed): a top-level string or boolean column that is no
 * identifier field.  FL_ERR_BAD_REQUEST naming the problem otherwise. */
int st_upsert_cdc_field(const json_t *schema, const char *cdc_field, const json_t **field,
                        struct fl_err *err) FL_MUST_CHECK;

struct st_upsert_opts {
	struct st_io *io; /* the table's storage (borrowed; the run's) */
	const json_t *schema; /* the schema the batch was written with */
	int format_version;
	const char *data_uri; /* "<table location>/data" */
	enum st_parquet_codec codec;
	int compression_level;
	uint64_t target_file_bytes;
	/* The top-level string or boolean column whose value marks a row as a
	 * delete of its key (see above); NULL = every row is an upsert. */
	const char *cdc_field;
};

struct st_upsert;

/* Reads the keys of the batch's files (res, as st_ingest_run wrote them, in
 * input order) and rewrites the files holding rows that a later row of the
 * batch replaces, deleting those originals.  FL_ERR_BAD_REQUEST when the
 * schema has no identifier fields (naming the problem).
 * *out untouched on failure. */
int st_upsert_open(const struct st_upsert_opts *o, const struct st_ingest_result *res,
                   struct st_upsert **out, struct fl_err *err) FL_MUST_CHECK;

/* Plans the snapshot on `current` (the state the commit applies to: call
 * it from the committer's build step, again after every reload): finds the
 * live files holding batch keys, rewrites them (once per file across
 * attempts) and writes the snapshot's manifests: *manifests (a new array
 * of *n, each element new) holds first the current spec's, with the
 * batch's files, then one per older partition spec whose files it
 * rewrites (a file stays in its spec: its rows' partition tuple is that
 * spec's), then the delete manifests of the deletes it removes (content
 * deletes: for st_snapshot_opts.removed_deletes and more).  The current spec's is left out when it would be empty (a
 * batch of deletes that remove nothing of that spec): *n may be 0, a
 * snapshot that changes no file.  *drop = the manifest paths of current's list the snapshot
 * leaves out, a new array.  t describes the table as the snapshot is built
 * (schema, default spec, metadata dir, io); an older spec comes from
 * current's partition-specs (FL_ERR_BAD_REQUEST when it lacks one a
 * manifest names).  The delete files' errors (deletes.h). */
int st_upsert_plan(struct st_upsert *u, const struct st_snapshot_table *t, const json_t *current,
                   int64_t snapshot_id, struct st_snapshot_manifest ***manifests, size_t *n,
                   json_t **drop, struct fl_err *err) FL_MUST_CHECK;

/* What the last plan did, for the summary and the logs. */
struct st_upsert_stats {
	int64_t batch_rows; /* rows it writes: after its own de-duplication, no delete */
	int64_t replaced_rows; /* table rows the batch replaced with a new row */
	int64_t deleted_keys; /* batch keys whose last row is a delete (cdc_field) */
	int64_t key_deleted_rows; /* table rows those deletes removed */
	int64_t rows_deleted; /* rows of rewritten files that delete files removed */
	int64_t files_read, files_rewritten, files_pruned;
	/* deletion vectors and file-scoped position delete files of files
	 * rewritten, removed with them */
	int64_t dangling_deletes;
};
void st_upsert_stats(const struct st_upsert *u, struct st_upsert_stats *s);

/* Deletes the files the upsert wrote that the committed snapshot does not
 * name (all of them when !committed), then releases u; accepts NULL.  Call
 * with committed = true and keep = true when the commit's outcome is
 * unknown: nothing is deleted. */
void st_upsert_finish(struct st_upsert *u, bool committed, bool keep);

#endif
