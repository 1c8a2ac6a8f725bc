/* data_writer.h - one new Parquet data file of a table, as every writer
 * that rewrites a table's rows makes it (copy-on-write upserts, compaction):
 * named <dir>/<uuid v7>-<tag>.parquet, written through the store's streaming
 * writer (file: fsynced at close; s3: a multipart upload) with the table's
 * codec and level, and either closed into the metrics its manifest entry
 * needs or aborted, leaving nothing visible.
 * A writer is used by one thread at a time. */
#ifndef ST_DATA_WRITER_H
#define ST_DATA_WRITER_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"
#include "io/io.h"
#include "parquet/parquet.h"

/* The codec write.parquet.compression-codec names (zstd, snappy, gzip,
 * uncompressed or none, any case); NULL or another name: zstd, the
 * default. */
enum st_parquet_codec st_data_codec(const char *name);

/* write.parquet.compression-level of the table metadata meta's properties,
 * as Iceberg's writers honour it: unset is 0, the codec's default (zstd 3,
 * as parquet-mr and DuckDB; gzip 6); a set value must be a level the codec
 * has (zstd 1-22, gzip 1-9), else FL_ERR_BAD_REQUEST naming the property;
 * snappy and uncompressed have no level and ignore it (0). */
int st_data_level(enum st_parquet_codec codec, const json_t *meta, int *level,
                  struct fl_err *err) FL_MUST_CHECK;

struct st_data_writer_opts {
	struct st_io *io; /* borrowed */
	const char *dir_uri; /* the file is <dir_uri>/<uuid v7>-<tag>.parquet */
	const char *tag;
	const struct st_parquet_column *columns;
	size_t n_columns;
	const char *schema_json; /* footer "iceberg.schema"; may be NULL */
	enum st_parquet_codec codec;
	int compression_level; /* 0: the codec's default */
};

/* An open file: w takes rows (st_parquet_writer_write_row) until close or
 * abort.  A zeroed struct is "none open". */
struct st_data_writer {
	char *uri;
	struct st_io_writer *file;
	struct st_parquet_writer *w;
};

/* Names a new file and opens it; on failure nothing was created and dw
 * stays zeroed. */
int st_data_writer_open(const struct st_data_writer_opts *o, struct st_data_writer *dw,
                        struct fl_err *err) FL_MUST_CHECK;

/* Finishes the open file and makes it visible: *uri (malloc'd, the
 * caller's) and *m (st_parquet_metrics_free; left zeroed on failure).  On failure nothing is
 * visible.  Either way dw is zeroed. */
int st_data_writer_close(struct st_data_writer *dw, char **uri, struct st_parquet_metrics *m,
                         struct fl_err *err) FL_MUST_CHECK;

/* Discards the open file, if any (nothing is visible), and zeroes dw. */
void st_data_writer_abort(struct st_data_writer *dw);

#endif
