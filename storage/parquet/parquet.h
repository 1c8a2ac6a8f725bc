/* parquet.h - a streaming Parquet writer for flat Iceberg schemas, with the
 * column metrics an Iceberg manifest needs.
 *
 * Each column carries its Iceberg field id (SchemaElement.field_id) and
 * the Iceberg primitive type, mapped per the Iceberg spec, Appendix A.
 * Rows are buffered per row group; when the buffered (encoded,
 * uncompressed) size reaches row_group_bytes the row group is compressed
 * and written to the sink and its buffers are reused, so memory stays
 * bounded by about one row group.  Values go out PLAIN or RLE_DICTIONARY
 * (falling back to PLAIN for the row group once its dictionary passes
 * dict_bytes), in data page v1, compressed with ZSTD (default), SNAPPY,
 * GZIP or not at all.  Chunk statistics (min_value, max_value, null_count,
 * nan_count) and column_orders are written for every column; a chunk whose
 * min or max is longer than 1 KiB keeps null_count but leaves min/max out,
 * so that long strings do not bloat the footer (the Iceberg bounds are
 * truncated instead).
 *
 * A writer is used by one thread at a time (it may hand encoding to a
 * workq's threads: opts.workq).  Any failure other than a
 * rejected row leaves the writer unusable: close then reports it. */
#ifndef ST_PARQUET_H
#define ST_PARQUET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/sink.h"
#include "base/workq.h"
#include "err.h"
#include "iceberg/data_file.h"
#include "iceberg/types.h"

enum st_parquet_codec {
	ST_PARQUET_ZSTD = 0, /* the default, like Iceberg's write.parquet.compression-codec */
	ST_PARQUET_SNAPPY,
	ST_PARQUET_GZIP,
	ST_PARQUET_UNCOMPRESSED,
};

/* Iceberg metrics modes (write.metadata.metrics.default and
 * write.metadata.metrics.column.<name>): what the manifest gets to know
 * about a column.  They change only the reported metrics, never the file. */
enum st_metrics_mode {
	ST_METRICS_DEFAULT = 0, /* truncate(opts.truncate_length) */
	ST_METRICS_NONE, /* no size, counts or bounds */
	ST_METRICS_COUNTS, /* size and counts, no bounds */
	ST_METRICS_TRUNCATE, /* bounds truncated to metrics_truncate */
	ST_METRICS_FULL, /* bounds not truncated */
};

struct st_parquet_column {
	const char *name;
	int32_t field_id;
	struct st_type type;
	bool required; /* REQUIRED: nulls are refused; else OPTIONAL with definition levels */
	enum st_metrics_mode metrics;
	size_t metrics_truncate; /* for ST_METRICS_TRUNCATE; must be > 0 */
};

struct st_parquet_kv {
	const char *key;
	const char *value;
};

struct st_parquet_opts {
	const struct st_parquet_column *columns; /* copied at open */
	size_t n_columns;
	const char *iceberg_schema_json; /* stored under the key "iceberg.schema"; may be NULL */
	const struct st_parquet_kv *kv; /* further footer key/value pairs */
	size_t n_kv;
	enum st_parquet_codec codec;
	int compression_level; /* 0: codec default (zstd 3, gzip 6) */
	size_t row_group_bytes; /* 0: 128 MiB (write.parquet.row-group-size-bytes) */
	size_t page_bytes; /* 0: 1 MiB (write.parquet.page-size-bytes) */
	size_t dict_bytes; /* 0: 2 MiB (write.parquet.dict-size-bytes) */
	bool no_dictionary; /* PLAIN only */
	bool utf8_checked; /* the caller has validated every string: skip the check */
	size_t truncate_length; /* metrics truncate(N) for string/binary bounds; 0: 16 */
	const char *created_by; /* NULL: "floe version 0.1.0" */
	struct st_sink sink;
	const struct st_alloc *alloc;
	/* Encode and compress flushed row groups on these threads, one task per
	 * column chunk, while the caller fills the next row group; NULL = on
	 * the caller's thread.  The file's bytes are the same either way.  At
	 * most st_workq_threads(workq) row groups are in flight besides the one
	 * being filled, and alloc must then be safe to call from any thread. */
	struct st_workq *workq;
};

struct st_parquet_writer;

/* What close reports: everything a data_file entry needs but its path and
 * partition.  columns[] follow the writer's column order. */
struct st_parquet_metrics {
	int64_t record_count;
	int64_t file_size;
	struct st_column_metrics *columns;
	size_t n_columns;
	int64_t *split_offsets; /* row-group start offsets, ascending */
	size_t n_split_offsets;
	const struct st_alloc *alloc;
};

/* Checks the columns (names, unique field ids, decimal precision, fixed
 * length), writes the "PAR1" magic and returns a writer.  FL_ERR_BAD_REQUEST
 * names the bad column; *out untouched on failure. */
int st_parquet_writer_open(const struct st_parquet_opts *opts, struct st_parquet_writer **out,
                           struct fl_err *err) FL_MUST_CHECK;

/* Appends one row: row[i] is the value of column i (st_value members per
 * types.h).  A row with a null in a required column, invalid UTF-8 in a
 * string, a fixed/uuid of the wrong length or a decimal that does not fit
 * its precision's storage is refused with FL_ERR_BAD_REQUEST and leaves the
 * writer usable.  May write a row group to the sink. */
int st_parquet_writer_write_row(struct st_parquet_writer *w, const struct st_value *row,
                                struct fl_err *err) FL_MUST_CHECK;

/* Writes the buffered rows as a row group now (no-op when empty). */
int st_parquet_writer_flush(struct st_parquet_writer *w, struct fl_err *err) FL_MUST_CHECK;

/* Bytes already in the sink plus the buffered, not yet compressed bytes:
 * the measure to roll files at write.target-file-size-bytes.  With a workq,
 * row groups still being encoded count at an upper bound of their size;
 * st_parquet_writer_settle makes the figure exact again. */
uint64_t st_parquet_writer_size(const struct st_parquet_writer *w);

/* Waits for the row groups being encoded (workq) and writes them to the
 * sink; a no-op without a workq. */
int st_parquet_writer_settle(struct st_parquet_writer *w, struct fl_err *err) FL_MUST_CHECK;

/* Writes the last row group and the footer, fills *m (if not NULL; free it
 * with st_parquet_metrics_free) and frees the writer whatever the outcome. */
int st_parquet_writer_close(struct st_parquet_writer *w, struct st_parquet_metrics *m,
                            struct fl_err *err) FL_MUST_CHECK;

/* Frees a writer without finishing the file; accepts NULL. */
void st_parquet_writer_free(struct st_parquet_writer *w);

/* Points df's metrics half at m (borrowed: m must outlive df's use) and sets
 * content DATA, file_format "PARQUET", record_count and file size; the
 * caller adds file_path and the partition tuple. */
void st_parquet_metrics_to_data_file(const struct st_parquet_metrics *m, struct st_data_file *df);

/* Releases what close put in *m; accepts a zeroed struct. */
void st_parquet_metrics_free(struct st_parquet_metrics *m);

#endif
