/* batch.h - one batch of feed files into one table snapshot, exactly once,
 * through "a catalog" (committer.h).
 *
 * The batch identity travels in the snapshot summary (floe.batch-id, and
 * floe.watermark when given).  Before writing anything, and again in the
 * commit's build step (under the row lock in process, after every reload
 * over REST), the table's history is searched for it: a batch already there
 * is reported as `already` and changes nothing.  Data files of a batch that
 * did not commit are deleted, except when the commit's outcome is unknown.
 * Not thread-safe per batch; batches are independent. */
#ifndef ST_BATCH_H
#define ST_BATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "committer.h"
#include "err.h"
#include "iceberg/snapshot.h"
#include "ingest.h"

struct st_batch_opts {
	enum st_ingest_format format;
	char delimiter; /* CSV; 0 = ',' */
	const char *null_marker; /* CSV; NULL = "" */
	enum st_on_error on_error;
	enum st_new_columns new_columns;
	bool create; /* create the table from the first input's inferred schema */
	/* Upsert (upsert.h): rows replace the table's rows with the same key,
	 * the schema's identifier fields; the last row of a key in the batch
	 * wins.  key names the key columns of a table this batch creates (they
	 * become required identifier fields); NULL keeps the inferred schema. */
	bool upsert;
	const char *const *key;
	size_t n_key;
	/* Upsert only: the column whose value marks a row as a delete of its
	 * key (st_upsert_opts.cdc_field); NULL = none. */
	const char *cdc_field;
	const char *codec; /* "table" (write.parquet.compression-codec), zstd, snappy, gzip, none */
	uint64_t target_file_bytes; /* 0 = write.target-file-size-bytes */
	/* Where rejected rows go: "<dir>/<batch id prefix>.rejected"; NULL or ""
	 * = <table location>/dead-letter (file tables only). */
	const char *dead_letter_dir;
	bool tz_assume_utc;
	int retries; /* commit attempts after a conflict */
	const char *watermark; /* floe.watermark in the summary; NULL = none */
	int threads; /* st_ingest_opts.threads: 0 or 1 = one thread */
	void (*progress)(void *ctx, const struct st_ingest_progress *p);
	void *progress_ctx;
	/* When set, the batch id is still being computed as st_batch_run
	 * starts: await_id returns once it is in the batch_id buffer (0), or
	 * fails with the reason (-1).  CSV and NDJSON rows are then read
	 * beside it, and it is awaited before the first byte is written (the
	 * first row group, or the first dead letter): a batch found committed
	 * then has written nothing.  NULL = batch_id is ready. */
	int (*await_id)(void *ctx, struct fl_err *err);
	void *await_ctx;
	/* Tests: called after each upsert plan, before its commit is sent
	 * (plan counts them from 0), to race a commit against it.  NULL =
	 * none. */
	void (*after_plan)(void *ctx, int plan);
	void *after_plan_ctx;
};

struct st_batch_result {
	bool already; /* the batch was committed before: nothing changed */
	int64_t snapshot_id; /* the batch's snapshot (0 = none: nothing to commit) */
	bool committed; /* this run committed it */
	struct st_ingest_result res; /* what the run read and wrote */
	char dead_letter_path[1024]; /* rejected rows ("" = none) */
};

/* The identity of a batch of local files: hex SHA-256 over the sorted real
 * paths, their sizes and their contents' SHA-256.  FL_ERR_BAD_REQUEST when
 * an input cannot be read. */
int st_batch_identity(const char *const *inputs, size_t n, char out[65],
                      struct fl_err *err) FL_MUST_CHECK;

/* True when meta's history holds a snapshot whose summary names batch_id;
 * *snapshot receives its id. */
bool st_batch_in_history(const json_t *meta, const char *batch_id, int64_t *snapshot);

/* Reads the n inputs (local paths), writes their Parquet files, and commits
 * them through c as one snapshot named batch_id (at most 64 characters; with
 * o->await_id, a buffer that holds it once await_id has returned 0);
 * with o->upsert, one copy-on-write snapshot replacing the rows of the same
 * keys (FL_ERR_BAD_REQUEST when the table has no identifier fields).
 * Strict mode: the first bad row fails the batch (FL_ERR_BAD_REQUEST naming
 * file, line and reason).  FL_ERR_NO_SUCH_TABLE when the table does not
 * exist and create is false.  Commit errors as committer.h says.  out is
 * filled as far as the run got; release it with st_batch_result_free. */
int st_batch_run(struct st_committer *c, const struct st_batch_opts *o, const char *const *inputs,
                 size_t n, const char *batch_id, struct st_batch_result *out,
                 struct fl_err *err) FL_MUST_CHECK;

/* Releases a result; accepts a zeroed one. */
void st_batch_result_free(struct st_batch_result *r);

#endif
