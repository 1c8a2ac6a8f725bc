/* reader.h - a streaming Parquet reader that turns files written by Floe,
 * PyArrow (PyIceberg), DuckDB and Spark into the typed values the write
 * path takes (struct st_value, iceberg/types.h), so that compaction can
 * feed a reader's batches straight into st_parquet_writer_write_row.
 *
 * What it reads (apache/parquet-format): the footer (FileMetaData, Thrift
 * compact); data pages v1 and v2; dictionary pages; values PLAIN,
 * PLAIN_DICTIONARY, RLE_DICTIONARY, RLE (booleans), DELTA_BINARY_PACKED,
 * DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT (what
 * PARQUET_VERSION V2 writers such as DuckDB and parquet-mr choose);
 * definition levels RLE / bit-packed hybrid; codecs UNCOMPRESSED, SNAPPY,
 * GZIP and ZSTD.  Leaf columns whose path holds no repeated field are
 * readable (top-level primitives, and primitives inside structs); columns
 * inside lists and maps are listed but cannot be projected, and their
 * chunks are never read.  Other codecs (LZ4, BROTLI) and the deprecated
 * BIT_PACKED levels are FL_ERR_UNSUPPORTED naming the column.
 *
 * Types: each leaf gets the Iceberg type its Parquet type and annotation
 * map to (Iceberg spec Appendix A, read direction): INT32 -> int (also
 * INT(8|16|32), UINT(8|16)), date, decimal, time (TIME_MILLIS, scaled to
 * micros); UINT32 -> long; INT64 -> long, decimal, time, timestamp(tz)
 * (MILLIS scaled to micros, NANOS -> timestamp(tz)_ns); INT96 (legacy
 * Spark/Impala) -> timestamptz; FLOAT, DOUBLE; BYTE_ARRAY -> string
 * (STRING/UTF8, ENUM, JSON), decimal, else binary; FIXED_LEN_BYTE_ARRAY ->
 * uuid (UUID), decimal, else fixed[L].  A projection may ask for a wider
 * type (Iceberg's promotions: int -> long, float -> double, decimal to a
 * larger precision of the same scale; fixed[16] -> uuid and binary ->
 * string for writers that leave the annotation out; timestamp and
 * timestamptz read each other).
 *
 * Memory: the footer, then per row group the compressed chunks of the
 * projected columns, the page being decoded per column and one batch of
 * values: bounded by one row group (opts.max_row_group_bytes) plus a batch.
 * Byte values (string, binary, fixed, uuid) in a batch point into the
 * reader's buffers and stay valid until the next st_parquet_reader_next.
 *
 * Malformed input - wrong magic, a footer or chunk length that does not fit
 * the file, a page that holds fewer values than its row group, a dictionary
 * index out of range, invalid UTF-8 in a string, a value that does not
 * decompress to the size its header states - is FL_ERR_BAD_REQUEST naming
 * the column, the row group and the reason; limits are FL_ERR_TOO_LARGE;
 * nothing reads outside its buffer.  A reader is used by one thread at a
 * time; it never aborts, and every allocation goes through opts.alloc. */
#ifndef ST_PARQUET_READER_H
#define ST_PARQUET_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "err.h"
#include "iceberg/name_mapping.h"
#include "iceberg/types.h"
#include "io/io.h"

/* Random access to the file: read exactly n bytes at off or fail (FL_ERR_IO,
 * naming the object).  The reader asks only for ranges inside [0, size). */
struct st_parquet_source {
	int (*read_at)(void *ctx, uint64_t off, void *p, size_t n, struct fl_err *err);
	void *ctx;
	uint64_t size;
};

/* A source over n bytes in memory (which must outlive the reader). */
struct st_parquet_mem {
	const uint8_t *p;
	size_t n;
};
void st_parquet_source_mem(struct st_parquet_source *s, struct st_parquet_mem *m, const void *p,
                           size_t n);

/* A source reading uri through io in ranges (st_io_read_range), its size
 * from st_io_stat, so the whole file is never in memory: how compaction
 * reads a table's data files on any store.  ctx, io and uri are borrowed
 * and must outlive the reader.  Fails with the stat's error (e.g.
 * FL_ERR_NOT_FOUND naming uri). */
struct st_parquet_io_ctx {
	struct st_io *io;
	const char *uri;
};
int st_parquet_source_io(struct st_parquet_source *s, struct st_parquet_io_ctx *ctx,
                         struct st_io *io, const char *uri, struct fl_err *err) FL_MUST_CHECK;

struct st_parquet_reader_opts {
	size_t max_footer_bytes; /* 0: 64 MiB */
	size_t max_row_group_bytes; /* projected compressed chunks + a page; 0: 1 GiB */
	size_t max_page_bytes; /* one uncompressed page; 0: 256 MiB */
	size_t batch_rows; /* rows per batch; 0: 4096 */
	/* Field ids for columns the file does not give one (files written
	 * without Iceberg, added through add_files): the table's
	 * schema.name-mapping.default.  Borrowed; may be NULL. */
	const struct st_name_mapping *name_mapping;
	const struct st_alloc *alloc; /* NULL: the C library */
};

/* A leaf column of the file, in file order. */
struct st_parquet_leaf {
	const char *path; /* names from the root joined with '.' */
	int32_t field_id; /* the file's, else the name mapping's; -1 when neither */
	bool optional; /* some definition level is below the maximum */
	bool readable; /* false: its type or nesting is not supported (see why) */
	const char *why; /* when !readable: the reason, e.g. "inside a list" */
	struct st_type type; /* the Iceberg type it maps to (when readable) */
	int64_t compressed_size; /* its chunks' bytes over every row group (the footer's) */
};

/* A column a projection asks for: by Iceberg field id, as the given type
 * (the file's type or a promotion of it).  A field the file lacks reads as
 * nulls (Iceberg's rule for columns added later) unless it is required,
 * which fails the projection. */
struct st_parquet_want {
	int32_t field_id;
	struct st_type type;
	bool required;
};

/* One batch: n_rows rows of n_columns columns; columns[j][i] is row i of
 * projected column j.  Owned by the reader; valid until the next call. */
struct st_parquet_batch {
	size_t n_rows;
	size_t n_columns;
	struct st_value **columns;
};

struct st_parquet_reader;

/* Reads and checks the magic, the footer and the schema; projects every
 * readable leaf.  opts may be NULL.  FL_ERR_BAD_REQUEST for malformed
 * files, FL_ERR_TOO_LARGE past a limit, FL_ERR_IO from the source,
 * FL_ERR_NOMEM; *out untouched on failure.  src is copied; its ctx must
 * outlive the reader. */
int st_parquet_reader_open(const struct st_parquet_source *src,
                           const struct st_parquet_reader_opts *opts,
                           struct st_parquet_reader **out, struct fl_err *err) FL_MUST_CHECK;

/* Replaces the projection with the n columns asked for, in that order, and
 * restarts at the first row.  FL_ERR_BAD_REQUEST when a required field is
 * missing, a field id appears twice in the file, or the file's type cannot
 * be read as the one asked for; FL_ERR_UNSUPPORTED when the column is not
 * readable.  The projection is unchanged on failure. */
int st_parquet_reader_project(struct st_parquet_reader *r, const struct st_parquet_want *want,
                              size_t n, struct fl_err *err) FL_MUST_CHECK;

/* Decodes the next batch (at most batch_rows rows, never across row
 * groups) and points *out at it; *out is NULL after the last row.  After a
 * failure the reader can only be freed. */
int st_parquet_reader_next(struct st_parquet_reader *r, const struct st_parquet_batch **out,
                           struct fl_err *err) FL_MUST_CHECK;

/* Fills row[j] with row i of batch column j (j < b->n_columns): the row
 * form st_parquet_writer_write_row takes. */
void st_parquet_batch_row(const struct st_parquet_batch *b, size_t i, struct st_value *row);

/* The file's leaves, in file order; valid until the reader is freed. */
size_t st_parquet_reader_n_leaves(const struct st_parquet_reader *r);
const struct st_parquet_leaf *st_parquet_reader_leaf(const struct st_parquet_reader *r, size_t i);

/* The leaf index behind projected column j (a missing field: SIZE_MAX). */
size_t st_parquet_reader_projected_leaf(const struct st_parquet_reader *r, size_t j);

/* Total rows per the footer, and the number of row groups. */
int64_t st_parquet_reader_num_rows(const struct st_parquet_reader *r);
size_t st_parquet_reader_n_row_groups(const struct st_parquet_reader *r);

/* The footer's key/value metadata value for key (e.g. "iceberg.schema"),
 * NUL-terminated, or NULL when absent. */
const char *st_parquet_reader_kv(const struct st_parquet_reader *r, const char *key);

/* Releases the reader and everything it handed out; accepts NULL. */
void st_parquet_reader_free(struct st_parquet_reader *r);

#endif
