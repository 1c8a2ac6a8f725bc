/* deletes.h - the row positions that position delete files and deletion
 * vectors remove from one data file (apache/iceberg format/spec.md
 * "Position Delete Files", "Scan Planning"; format/puffin-spec.md
 * "deletion-vector-v1"), so that compaction can leave those rows out.
 *
 * Which deletes apply to which data file (same partition, the data file's
 * data sequence number <= the delete's, a deletion vector hides position
 * delete files) is the caller's to decide; this module reads the bytes.
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

#endif
