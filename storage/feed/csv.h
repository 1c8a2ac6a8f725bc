/* csv.h - a streaming RFC 4180 CSV reader.
 *
 * Records are read one at a time from a struct st_source; memory is
 * O(largest record) plus one input chunk, whatever the file size.  Each
 * record carries its decoded fields, the line on which it starts, and its
 * bytes exactly as they were in the input, so that a row the caller cannot
 * use can be dead-lettered verbatim.
 *
 * Accepted: fields quoted with '"' (a doubled quote inside is one quote;
 * delimiters and line breaks inside are data), CRLF, LF or a lone CR as the
 * record terminator, a last record without a terminator, a configurable
 * one-byte delimiter, an optional header row, a UTF-8 byte order mark at the
 * very start (skipped and not part of any record's raw bytes).
 *
 * Malformed records are per-record errors, not fatal (see csv.c for how the
 * reader resynchronises).  Invalid UTF-8 only clears a flag.  Not
 * thread-safe; one reader per input. */
#ifndef ST_FEED_CSV_H
#define ST_FEED_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "err.h"
#include "source.h"

#define ST_CSV_DEFAULT_MAX_FIELD_BYTES ((size_t)1 << 20)
#define ST_CSV_DEFAULT_MAX_RECORD_BYTES ((size_t)8 << 20)

struct st_csv_opts {
	const struct st_source *source; /* required; must outlive the reader */
	char delimiter; /* 0 means ','; '"', CR and LF are refused */
	bool header; /* the first record names the columns */
	bool keep_blank_lines; /* false: empty lines are skipped; true: one empty field */
	size_t max_field_bytes; /* decoded bytes of one field; 0: the default */
	size_t max_record_bytes; /* raw bytes of one record; 0: the default */
	const struct st_alloc *alloc; /* NULL: the C library */
};

struct st_csv_field {
	const char *p; /* decoded bytes (quotes removed), NUL-terminated */
	size_t len; /* not counting the NUL; fields may contain NUL bytes */
	bool quoted; /* it was written in quotes: lets a caller tell "" from nothing */
};

struct st_csv_record {
	const struct st_csv_field *fields; /* NULL and 0 when error is set */
	size_t n_fields;
	uint64_t line; /* 1-based line on which the record starts */
	uint64_t number; /* 1-based ordinal among data records (header excluded) */
	const char *raw; /* the input bytes of the record, terminator included */
	size_t raw_len;
	bool raw_truncated; /* the record exceeded max_record_bytes: raw holds its start */
	bool utf8_valid; /* every field is well-formed UTF-8 */
	const char *error; /* NULL, or what is malformed, naming the line */
};

struct st_csv_reader;

/* Checks the options and returns a reader; with opts->header it reads the
 * header row now.  FL_ERR_BAD_REQUEST for a bad delimiter, a malformed or
 * non-UTF-8 header row; FL_ERR_IO from the source; FL_ERR_NOMEM.  An empty
 * input is not an error: the header then has no fields.  *out untouched on
 * failure. */
int st_csv_reader_open(const struct st_csv_opts *opts, struct st_csv_reader **out,
                       struct fl_err *err) FL_MUST_CHECK;

/* The header row (valid until st_csv_reader_free), or NULL without
 * opts->header. */
const struct st_csv_record *st_csv_reader_header(const struct st_csv_reader *r);

/* Reads the next data record into *out, or sets *out = NULL at the end of
 * the input.  A malformed record is still a success: (*out)->error says why.
 * The record and its fields are owned by the reader and valid until the
 * next call.  -1 only for FL_ERR_IO from the source and FL_ERR_NOMEM; the
 * reader is then unusable and can only be freed. */
int st_csv_reader_next(struct st_csv_reader *r, const struct st_csv_record **out,
                       struct fl_err *err) FL_MUST_CHECK;

/* Bytes consumed from the source so far (BOM included). */
uint64_t st_csv_reader_offset(const struct st_csv_reader *r);

/* Releases the reader; accepts NULL. */
void st_csv_reader_free(struct st_csv_reader *r);

#endif
