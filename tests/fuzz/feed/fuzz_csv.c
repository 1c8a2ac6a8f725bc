/* fuzz_csv.c - the CSV reader (storage/feed/csv.c) on arbitrary bytes.
 *
 * The first input byte picks the options (delimiter, header, blank lines,
 * small limits); the rest is the file.  Invariants: a record is either an
 * error with no fields or fields that are NUL-terminated, within
 * max_field_bytes and flagged UTF-8 exactly when they are; raw bytes stay
 * within max_record_bytes and, when nothing is truncated or skipped, add up
 * to the input; line and record numbers only grow; reading one byte at a
 * time gives the same records as reading all at once; and the good records,
 * written back out with every field quoted, read back as the same fields. */
#include <stdbool.h>
#include <string.h>

#include "base/buf.h"
#include "csv.h"
#include "fuzz.h"
#include "json.h"

struct trickle {
	struct st_source source;
	const uint8_t *p;
	size_t len, pos, step;
};

static int trickle_read(void *ctx, void *p, size_t cap, size_t *got, struct fl_err *err)
{
	struct trickle *t = ctx;
	size_t n = t->len - t->pos;

	(void)err;
	if (n > t->step)
		n = t->step;
	if (n > cap)
		n = cap;
	if (n > 0)
		memcpy(p, t->p + t->pos, n);
	t->pos += n;
	*got = n;
	return 0;
}

static void put_sep(struct st_buf *b, uint8_t c)
{
	FUZZ_CHECK(st_buf_put_u8(b, c) == 0);
}

/* Reads everything; renders each record into `log` (fields separated by
 * 0x00 0xff, records by 0x00 0xfe) and the good ones, re-encoded, into
 * `again` when it is not NULL. */
static void read_all(const struct st_csv_opts *base, const uint8_t *p, size_t n, size_t step,
                     struct st_buf *log, struct st_buf *again)
{
	struct trickle t = {{trickle_read, &t}, p, n, 0, step};
	struct st_csv_opts o = *base;
	struct st_csv_reader *r;
	const struct st_csv_record *rec;
	struct fl_err err = {0};
	uint64_t last_line = 0, number = 0;
	size_t raw_total = 0;
	bool complete = true;
	char d = o.delimiter ? o.delimiter : ',';

	o.source = &t.source;
	if (st_csv_reader_open(&o, &r, &err) != 0) {
		FUZZ_CHECK(err.kind == FL_ERR_BAD_REQUEST && err.msg[0] != '\0');
		FUZZ_CHECK(o.header);
		put_sep(log, 'E');
		return;
	}
	if (o.header) {
		const struct st_csv_record *h = st_csv_reader_header(r);

		FUZZ_CHECK(h != NULL && h->error == NULL && h->utf8_valid);
		raw_total += h->raw_len;
		last_line = h->line;
	}
	for (;;) {
		FUZZ_CHECK(st_csv_reader_next(r, &rec, &err) == 0);
		if (rec == NULL)
			break;
		FUZZ_CHECK(rec->number == ++number);
		FUZZ_CHECK(rec->line >= last_line);
		last_line = rec->line;
		FUZZ_CHECK(rec->raw_len <= o.max_record_bytes);
		FUZZ_CHECK(!rec->raw_truncated || rec->error != NULL);
		raw_total += rec->raw_len;
		if (rec->raw_truncated)
			complete = false;
		FUZZ_CHECK(st_buf_append(log, &rec->line, sizeof(rec->line)) == 0);
		if (rec->error != NULL) {
			FUZZ_CHECK(rec->n_fields == 0 && rec->fields == NULL);
			FUZZ_CHECK(strncmp(rec->error, "line ", 5) == 0);
			FUZZ_CHECK(st_buf_append(log, rec->error, strlen(rec->error)) == 0);
		} else {
			bool valid = true;

			FUZZ_CHECK(rec->n_fields >= 1);
			for (size_t i = 0; i < rec->n_fields; i++) {
				const struct st_csv_field *f = &rec->fields[i];

				FUZZ_CHECK(f->len <= o.max_field_bytes);
				FUZZ_CHECK(f->p[f->len] == '\0');
				valid = valid && fl_utf8_valid(f->p, f->len);
				FUZZ_CHECK(st_buf_append(log, f->p, f->len) == 0);
				put_sep(log, 0);
				put_sep(log, f->quoted ? 0xfd : 0xff);
				if (again != NULL) {
					if (i > 0)
						put_sep(again, (uint8_t)d);
					put_sep(again, '"');
					for (size_t k = 0; k < f->len; k++) {
						if (f->p[k] == '"')
							put_sep(again, '"');
						put_sep(again, (uint8_t)f->p[k]);
					}
					put_sep(again, '"');
				}
			}
			if (again != NULL)
				put_sep(again, '\n');
			FUZZ_CHECK(valid == rec->utf8_valid);
		}
		put_sep(log, 0);
		put_sep(log, 0xfe);
	}
	if (o.keep_blank_lines && complete) {
		size_t bom = n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;

		FUZZ_CHECK(raw_total == n - bom);
	}
	FUZZ_CHECK(st_csv_reader_offset(r) == n);
	st_csv_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char delims[4] = {',', ';', '\t', '|'};
	struct st_csv_opts o = {0};
	struct st_buf a, b, again, back;
	uint8_t sel;

	if (size < 1)
		return 0;
	sel = data[0];
	data++;
	size--;
	o.delimiter = delims[sel & 3];
	o.header = (sel & 4) != 0;
	o.keep_blank_lines = (sel & 8) != 0;
	o.max_field_bytes = (sel & 16) ? 8 : 4096;
	o.max_record_bytes = (sel & 32) ? 24 : 65536;
	st_buf_init(&a, NULL);
	st_buf_init(&b, NULL);
	st_buf_init(&again, NULL);
	st_buf_init(&back, NULL);
	read_all(&o, data, size, SIZE_MAX, &a, &again);
	read_all(&o, data, size, (sel >> 6) + 1, &b, NULL);
	FUZZ_CHECK(a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0));

	/* Round trip: the good records, quoted, read back as the same fields. */
	if (!o.header) {
		struct st_csv_opts q = o;
		struct trickle t = {{trickle_read, &t}, again.data, again.len, 0, SIZE_MAX};
		struct st_csv_reader *r;
		const struct st_csv_record *rec;
		struct fl_err err;

		q.max_field_bytes = 1 << 20;
		q.max_record_bytes = 1 << 22;
		q.keep_blank_lines = true;
		q.source = &t.source;
		FUZZ_CHECK(st_csv_reader_open(&q, &r, &err) == 0);
		st_buf_reset(&back);
		for (;;) {
			FUZZ_CHECK(st_csv_reader_next(r, &rec, &err) == 0);
			if (rec == NULL)
				break;
			FUZZ_CHECK(rec->error == NULL);
			for (size_t i = 0; i < rec->n_fields; i++) {
				FUZZ_CHECK(st_buf_append(&back, rec->fields[i].p,
				                         rec->fields[i].len) == 0);
				put_sep(&back, 0);
			}
			put_sep(&back, 0xfe);
		}
		st_csv_reader_free(r);
		/* Compare with the fields of the good records of the original. */
		{
			struct st_buf want;
			struct trickle t2 = {{trickle_read, &t2}, data, size, 0, SIZE_MAX};
			struct st_csv_opts o2 = o;

			st_buf_init(&want, NULL);
			o2.source = &t2.source;
			FUZZ_CHECK(st_csv_reader_open(&o2, &r, &err) == 0);
			for (;;) {
				FUZZ_CHECK(st_csv_reader_next(r, &rec, &err) == 0);
				if (rec == NULL)
					break;
				if (rec->error != NULL)
					continue;
				for (size_t i = 0; i < rec->n_fields; i++) {
					FUZZ_CHECK(st_buf_append(&want, rec->fields[i].p,
					                         rec->fields[i].len) == 0);
					put_sep(&want, 0);
				}
				put_sep(&want, 0xfe);
			}
			st_csv_reader_free(r);
			FUZZ_CHECK(want.len == back.len &&
			           (want.len == 0 || memcmp(want.data, back.data, want.len) == 0));
			st_buf_free(&want);
		}
	}
	st_buf_free(&a);
	st_buf_free(&b);
	st_buf_free(&again);
	st_buf_free(&back);
	return 0;
}
