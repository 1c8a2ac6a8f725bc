/* csv.c - streaming CSV reader (RFC 4180, "Common Format and MIME Type for
 * Comma-Separated Values Files", section 2, with the usual relaxations:
 * LF or a lone CR also ends a record, any one-byte delimiter, a UTF-8 BOM).
 *
 * The reader is a byte-level state machine over one input chunk at a time.
 * A record's raw bytes are appended to `raw` as they are consumed and its
 * decoded fields to `vals`, each followed by a NUL; the field pointers are
 * made only when the record is complete, because `vals` may move while it
 * grows.
 *
 * Resynchronisation after an error, chosen so that one bad row costs one
 * row and the reader never guesses:
 *   - a quote inside an unquoted field, or a byte other than a delimiter,
 *     a quote or a line break after a closing quote: the record is
 *     malformed; the reader discards up to and including the next line
 *     break, ignoring quotes, and the next record starts after it;
 *   - a field or record over its limit: the record is still parsed
 *     structurally to its real end (quotes respected) without storing more
 *     than the limits; raw keeps the first max_record_bytes bytes;
 *   - a quoted field still open at end of input: by RFC 4180 everything to
 *     the end is inside it, so the record runs to the end of input and is
 *     reported as malformed; there is nothing after it.
 * The first error of a record is the one reported.
 *
 * Lines are counted as the input shows them: CRLF, LF and a lone CR each
 * end one line, inside quoted fields too, so `line` matches an editor's.
 *
 * Invariants: raw.len <= max_record_bytes; each stored field holds at most
 * max_field_bytes; nothing grows beyond one record plus one chunk. */
#include "csv.h"

#include <stdio.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "base/buf.h"
#include "json.h"

#define CHUNK_BYTES ((size_t)64 << 10)
#define COPY_SLACK 16 /* allocated past the chunk: see field_put */

enum csv_state {
	S_FIELD_START, /* at the start of a field */
	S_UNQUOTED, /* inside an unquoted field */
	S_QUOTED, /* inside a quoted field */
	S_QUOTE_SEEN, /* a quote inside a quoted field: closing, or the first of two */
	S_SKIP, /* malformed record: discarding to the end of the line */
	S_AFTER_CR, /* the record ended with CR; an LF right after belongs to it */
};

struct field_meta {
	size_t len;
	bool quoted;
};

/* Everything one record owns; the header keeps its own copy. */
struct rec_store {
	struct st_buf raw;
	struct st_buf vals;
	struct field_meta *meta;
	struct st_csv_field *fields;
	size_t n, cap; /* fields used and allocated in meta */
	size_t fcap; /* allocated in fields */
	struct st_csv_record rec;
	char msg[256];
};

struct st_csv_reader {
	const struct st_alloc *alloc;
	const struct st_source *src;
	uint8_t delim;
	/* Bytes that end a run inside an unquoted (stop_unq) or quoted
	 * (stop_q) field: one table load a byte instead of four compares. */
	bool stop_unq[256];
	bool stop_q[256];
	/* The same sets as bytes, for run_end's 16-at-a-time search (stop_q's
	 * three padded with a repeat). */
	uint8_t unq_bytes[4], q_bytes[4];
	bool keep_blank;
	size_t max_field, max_record;

	uint8_t *in;
	size_t in_len, in_pos;
	bool in_eof;
	bool started; /* the BOM check is done */
	uint64_t offset; /* bytes consumed from the source */
	uint64_t line; /* the line the next byte is on */
	bool prev_cr; /* the last byte consumed was a CR line break */
	uint64_t number; /* data records returned */

	struct rec_store cur;
	struct rec_store hdr;
	bool has_hdr;

	/* The record being read. */
	enum csv_state state;
	uint64_t rec_line;
	uint64_t quote_line; /* where the open quoted field started */
	size_t field_len;
	bool field_quoted;
	bool content; /* a byte other than the final line break was consumed */
	bool bad; /* an error was recorded in cur.msg */
	bool stop; /* store no more fields (error or limit) */
	bool raw_trunc;
	bool high; /* a field byte with its high bit was seen (run_end) */
};

static void store_init(struct rec_store *s, const struct st_alloc *a)
{
	memset(s, 0, sizeof(*s));
	st_buf_init(&s->raw, a);
	st_buf_init(&s->vals, a);
}

static void store_free(struct rec_store *s, const struct st_alloc *a)
{
	st_buf_free(&s->raw);
	st_buf_free(&s->vals);
	st_free(a, s->meta);
	st_free(a, s->fields);
}

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "csv: out of memory");
}

/* Records the record's first error; later ones are consequences. */
static void fail(struct st_csv_reader *r, const char *what)
{
	if (!r->bad) {
		snprintf(r->cur.msg, sizeof(r->cur.msg), "%s", what);
		r->bad = true;
	}
	r->stop = true;
}

static void begin_record(struct st_csv_reader *r)
{
	r->cur.raw.len = 0;
	r->cur.vals.len = 0;
	r->cur.n = 0;
	r->state = S_FIELD_START;
	r->rec_line = r->line;
	r->field_len = 0;
	r->field_quoted = false;
	r->content = false;
	r->bad = false;
	r->stop = false;
	r->raw_trunc = false;
	r->high = false;
}

static void count_break(struct st_csv_reader *r, uint8_t c)
{
	if (c == '\r') {
		r->line++;
		r->prev_cr = true;
	} else {
		if (!r->prev_cr)
			r->line++;
		r->prev_cr = false;
	}
}

/* Appends n bytes of the field.  in_chunk: p is inside r->in, which has
 * COPY_SLACK readable bytes past its end, so a short field is copied as 16
 * fixed bytes (two moves) instead of a memcpy call per field; only n of
 * them count. */
static int field_put(struct st_csv_reader *r, const uint8_t *p, size_t n, bool in_chunk)
{
	char msg[160];

	if (r->stop || n == 0)
		return 0;
	if (n > r->max_field - r->field_len) {
		snprintf(msg, sizeof(msg),
		         "line %llu: field %zu exceeds max_field_bytes (%zu bytes)",
		         (unsigned long long)r->line, r->cur.n + 1, r->max_field);
		fail(r, msg);
		return 0;
	}
	if (in_chunk && n <= COPY_SLACK) {
		if (st_buf_reserve(&r->cur.vals, COPY_SLACK) != 0)
			return -1;
		memcpy(r->cur.vals.data + r->cur.vals.len, p, COPY_SLACK);
		r->cur.vals.len += n;
	} else if (st_buf_append(&r->cur.vals, p, n) != 0) {
		return -1;
	}
	r->field_len += n;
	return 0;
}

static int field_end(struct st_csv_reader *r)
{
	struct rec_store *s = &r->cur;

	if (!r->stop) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 16;
			struct field_meta *m = st_realloc(r->alloc, s->meta, cap * sizeof(*m));

			if (m == NULL)
				return -1;
			s->meta = m;
			s->cap = cap;
		}
		if (st_buf_put_u8(&s->vals, 0) != 0)
			return -1;
		s->meta[s->n].len = r->field_len;
		s->meta[s->n].quoted = r->field_quoted;
		s->n++;
	}
	r->field_len = 0;
	r->field_quoted = false;
	r->state = S_FIELD_START;
	return 0;
}

static int raw_put(struct st_csv_reader *r, const uint8_t *p, size_t n)
{
	r->offset += n;
	if (r->raw_trunc || n == 0)
		return 0;
	return st_buf_append(&r->cur.raw, p, n); /* scan() keeps it within the limit */
}

/* The first position in [pos, end) whose byte is in the set (stop, as a
 * table and as its four bytes), or end.  With SSE2, sixteen bytes are
 * compared at a time while sixteen remain; the table finishes the tail.
 * *high is set when a byte of the run has its high bit (a UTF-8 sequence:
 * a record without one needs no UTF-8 pass). */
static size_t run_end(const bool stop[256], const uint8_t bytes[4], const uint8_t *in, size_t pos,
                      size_t end, bool *high)
{
	unsigned acc = 0;
#ifdef __SSE2__
	const __m128i b0 = _mm_set1_epi8((char)bytes[0]), b1 = _mm_set1_epi8((char)bytes[1]);
	const __m128i b2 = _mm_set1_epi8((char)bytes[2]), b3 = _mm_set1_epi8((char)bytes[3]);

	while (end - pos >= 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(in + pos));
		__m128i m =
		        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, b0), _mm_cmpeq_epi8(x, b1)),
		                     _mm_or_si128(_mm_cmpeq_epi8(x, b2), _mm_cmpeq_epi8(x, b3)));
		unsigned mask = (unsigned)_mm_movemask_epi8(m);
		unsigned hi = (unsigned)_mm_movemask_epi8(x);

		if (mask != 0) {
			/* the run's bytes and its stop, not those after (a high
			 * delimiter only makes the flag conservative) */
			if ((acc | (hi & (mask ^ (mask - 1)))) != 0)
				*high = true;
			return pos + (size_t)__builtin_ctz(mask);
		}
		acc |= hi;
		pos += 16;
	}
#else
	(void)bytes;
#endif
	while (pos < end && !stop[in[pos]])
		acc |= in[pos++] & 0x80;
	if (acc != 0)
		*high = true;
	return pos;
}

/* Consumes the current chunk until the record ends (*done) or the chunk
 * runs out.  -1 only when out of memory. */
static int scan(struct st_csv_reader *r, bool *done)
{
	const uint8_t *in = r->in;
	const uint8_t d = r->delim;
	size_t pos = r->in_pos, end = r->in_len, mark = pos, s;
	char msg[160];
	uint8_t c;

	/* Stop where the record would outgrow max_record_bytes, so that the
	 * limit is noticed at the same byte however the input is chunked. */
	if (!r->raw_trunc && end - pos > r->max_record - r->cur.raw.len)
		end = pos + (r->max_record - r->cur.raw.len);
	*done = false;
	while (pos < end && !*done) {
		c = in[pos];
		switch (r->state) {
		case S_AFTER_CR:
			if (c == '\n') {
				count_break(r, c);
				pos++;
			}
			*done = true;
			break;
		case S_FIELD_START:
			if (c == '"') {
				r->field_quoted = true;
				r->quote_line = r->line;
				r->state = S_QUOTED;
				r->content = true;
				r->prev_cr = false;
				pos++;
			} else if (c == d) {
				r->content = true;
				r->prev_cr = false;
				pos++;
				if (field_end(r) != 0)
					return -1;
			} else if (c == '\r' || c == '\n') {
				count_break(r, c);
				pos++;
				if (field_end(r) != 0)
					return -1;
				if (c == '\r')
					r->state = S_AFTER_CR;
				else
					*done = true;
			} else {
				r->state = S_UNQUOTED;
			}
			break;
		case S_UNQUOTED:
			s = pos;
			pos = run_end(r->stop_unq, r->unq_bytes, in, pos, end, &r->high);
			c = pos < end ? in[pos] : 0;
			if (pos > s) {
				r->content = true;
				r->prev_cr = false;
				if (field_put(r, in + s, pos - s, true) != 0)
					return -1;
			}
			if (pos == end)
				break;
			if (c == d) {
				/* What S_FIELD_START does with it, without the trip
				 * there; a plain byte next starts the next field here. */
				r->content = true;
				r->prev_cr = false;
				pos++;
				if (field_end(r) != 0)
					return -1;
				if (pos < end && !r->stop_unq[in[pos]])
					r->state = S_UNQUOTED;
				break;
			}
			if (c == '"') {
				snprintf(msg, sizeof(msg),
				         "line %llu: field %zu: quote inside an unquoted field",
				         (unsigned long long)r->line, r->cur.n + 1);
				fail(r, msg);
				r->state = S_SKIP;
				break;
			}
			r->state = S_FIELD_START; /* the delimiter or line break ends it there */
			break;
		case S_QUOTED:
			s = pos;
			pos = run_end(r->stop_q, r->q_bytes, in, pos, end, &r->high);
			c = pos < end ? in[pos] : 0;
			if (pos > s) {
				r->prev_cr = false;
				if (field_put(r, in + s, pos - s, true) != 0)
					return -1;
			}
			if (pos == end)
				break;
			if (c == '"') {
				r->prev_cr = false;
				r->state = S_QUOTE_SEEN;
			} else {
				count_break(r, c);
				if (field_put(r, &c, 1, false) != 0)
					return -1;
			}
			pos++;
			break;
		case S_QUOTE_SEEN:
			if (c == '"') {
				if (field_put(r, &c, 1, false) != 0)
					return -1;
				r->state = S_QUOTED;
				pos++;
			} else if (c == d || c == '\r' || c == '\n') {
				r->state = S_FIELD_START; /* handled there */
			} else {
				snprintf(
				        msg, sizeof(msg),
				        "line %llu: field %zu: unexpected byte after the closing quote",
				        (unsigned long long)r->line, r->cur.n + 1);
				fail(r, msg);
				r->state = S_SKIP;
			}
			break;
		case S_SKIP:
			s = pos;
			while (pos < end && (c = in[pos]) != '\r' && c != '\n')
				pos++;
			if (pos > s)
				r->prev_cr = false;
			if (pos == end)
				break;
			count_break(r, c);
			pos++;
			if (c == '\r')
				r->state = S_AFTER_CR;
			else
				*done = true;
			break;
		}
	}
	r->in_pos = pos;
	if (raw_put(r, in + mark, pos - mark) != 0)
		return -1;
	if (!*done && pos == end && end < r->in_len) {
		/* The next byte would be the record's (max_record_bytes + 1)th,
		 * unless the record already ended with a CR it does not follow. */
		if (r->state == S_AFTER_CR && in[pos] != '\n') {
			*done = true;
		} else {
			r->raw_trunc = true;
			snprintf(msg, sizeof(msg),
			         "line %llu: record exceeds max_record_bytes (%zu bytes)",
			         (unsigned long long)r->rec_line, r->max_record);
			fail(r, msg);
		}
	}
	return 0;
}

/* Ends the record at end of input, as its state requires. */
static int finish_at_eof(struct st_csv_reader *r)
{
	char msg[160];

	switch (r->state) {
	case S_FIELD_START:
	case S_UNQUOTED:
	case S_QUOTE_SEEN: return field_end(r);
	case S_QUOTED:
		snprintf(
		        msg, sizeof(msg),
		        "line %llu: quoted field opened at line %llu is not closed before the end of input",
		        (unsigned long long)r->line, (unsigned long long)r->quote_line);
		fail(r, msg);
		return 0;
	case S_SKIP:
	case S_AFTER_CR: return 0;
	}
	return 0;
}

static int refill(struct st_csv_reader *r, struct fl_err *err)
{
	size_t got = 0;

	r->in_pos = 0;
	r->in_len = 0;
	if (r->in_eof)
		return 0;
	if (r->src->read(r->src->ctx, r->in, CHUNK_BYTES, &got, err) != 0)
		return -1;
	if (got > CHUNK_BYTES)
		return fl_err_set(err, FL_ERR_INTERNAL, "csv: source returned more than asked");
	if (got == 0)
		r->in_eof = true;
	r->in_len = got;
	return 0;
}

/* Skips a UTF-8 BOM at the very start, reading until three bytes or the
 * end are there (a source may hand out one byte at a time). */
static int skip_bom(struct st_csv_reader *r, struct fl_err *err)
{
	static const uint8_t bom[3] = {0xef, 0xbb, 0xbf};

	while (r->in_len < 3 && !r->in_eof) {
		size_t got = 0;

		if (r->src->read(r->src->ctx, r->in + r->in_len, CHUNK_BYTES - r->in_len, &got,
		                 err) != 0)
			return -1;
		if (got > CHUNK_BYTES - r->in_len)
			return fl_err_set(err, FL_ERR_INTERNAL,
			                  "csv: source returned more than asked");
		if (got == 0)
			r->in_eof = true;
		r->in_len += got;
	}
	if (r->in_len >= 3 && memcmp(r->in, bom, 3) == 0) {
		r->in_pos = 3;
		r->offset += 3;
	}
	r->started = true;
	return 0;
}

/* Turns the stored fields into the public record. */
static int publish(struct st_csv_reader *r, struct rec_store *s)
{
	struct st_csv_record *rec = &s->rec;

	memset(rec, 0, sizeof(*rec));
	rec->line = r->rec_line;
	rec->raw = (const char *)s->raw.data;
	rec->raw_len = s->raw.len;
	if (rec->raw == NULL)
		rec->raw = "";
	rec->raw_truncated = r->raw_trunc;
	rec->utf8_valid = true;
	if (r->bad) {
		rec->error = s->msg;
		rec->utf8_valid = fl_utf8_valid(rec->raw, rec->raw_len);
		return 0;
	}
	if (s->n > 0) {
		const char *p = (const char *)s->vals.data;
		struct st_csv_field *f = s->fields;

		if (s->fcap < s->n) {
			f = st_realloc(r->alloc, s->fields, s->cap * sizeof(*f));
			if (f == NULL)
				return -1;
			s->fields = f;
			s->fcap = s->cap;
		}
		for (size_t i = 0; i < s->n; i++) {
			f[i].p = p;
			f[i].len = s->meta[i].len;
			f[i].quoted = s->meta[i].quoted;
			p += f[i].len + 1;
		}
		/* One pass over all the fields: they are separated by NUL bytes,
		 * which no multi-byte sequence contains, so the whole is valid
		 * exactly when every field is. */
		rec->utf8_valid =
		        !r->high || fl_utf8_valid((const char *)s->vals.data, s->vals.len);
		rec->fields = f;
	}
	rec->n_fields = s->n;
	return 0;
}

/* Reads one record into r->cur; *got is false at the end of input. */
static int read_record(struct st_csv_reader *r, bool *got, struct fl_err *err)
{
	bool done;

	*got = false;
	if (!r->started && skip_bom(r, err) != 0)
		return -1;
	for (;;) {
		begin_record(r);
		done = false;
		while (!done) {
			if (r->in_pos == r->in_len) {
				if (refill(r, err) != 0)
					return -1;
				if (r->in_len == 0) {
					if (r->state == S_FIELD_START && !r->content &&
					    r->cur.n == 0 && r->cur.raw.len == 0)
						return 0; /* nothing left */
					if (finish_at_eof(r) != 0)
						return nomem(err);
					break;
				}
			}
			if (scan(r, &done) != 0)
				return nomem(err);
		}
		if (r->content || r->keep_blank || r->bad)
			break;
		/* A blank line: no record. */
	}
	if (publish(r, &r->cur) != 0)
		return nomem(err);
	*got = true;
	return 0;
}

int st_csv_reader_open(const struct st_csv_opts *opts, struct st_csv_reader **out,
                       struct fl_err *err)
{
	struct st_csv_reader *r = NULL;
	char d = opts->delimiter ? opts->delimiter : ',';
	bool got;

	if (opts->source == NULL || opts->source->read == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "csv: no source");
	if (d == '"' || d == '\r' || d == '\n')
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "csv: the delimiter cannot be a quote or a line break");
	r = st_calloc(opts->alloc, 1, sizeof(*r));
	if (r == NULL)
		return nomem(err);
	r->alloc = opts->alloc;
	r->src = opts->source;
	r->delim = (uint8_t)d;
	r->stop_unq[(uint8_t)d] = true;
	r->stop_unq['"'] = r->stop_q['"'] = true;
	r->stop_unq['\r'] = r->stop_q['\r'] = true;
	r->stop_unq['\n'] = r->stop_q['\n'] = true;
	memcpy(r->unq_bytes, (const uint8_t[4]){(uint8_t)d, '"', '\r', '\n'}, 4);
	memcpy(r->q_bytes, (const uint8_t[4]){'"', '"', '\r', '\n'}, 4);
	r->keep_blank = opts->keep_blank_lines;
	r->max_field =
	        opts->max_field_bytes ? opts->max_field_bytes : ST_CSV_DEFAULT_MAX_FIELD_BYTES;
	r->max_record =
	        opts->max_record_bytes ? opts->max_record_bytes : ST_CSV_DEFAULT_MAX_RECORD_BYTES;
	r->line = 1;
	store_init(&r->cur, r->alloc);
	store_init(&r->hdr, r->alloc);
	r->in = st_malloc(r->alloc, CHUNK_BYTES + COPY_SLACK);
	if (r->in == NULL) {
		nomem(err);
		goto fail;
	}
	if (opts->header) {
		struct rec_store tmp;

		if (read_record(r, &got, err) != 0)
			goto fail;
		if (got && r->cur.rec.error != NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST, "csv header row: %s", r->cur.rec.error);
			goto fail;
		}
		if (got && !r->cur.rec.utf8_valid) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "csv header row (line %llu) is not valid UTF-8",
			           (unsigned long long)r->cur.rec.line);
			goto fail;
		}
		if (!got) {
			r->cur.rec.fields = NULL;
			r->cur.rec.n_fields = 0;
			r->cur.rec.raw = "";
			r->cur.rec.raw_len = 0;
			r->cur.rec.line = r->line;
			r->cur.rec.utf8_valid = true;
		}
		/* The header keeps these buffers; data records get fresh ones. */
		tmp = r->hdr;
		r->hdr = r->cur;
		r->cur = tmp;
		r->has_hdr = true;
	}
	*out = r;
	return 0;
fail:
	st_csv_reader_free(r);
	return -1;
}

const struct st_csv_record *st_csv_reader_header(const struct st_csv_reader *r)
{
	return r->has_hdr ? &r->hdr.rec : NULL;
}

int st_csv_reader_next(struct st_csv_reader *r, const struct st_csv_record **out,
                       struct fl_err *err)
{
	bool got;

	if (read_record(r, &got, err) != 0)
		return -1;
	if (!got) {
		*out = NULL;
		return 0;
	}
	r->cur.rec.number = ++r->number;
	*out = &r->cur.rec;
	return 0;
}

uint64_t st_csv_reader_offset(const struct st_csv_reader *r)
{
	return r->offset;
}

void st_csv_reader_free(struct st_csv_reader *r)
{
	if (r == NULL)
		return;
	store_free(&r->cur, r->alloc);
	store_free(&r->hdr, r->alloc);
	st_free(r->alloc, r->in);
	st_free(r->alloc, r);
}
