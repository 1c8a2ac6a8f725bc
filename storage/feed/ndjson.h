/* ndjson.h - a streaming reader of newline-delimited JSON (one object per
 * line, https://github.com/ndjson/ndjson-spec).
 *
 * Each record is one line parsed with jansson, duplicate keys rejected, no
 * nesting deeper than a bound; its raw bytes and line number are kept so a
 * row the caller cannot use can be dead-lettered verbatim.  Lines end with
 * LF or CRLF; empty and whitespace-only lines are skipped; a UTF-8 BOM at
 * the very start is skipped.  A line that is not one JSON object is a
 * per-record error, and the next line is read normally.  Memory is
 * O(longest line) plus one input chunk and the parsed object.
 *
 * The reader's own buffers come from opts->alloc; jansson's allocations do
 * not (its allocator hook is process-global), but a jansson out-of-memory
 * is still reported as FL_ERR_NOMEM, never as a malformed line.  Not
 * thread-safe; one reader per input. */
#ifndef ST_FEED_NDJSON_H
#define ST_FEED_NDJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "err.h"
#include "source.h"

#define ST_NDJSON_DEFAULT_MAX_LINE_BYTES ((size_t)8 << 20)
#define ST_NDJSON_DEFAULT_MAX_DEPTH 32

struct st_ndjson_opts {
	const struct st_source *source; /* required; must outlive the reader */
	size_t max_line_bytes; /* 0: the default */
	int max_depth; /* object/array nesting, the line's object being 1; 0: the default */
	const struct st_alloc *alloc; /* NULL: the C library */
};

struct st_ndjson_record {
	json_t *obj; /* the line's object, owned by the reader; NULL when error is set */
	uint64_t line; /* 1-based line number */
	uint64_t number; /* 1-based ordinal among non-blank lines */
	const char *raw; /* the line's bytes, its LF (or CRLF) included */
	size_t raw_len;
	bool raw_truncated; /* the line exceeded max_line_bytes: raw holds its start */
	bool ints_as_reals; /* a number past int64 made every number of the line a real */
	const char *error; /* NULL, or why the line is not a usable object */
};

struct st_ndjson_reader;

/* Returns a reader; reads nothing yet.  FL_ERR_NOMEM; *out untouched on
 * failure. */
int st_ndjson_reader_open(const struct st_ndjson_opts *opts, struct st_ndjson_reader **out,
                          struct fl_err *err) FL_MUST_CHECK;

/* Reads the next non-blank line into *out, or sets *out = NULL at the end
 * of the input.  A malformed line is still a success: (*out)->error says
 * why.  The record (and its object: take a reference to keep it) is valid
 * until the next call.  -1 only for FL_ERR_IO from the source and
 * FL_ERR_NOMEM; the reader can then only be freed. */
int st_ndjson_reader_next(struct st_ndjson_reader *r, const struct st_ndjson_record **out,
                          struct fl_err *err) FL_MUST_CHECK;

/* Releases the reader and its current object; accepts NULL. */
void st_ndjson_reader_free(struct st_ndjson_reader *r);

#endif
