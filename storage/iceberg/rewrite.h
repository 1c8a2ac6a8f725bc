/* rewrite.h - reading a table's Parquet data files back row by row, and
 * writing a file again without some of its rows (copy-on-write).
 *
 * Rows are read with the Parquet reader (parquet/reader.h) projected on the
 * table schema by field id (the name mapping supplies ids the file lacks;
 * a column with neither refuses the file, since its values would be lost),
 * and written with the Parquet writer with the schema's columns, so a
 * rewritten file holds exactly what the reader saw, in the same order.
 * Not thread-safe per call; calls are independent. */
#ifndef ST_REWRITE_H
#define ST_REWRITE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "iceberg/name_mapping.h"
#include "io/io.h"
#include "parquet/parquet.h"
#include "parquet/reader.h"

/* The v3 row lineage columns (spec "Row Lineage", reserved field ids). */
#define ST_FIELD_ROW_ID 2147483540
#define ST_FIELD_LAST_UPDATED 2147483539

/* Called per row with its position in the file (from 0) and its values in
 * projection order.  Returns 0, or -1 with err to stop the scan. */
typedef int (*st_rewrite_row_fn)(void *arg, int64_t pos, const struct st_value *row,
                                 struct fl_err *err);

/* Reads the n columns want asks for from every row of uri through io.
 * Reader errors are prefixed with uri; fn's errors pass unchanged. */
int st_rewrite_scan(struct st_io *io, const char *uri, const struct st_name_mapping *mapping,
                    const struct st_parquet_want *want, size_t n, st_rewrite_row_fn fn, void *arg,
                    struct fl_err *err) FL_MUST_CHECK;

struct st_rewrite_opts {
	struct st_io *io; /* reads and writes (borrowed) */
	const json_t *schema; /* the columns read and written: flat, primitive */
	const struct st_name_mapping *mapping; /* may be NULL */
	const char *data_uri; /* new files: <data_uri>/<uuid>-<tag>.parquet */
	const char *tag;
	enum st_parquet_codec codec;
	int compression_level;
	uint64_t target_file_bytes; /* roll past this; 0 = 512 MiB */
	/* Decides per row (all schema columns, in schema order, then with
	 * lineage the two lineage columns): *keep. */
	int (*keep)(void *arg, int64_t pos, const struct st_value *row, bool *keep,
	            struct fl_err *err);
	void *arg;
	/* v3 row lineage: the rows read keep their _row_id and
	 * _last_updated_sequence_number in the files written, a null one
	 * inherited from first_row_id + the row's position and from data_seq
	 * (both stay null when !has_first_row_id: a file written before the
	 * table's upgrade to v3). */
	bool lineage;
	bool has_first_row_id;
	int64_t first_row_id, data_seq;
	/* With lineage: may give a kept row whose _row_id is still null an
	 * id (*id, non-null), e.g. the id of the row it updates; one left
	 * null is inherited from the new file.  May be NULL. */
	int (*row_id)(void *arg, int64_t pos, const struct st_value *row, struct st_value *id,
	              struct fl_err *err);
};

struct st_rewrite_file {
	char *uri;
	struct st_parquet_metrics m;
};

/* What rewrites wrote; grows over several st_rewrite_run calls. */
struct st_rewrite_out {
	struct st_rewrite_file *files;
	size_t n;
	int64_t rows_read, rows_kept;
};

/* Writes the rows of uri that o->keep keeps into new files, appending them
 * to out (none when no row is kept).  On failure the files this call
 * started are deleted and out keeps what earlier calls wrote. */
int st_rewrite_run(const struct st_rewrite_opts *o, const char *uri, struct st_rewrite_out *out,
                   struct fl_err *err) FL_MUST_CHECK;

/* The writer's columns and the reader's projection for schema (flat,
 * primitive fields), both calloc'd with n entries; names point into schema.
 * FL_ERR_UNSUPPORTED for a nested column. */
int st_rewrite_columns(const json_t *schema, struct st_parquet_column **cols,
                       struct st_parquet_want **want, size_t *n, struct fl_err *err) FL_MUST_CHECK;

/* Deletes the files out lists (best effort) and releases out. */
void st_rewrite_out_discard(struct st_io *io, struct st_rewrite_out *out);

/* Releases out without touching the files; accepts a zeroed struct. */
void st_rewrite_out_free(struct st_rewrite_out *out);

#endif
