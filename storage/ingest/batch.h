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
 * them through c as one snapshot named batch_id (at most 64 characters).
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
