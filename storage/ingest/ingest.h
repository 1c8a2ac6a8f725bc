/* ingest.h - turning feed files (CSV, NDJSON) into Parquet data files for
 * one Iceberg table, with per-row validation and dead-lettering.
 *
 * This is the part of `floe ingest` that needs no catalog: it reads the
 * inputs, casts every value to the table schema, writes Parquet files with
 * Iceberg field ids and column metrics under the table's data folder, and
 * reports what it wrote.  Committing those files (manifest, manifest list,
 * snapshot) is the caller's next step.  Not thread-safe per call; calls are
 * independent. */
#ifndef ST_INGEST_H
#define ST_INGEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "io/io.h"
#include "parquet/parquet.h"

enum st_ingest_format { ST_INGEST_CSV, ST_INGEST_NDJSON, ST_INGEST_PARQUET };
enum st_on_error { ST_ON_ERROR_STRICT, ST_ON_ERROR_DEAD_LETTER };
enum st_new_columns { ST_NEW_COLUMNS_REJECT, ST_NEW_COLUMNS_IGNORE, ST_NEW_COLUMNS_EVOLVE };

/* Where a run is, for a progress display. */
struct st_ingest_progress {
	uint64_t bytes_read; /* of all inputs, so far */
	uint64_t bytes_total; /* the inputs' sizes when the run began */
	uint64_t records; /* read so far, good and bad */
};

struct st_ingest_opts {
	const json_t *schema; /* the table's current schema (flat, primitive fields) */
	const json_t *spec; /* the default partition spec (NULL or no fields: unpartitioned) */
	int64_t last_column_id; /* the table's last-column-id, for evolve */
	enum st_ingest_format format;
	char delimiter; /* CSV; 0 = ',' */
	const char *null_marker; /* CSV: an unquoted field equal to it is null; NULL = "" */
	enum st_on_error on_error;
	enum st_new_columns new_columns;
	struct st_io *io; /* the table's storage (borrowed) */
	/* Where the data files' syncs are left (io.h); NULL: each file is
	 * durable when it is closed. */
	struct st_io_pending *pending;
	const char *data_uri; /* "<table location>/data": where Parquet files go */
	const char *dead_letter_path; /* local file for rejected records (created when needed) */
	enum st_parquet_codec codec;
	int compression_level; /* write.parquet.compression-level; 0 = the codec's default */
	uint64_t target_file_bytes; /* roll to a new file past this (compressed); 0 = 512 MiB */
	size_t row_group_bytes; /* 0 = the writer's default */
	bool tz_assume_utc; /* timestamptz without a zone is UTC */
	/* Upsert: the key's field ids; a row whose key column is null is
	 * rejected naming it (dead-lettered, or the run fails when strict). */
	const int32_t *key_ids;
	size_t n_key_ids;
	/* Threads in all; 0 or 1 = everything on the caller's thread.  Above 1
	 * the caller reads, parses and casts while threads - 1 workers encode
	 * and compress column chunks (the caller joins them when it waits).
	 * The files are the same bytes for any value; memory grows to
	 * `threads` row groups per open file. */
	int threads;
	/* Called every few thousand records and after each input, on the
	 * caller's thread; NULL = none.  Cheap calls: it throttles itself. */
	void (*progress)(void *ctx, const struct st_ingest_progress *p);
	void *progress_ctx;
	/* Called on the caller's thread before the run writes its first byte:
	 * a data file is created when its first row group is written out, the
	 * dead-letter file with the first rejected record.  Once it returns 0
	 * it is not called again; a nonzero return fails the run with the
	 * gate's err, having written nothing.  The rows before it are read
	 * beside whatever it waited for (the batch identity, in batch.c).
	 * NULL = none. */
	int (*gate)(void *ctx, struct fl_err *err);
	void *gate_ctx;
	/* Record each file's rows' places in the input (st_ingest_file.order):
	 * a partitioned table's files interleave the input's rows, which an
	 * upsert's last-row-wins needs to undo.  8 bytes a row. */
	bool row_order;
};

struct st_ingest_file {
	char *uri; /* <data_uri>/<uuid>-<n>.parquet */
	struct st_parquet_metrics m;
	struct st_value *partition; /* one value per spec field; NULL when unpartitioned */
	size_t n_partition;
	uint8_t *partition_bytes; /* owns the bytes the partition values point into */
	int64_t *order; /* with row_order: each row's ordinal among the rows written
	                 * (in input order); NULL otherwise */
};

struct st_ingest_result {
	struct st_ingest_file *files;
	size_t n_files;
	json_t *schema; /* the schema written (new reference) */
	bool evolved; /* columns were added: commit add-schema too */
	int64_t last_column_id; /* after evolution */
	uint64_t rows_ok;
	uint64_t rows_bad;
	uint64_t bytes_in;
	uint64_t bytes_out;
	char *dead_letter_errors; /* path of the reasons file, or NULL */
	bool needs_mapping; /* added Parquet files name columns only: commit a name mapping */
};

/* Reads the n input files (local paths) and writes Parquet through o->io,
 * streaming each file (on S3 as a multipart upload).  In strict mode
 * the first bad record fails the run (FL_ERR_BAD_REQUEST naming the file,
 * line and reason) and every file written is removed; in dead-letter mode
 * bad records go to dead_letter_path (their exact bytes) and
 * dead_letter_path + ".errors.ndjson" (file, line, reason per record).
 * A partitioned table gets one file set per partition tuple (identity,
 * bucket, truncate, year, month, day, hour, void).
 * Unknown input columns follow new_columns (reject: FL_ERR_BAD_REQUEST
 * naming the column; evolve: added as optional columns typed from all
 * their values in the inputs by the rules of feed/infer.h, read once before
 * writing; string when the values say nothing more precise).  On
 * failure res is left empty. */
int st_ingest_run(const struct st_ingest_opts *o, const char *const *inputs, size_t n,
                  struct st_ingest_result *res, struct fl_err *err) FL_MUST_CHECK;

/* Deletes the Parquet files a result lists (after a failed commit),
 * best effort, through io (the handle the run wrote with). */
void st_ingest_result_discard(struct st_io *io, struct st_ingest_result *res);

/* Releases a result; accepts a zeroed one. */
void st_ingest_result_free(struct st_ingest_result *res);

#endif
