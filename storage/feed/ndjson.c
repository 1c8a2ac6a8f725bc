/* ndjson.c - newline-delimited JSON reader (ndjson-spec 1.0: each line one
 * JSON text, LF separated, CRLF tolerated; Floe additionally requires each
 * text to be an object, as a row is).
 *
 * Bytes are gathered into `line` up to and including the LF, then parsed
 * without the line break.  A line longer than max_line_bytes keeps only its
 * first max_line_bytes bytes, the rest is discarded up to the LF, and the
 * record reports the limit: a line break is the one resynchronisation point
 * NDJSON has, so the next line is always read normally.
 *
 * Invariants: line.len <= max_line_bytes; at most one parsed object is
 * alive (the current record's). */
#include "ndjson.h"

#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "json.h"

#define CHUNK_BYTES ((size_t)64 << 10)

struct st_ndjson_reader {
	const struct st_alloc *alloc;
	const struct st_source *src;
	size_t max_line;
	int max_depth;

	uint8_t *in;
	size_t in_len, in_pos;
	bool in_eof;
	bool started;
	uint64_t line_no; /* lines begun so far */
	uint64_t number;

	struct st_buf line;
	bool trunc;
	struct st_ndjson_record rec;
	char msg[256];
};

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "ndjson: out of memory");
}

int st_ndjson_reader_open(const struct st_ndjson_opts *opts, struct st_ndjson_reader **out,
                          struct fl_err *err)
{
	struct st_ndjson_reader *r;

	if (opts->source == NULL || opts->source->read == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "ndjson: no source");
	r = st_calloc(opts->alloc, 1, sizeof(*r));
	if (r == NULL)
		return nomem(err);
	r->alloc = opts->alloc;
	r->src = opts->source;
	r->max_line =
	        opts->max_line_bytes ? opts->max_line_bytes : ST_NDJSON_DEFAULT_MAX_LINE_BYTES;
	r->max_depth = opts->max_depth > 0 ? opts->max_depth : ST_NDJSON_DEFAULT_MAX_DEPTH;
	st_buf_init(&r->line, r->alloc);
	r->in = st_malloc(r->alloc, CHUNK_BYTES);
	if (r->in == NULL) {
		st_free(r->alloc, r);
		return nomem(err);
	}
	*out = r;
	return 0;
}

static int fill(struct st_ndjson_reader *r, size_t keep, struct fl_err *err)
{
	size_t got = 0;

	if (keep > 0 && r->in_pos > 0)
		memmove(r->in, r->in + r->in_pos, keep);
	r->in_pos = 0;
	r->in_len = keep;
	if (r->in_eof)
		return 0;
	if (r->src->read(r->src->ctx, r->in + keep, CHUNK_BYTES - keep, &got, err) != 0)
		return -1;
	if (got > CHUNK_BYTES - keep)
		return fl_err_set(err, FL_ERR_INTERNAL, "ndjson: source returned more than asked");
	if (got == 0)
		r->in_eof = true;
	r->in_len += got;
	return 0;
}

/* Skips a UTF-8 BOM at the start, reading until three bytes are there. */
static int skip_bom(struct st_ndjson_reader *r, struct fl_err *err)
{
	while (r->in_len - r->in_pos < 3 && !r->in_eof)
		if (fill(r, r->in_len - r->in_pos, err) != 0)
			return -1;
	if (r->in_len - r->in_pos >= 3 && memcmp(r->in + r->in_pos, "\xef\xbb\xbf", 3) == 0)
		r->in_pos += 3;
	r->started = true;
	return 0;
}

static int line_put(struct st_ndjson_reader *r, const uint8_t *p, size_t n)
{
	size_t room = r->max_line - r->line.len;

	if (r->trunc)
		return 0;
	if (n > room) {
		r->trunc = true;
		n = room;
	}
	return st_buf_append(&r->line, p, n);
}

/* Gathers the next line (LF included when present); *got false at end. */
static int read_line(struct st_ndjson_reader *r, bool *got, struct fl_err *err)
{
	*got = false;
	r->line.len = 0;
	r->trunc = false;
	for (;;) {
		const uint8_t *lf;
		size_t n;

		if (r->in_pos == r->in_len) {
			if (fill(r, 0, err) != 0)
				return -1;
			if (r->in_len == 0) {
				*got = r->line.len > 0 || r->trunc;
				return 0;
			}
		}
		n = r->in_len - r->in_pos;
		lf = memchr(r->in + r->in_pos, '\n', n);
		if (lf != NULL)
			n = (size_t)(lf - (r->in + r->in_pos)) + 1;
		if (line_put(r, r->in + r->in_pos, n) != 0)
			return nomem(err);
		r->in_pos += n;
		if (lf != NULL) {
			*got = true;
			return 0;
		}
	}
}

static bool is_blank(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
			return false;
	return true;
}

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER:
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

/* Parses the gathered line into r->rec; only out-of-memory fails. */
static int parse_line(struct st_ndjson_reader *r, struct fl_err *err)
{
	const char *s = (const char *)r->line.data;
	size_t n = r->line.len;
	json_error_t je;
	json_t *v;
	bool reals;
	int depth;

	if (n > 0 && s[n - 1] == '\n')
		n--;
	if (n > 0 && s[n - 1] == '\r')
		n--;
	if (r->trunc) {
		snprintf(r->msg, sizeof(r->msg), "line %llu: exceeds max_line_bytes (%zu bytes)",
		         (unsigned long long)r->rec.line, r->max_line);
		r->rec.error = r->msg;
		return 0;
	}
	depth = fl_json_depth(s, n);
	if (depth > r->max_depth) {
		snprintf(r->msg, sizeof(r->msg),
		         "line %llu: JSON nesting depth %d exceeds the limit of %d",
		         (unsigned long long)r->rec.line, depth, r->max_depth);
		r->rec.error = r->msg;
		return 0;
	}
	v = json_loadb(s, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	reals = v == NULL && (strstr(je.text, "too big integer") != NULL ||
	                      strstr(je.text, "too big negative integer") != NULL);
	if (reals) {
		/* A whole number beyond int64 (JavaScript writes 1e20 that way) can
		 * only be a floating-point value: read the line with integers as
		 * reals and say so (ints_as_reals), so that the cast takes the
		 * line's exact small integers back and refuses the rest. */
		v = json_loadb(s, n,
		               JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL,
		               &je);
	}
	if (v == NULL) {
		if (json_error_code(&je) == json_error_out_of_memory)
			return nomem(err);
		snprintf(r->msg, sizeof(r->msg), "line %llu: malformed JSON at column %d: %s",
		         (unsigned long long)r->rec.line, je.column, je.text);
		r->rec.error = r->msg;
		return 0;
	}
	if (!json_is_object(v)) {
		snprintf(r->msg, sizeof(r->msg), "line %llu: expected a JSON object, got %s",
		         (unsigned long long)r->rec.line, json_kind(v));
		json_decref(v);
		r->rec.error = r->msg;
		return 0;
	}
	r->rec.obj = v;
	r->rec.ints_as_reals = reals;
	return 0;
}

int st_ndjson_reader_next(struct st_ndjson_reader *r, const struct st_ndjson_record **out,
                          struct fl_err *err)
{
	bool got;

	json_decref(r->rec.obj);
	memset(&r->rec, 0, sizeof(r->rec));
	if (!r->started && skip_bom(r, err) != 0)
		return -1;
	for (;;) {
		if (read_line(r, &got, err) != 0)
			return -1;
		if (!got) {
			*out = NULL;
			return 0;
		}
		r->line_no++;
		if (!r->trunc && is_blank(r->line.data, r->line.len))
			continue;
		break;
	}
	r->rec.line = r->line_no;
	r->rec.number = ++r->number;
	r->rec.raw = (const char *)r->line.data;
	r->rec.raw_len = r->line.len;
	r->rec.raw_truncated = r->trunc;
	if (parse_line(r, err) != 0)
		return -1;
	*out = &r->rec;
	return 0;
}

void st_ndjson_reader_free(struct st_ndjson_reader *r)
{
	if (r == NULL)
		return;
	json_decref(r->rec.obj);
	st_buf_free(&r->line);
	st_free(r->alloc, r->in);
	st_free(r->alloc, r);
}
