/* deletes.h - the rows that delete files remove, so that compaction can
 * leave them out: the row positions that position delete files and deletion
 * vectors remove from one data file (apache/iceberg format/spec.md
 * "Position Delete Files", "Scan Planning"; format/puffin-spec.md
 * "deletion-vector-v1"), and the keys that equality delete files remove
 * ("Equality Delete Files").
 *
 * Which deletes apply to which data file is decided by the callers, which
 * hold the manifests, with st_pos_delete_applies and st_eq_delete_applies:
 * the rule is written once, here.  A deletion vector hides position delete
 * files of its data file (v3 writers fold those into it).
 *
 * Malformed input is FL_ERR_BAD_REQUEST naming the reason (wrong magic, a
 * length that does not match the blob, a bad CRC, keys out of order, a
 * position at or beyond the data file's row count); nothing reads outside
 * its buffer, and a set never holds more positions than its limit.  Every
 * allocation goes through the st_alloc given (NULL: the C library); nothing
 * here aborts.  Nothing is shared between threads. */
#ifndef ST_DELETES_H
#define ST_DELETES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "err.h"
#include "io/io.h"
#include "parquet/parquet.h"
#include "parquet/reader.h"

#define ST_FIELD_DELETE_FILE_PATH 2147483546
#define ST_FIELD_DELETE_POS 2147483545

/* A set of row positions in [0, limit): add in any order, then finish
 * (sorted, without duplicates) before asking.  Public so that callers can
 * keep it on the stack; touch it only through the functions below. */
struct st_posset {
	int64_t *v;
	size_t n, cap;
	int64_t limit;
	bool sorted;
	const struct st_alloc *alloc;
};

/* An empty set of positions below limit (the data file's record count). */
void st_posset_init(struct st_posset *s, int64_t limit, const struct st_alloc *a);

/* Adds pos.  FL_ERR_BAD_REQUEST when pos is negative or >= limit;
 * FL_ERR_NOMEM.  The set is unchanged on failure. */
int st_posset_add(struct st_posset *s, int64_t pos, struct fl_err *err) FL_MUST_CHECK;

/* Sorts and removes duplicates; idempotent. */
void st_posset_finish(struct st_posset *s);

/* Whether pos is in a finished set (binary search). */
bool st_posset_has(const struct st_posset *s, int64_t pos);

/* Releases the positions; the set is empty afterwards.  Accepts a zeroed set. */
void st_posset_free(struct st_posset *s);

/* Adds the positions of one serialized deletion-vector-v1 blob (n bytes:
 * big-endian length of magic + vector, magic D1 D3 39 64, the portable
 * 64-bit Roaring bitmap, big-endian CRC-32 of magic + vector) to out.
 * FL_ERR_BAD_REQUEST ("deletion vector: ...") for any inconsistency; out
 * may hold some of the positions after a failure (free it). */
int st_dv_parse(const uint8_t *blob, size_t n, struct st_posset *out,
                struct fl_err *err) FL_MUST_CHECK;

/* Reads the blob at [offset, offset + size) of the Puffin file uri (the
 * manifest entry's content_offset and content_size_in_bytes) and parses it
 * as above.  FL_ERR_BAD_REQUEST for a negative offset or size, a size over
 * max_bytes (0: 256 MiB) is FL_ERR_TOO_LARGE, a range past the end of the
 * object is FL_ERR_BAD_REQUEST; the IO error otherwise.  Messages name
 * uri. */
int st_dv_read(struct st_io *io, const char *uri, int64_t offset, int64_t size, size_t max_bytes,
               struct st_posset *out, struct fl_err *err) FL_MUST_CHECK;

/* Called for each row of a position delete file: the data file path (not
 * NUL-terminated, valid during the call) and the position.  A non-zero
 * return stops the read and is returned (with err set by the callback). */
typedef int (*st_pos_delete_fn)(void *arg, const uint8_t *path, size_t len, int64_t pos,
                                struct fl_err *err);

/* Streams the (file_path, pos) rows of a Parquet position delete file
 * (field ids 2147483546 and 2147483545; a `row` column is ignored) to fn.
 * ropts may be NULL.  The reader's errors (FL_ERR_BAD_REQUEST for a
 * malformed file or one without those columns, FL_ERR_UNSUPPORTED,
 * FL_ERR_TOO_LARGE), a null path or position (FL_ERR_BAD_REQUEST), or
 * fn's. */
int st_pos_deletes_read(const struct st_parquet_source *src,
                        const struct st_parquet_reader_opts *ropts, st_pos_delete_fn fn, void *arg,
                        struct fl_err *err) FL_MUST_CHECK;

/* The positions of data file data_path in a position delete file, added to
 * out.  Errors as st_pos_deletes_read and st_posset_add. */
int st_pos_deletes_for(const struct st_parquet_source *src,
                       const struct st_parquet_reader_opts *ropts, const char *data_path,
                       struct st_posset *out, struct fl_err *err) FL_MUST_CHECK;

/* ---- equality deletes ---- */

#define ST_EQSET_MAX_FIELDS 16

/* The rows of equality delete files that share one list of equality
 * fields: each distinct tuple of their values, with the highest data
 * sequence number among the files that hold it.  A data file's row is
 * deleted when its values of those fields equal a tuple held with a data
 * sequence number greater than the data file's (spec "Scan Planning").
 * Values compare as Iceberg Java's do: null equals null, a float or double
 * by its bits with every NaN equal (so -0.0 is not 0.0), strings and
 * binaries byte for byte.  Both sides must be read as the same types (the
 * table schema's: a reader's projection promotes an int file column to a
 * long field).  Opaque; not shared between threads. */
struct st_eqset;

/* An empty set over the n fields (1..ST_EQSET_MAX_FIELDS; field ids and
 * types as the table schema has them), holding at most max_bytes (0:
 * 256 MiB) of tuples and index.  FL_ERR_BAD_REQUEST for n out of range;
 * FL_ERR_NOMEM. */
int st_eqset_new(const struct st_parquet_want *fields, size_t n, size_t max_bytes,
                 const struct st_alloc *a, struct st_eqset **out, struct fl_err *err) FL_MUST_CHECK;

/* Adds one tuple (n values in the fields' order) held by a file of data
 * sequence number seq.  FL_ERR_TOO_LARGE past max_bytes ("equality
 * deletes: ..."); FL_ERR_NOMEM.  The set is unchanged on failure. */
int st_eqset_add(struct st_eqset *s, const struct st_value *vals, int64_t seq,
                 struct fl_err *err) FL_MUST_CHECK;

/* Adds every row of the equality delete file src, of data sequence number
 * seq, read as the set's fields (ropts may be NULL).  FL_ERR_BAD_REQUEST
 * when the file has no column with one of the field ids (naming the id;
 * the caller names the file), the reader's errors, or st_eqset_add's; the
 * set may hold some of the file's rows after a failure. */
int st_eqset_add_file(struct st_eqset *s, const struct st_parquet_source *src,
                      const struct st_parquet_reader_opts *ropts, int64_t seq,
                      struct fl_err *err) FL_MUST_CHECK;

/* Spec "Scan Planning": whether a position delete file or deletion vector
 * of data sequence number del_seq applies to a data file of data sequence
 * number data_seq: one of the same partition (same spec, same tuple:
 * same_partition) at most as new.  It then removes only the rows it names
 * of that file. */
bool st_pos_delete_applies(bool same_partition, int64_t data_seq, int64_t del_seq);

/* ... and whether an equality delete file does: one of the same partition,
 * or of any when the delete's spec has no fields (global), strictly older
 * (a row committed together with a delete of its key, as a streaming
 * upsert writes, stays). */
bool st_eq_delete_applies(bool same_partition, bool global, int64_t data_seq, int64_t del_seq);

/* Whether a row whose fields hold vals (n values in the fields' order), in
 * a data file of data sequence number data_seq, is deleted. */
bool st_eqset_deletes(const struct st_eqset *s, const struct st_value *vals, int64_t data_seq);

/* The distinct tuples held. */
size_t st_eqset_size(const struct st_eqset *s);

/* Frees the set; accepts NULL. */
void st_eqset_free(struct st_eqset *s);

/* The equality delete files that apply to some data files of a table,
 * read into one st_eqset per list of field ids (the same list in any order
 * shares a set), each file once.  Rows are matched in the form a rewrite
 * reads them: the table's columns (cols, schema order), from which the
 * fields' types and positions come.  Zero-initialise, or use
 * st_eqdeletes_init. */
struct st_eqdeletes_set;

struct st_eqdeletes {
	const struct st_parquet_column *cols;
	size_t ncols;
	const struct st_parquet_reader_opts *ropts; /* may be NULL */
	struct st_eqdeletes_set *sets;
	size_t nsets;
	char **read; /* the files read */
	size_t nread;
};

void st_eqdeletes_init(struct st_eqdeletes *d, const struct st_parquet_column *cols, size_t ncols,
                       const struct st_parquet_reader_opts *ropts);

/* Reads the equality delete file uri of data sequence number seq, whose
 * equality_ids are ids[0..nids), unless it was read already.
 * FL_ERR_BAD_REQUEST for no ids or one named twice; FL_ERR_UNSUPPORTED for
 * more than ST_EQSET_MAX_FIELDS or a field id none of cols has (a dropped
 * column, whose values the data files no longer give); st_eqset_add_file's
 * errors.  Every message names uri. */
int st_eqdeletes_add(struct st_eqdeletes *d, struct st_io *io, const char *uri, const int32_t *ids,
                     size_t nids, int64_t seq, struct fl_err *err) FL_MUST_CHECK;

/* Whether row (one value per column of cols) of a data file of data
 * sequence number data_seq is deleted by one of the files read. */
bool st_eqdeletes_match(const struct st_eqdeletes *d, const struct st_value *row, int64_t data_seq);

/* Releases what was read; d is empty (its columns kept) afterwards. */
void st_eqdeletes_free(struct st_eqdeletes *d);

#endif
