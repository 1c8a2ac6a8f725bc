/* test_csv.c - the streaming CSV reader (storage/feed/csv.c), table-driven
 * against RFC 4180 examples and the malformed inputs the reader must
 * resynchronise after.  Every case runs twice: from one memory buffer and
 * from a source that hands out one byte per read, so chunk boundaries fall
 * everywhere; both must agree.  Every allocation is failed in turn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "csv.h"
#include "failalloc.h"

/* A source that returns at most `step` bytes a read. */
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
	memcpy(p, t->p + t->pos, n);
	t->pos += n;
	*got = n;
	return 0;
}

static void trickle_init(struct trickle *t, const void *p, size_t n, size_t step)
{
	t->source.read = trickle_read;
	t->source.ctx = t;
	t->p = p;
	t->len = n;
	t->pos = 0;
	t->step = step;
}

static void put(char *out, size_t cap, size_t *o, const char *p, size_t n)
{
	for (size_t i = 0; i < n && *o + 5 < cap; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '\n')
			*o += (size_t)snprintf(out + *o, cap - *o, "\\n");
		else if (c == '\r')
			*o += (size_t)snprintf(out + *o, cap - *o, "\\r");
		else if (c < 0x20 || c >= 0x7f)
			*o += (size_t)snprintf(out + *o, cap - *o, "\\x%02x", c);
		else
			out[(*o)++] = (char)c;
	}
	out[*o] = '\0';
}

/* Renders every record as @line{f1|f2} (quoted fields in '') or
 * @line!message, and checks the raw bytes: with blank lines kept they must
 * add up to the input (BOM aside). */
static int render(const struct st_csv_opts *base, const char *in, size_t len, size_t step,
                  char *out, size_t cap, struct fl_err *err)
{
	struct trickle t;
	struct st_csv_opts o = *base;
	struct st_csv_reader *r = NULL;
	const struct st_csv_record *rec;
	size_t n = 0, raw_total = 0;
	int rc = -1;

	trickle_init(&t, in, len, step);
	o.source = &t.source;
	out[0] = '\0';
	if (st_csv_reader_open(&o, &r, err) != 0)
		return -1;
	if (st_csv_reader_header(r) != NULL) {
		const struct st_csv_record *h = st_csv_reader_header(r);

		put(out, cap, &n, "H{", 2);
		for (size_t i = 0; i < h->n_fields; i++) {
			if (i > 0)
				put(out, cap, &n, "|", 1);
			put(out, cap, &n, h->fields[i].p, h->fields[i].len);
		}
		put(out, cap, &n, "}", 1);
		raw_total += h->raw_len;
	}
	for (;;) {
		char line[32];

		if (st_csv_reader_next(r, &rec, err) != 0)
			goto out;
		if (rec == NULL)
			break;
		snprintf(line, sizeof(line), "@%llu", (unsigned long long)rec->line);
		put(out, cap, &n, line, strlen(line));
		raw_total += rec->raw_len;
		if (rec->error != NULL) {
			assert_int_equal(rec->n_fields, 0);
			put(out, cap, &n, "!", 1);
			put(out, cap, &n, rec->error, strlen(rec->error));
			continue;
		}
		assert_false(rec->raw_truncated);
		put(out, cap, &n, "{", 1);
		for (size_t i = 0; i < rec->n_fields; i++) {
			const struct st_csv_field *f = &rec->fields[i];

			if (i > 0)
				put(out, cap, &n, "|", 1);
			if (f->quoted)
				put(out, cap, &n, "'", 1);
			put(out, cap, &n, f->p, f->len);
			if (f->quoted)
				put(out, cap, &n, "'", 1);
			assert_int_equal(f->p[f->len], '\0');
		}
		put(out, cap, &n, "}", 1);
		if (!rec->utf8_valid)
			put(out, cap, &n, "~", 1);
	}
	if (o.keep_blank_lines) {
		size_t bom = len >= 3 && memcmp(in, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;

		assert_int_equal(raw_total, len - bom);
		assert_int_equal(st_csv_reader_offset(r), len);
	}
	rc = 0;
out:
	st_csv_reader_free(r);
	return rc;
}

struct csv_case {
	const char *in;
	size_t len; /* 0: strlen(in) */
	char delim;
	bool header;
	bool keep_blank;
	size_t max_field, max_record;
	const char *want;
};

static void run_cases(const struct csv_case *cases, size_t n_cases)
{
	for (size_t i = 0; i < n_cases; i++) {
		const struct csv_case *c = &cases[i];
		size_t len = c->len ? c->len : strlen(c->in);
		struct st_csv_opts o = {0};
		char a[2048], b[2048];
		struct fl_err err = {0};
		size_t steps[] = {SIZE_MAX, 1, 2, 7};

		o.delimiter = c->delim;
		o.header = c->header;
		o.keep_blank_lines = c->keep_blank;
		o.max_field_bytes = c->max_field;
		o.max_record_bytes = c->max_record;
		for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
			int rc = render(&o, c->in, len, steps[s], s == 0 ? a : b, sizeof(a), &err);

			if (rc != 0)
				fail_msg("case %zu: %s", i, err.msg);
			if (s == 0 && strcmp(a, c->want) != 0)
				fail_msg("case %zu: got\n  %s\nwant\n  %s", i, a, c->want);
			if (s > 0 && strcmp(a, b) != 0)
				fail_msg("case %zu step %zu: got\n  %s\nwant\n  %s", i, steps[s], b,
				         a);
		}
	}
}

static void test_well_formed(void **state)
{
	static const struct csv_case cases[] = {
	        {"a,b\nc,d\n", 0, 0, false, true, 0, 0, "@1{a|b}@2{c|d}"},
	        {"a,b\nc,d", 0, 0, false, true, 0, 0, "@1{a|b}@2{c|d}"},
	        {"a,b\r\nc,d\r\n", 0, 0, false, true, 0, 0, "@1{a|b}@2{c|d}"},
	        {"a\rb\r", 0, 0, false, true, 0, 0, "@1{a}@2{b}"},
	        {"a\r\rb", 0, 0, false, false, 0, 0, "@1{a}@3{b}"},
	        {"\"a,b\",\"say \"\"hi\"\"\"\n", 0, 0, false, true, 0, 0, "@1{'a,b'|'say \"hi\"'}"},
	        {"\"x\r\ny\",z\r\nnext,1\r\n", 0, 0, false, true, 0, 0,
	         "@1{'x\\r\\ny'|z}@3{next|1}"},
	        {"\"a\nb\rc\r\nd\",e\nf\n", 0, 0, false, true, 0, 0,
	         "@1{'a\\nb\\rc\\r\\nd'|e}@5{f}"},
	        {",,\n", 0, 0, false, true, 0, 0, "@1{||}"},
	        {"a,\n", 0, 0, false, true, 0, 0, "@1{a|}"},
	        {"a,", 0, 0, false, true, 0, 0, "@1{a|}"},
	        {"\"\"\n", 0, 0, false, true, 0, 0, "@1{''}"},
	        {"\"\"", 0, 0, false, true, 0, 0, "@1{''}"},
	        {"\"\"\"\"", 0, 0, false, true, 0, 0, "@1{'\"'}"},
	        {" a , b \n", 0, 0, false, true, 0, 0, "@1{ a | b }"},
	        {"a\n\n\nb\n", 0, 0, false, false, 0, 0, "@1{a}@4{b}"},
	        {"a\n\n\nb\n", 0, 0, false, true, 0, 0, "@1{a}@2{}@3{}@4{b}"},
	        {"a\r\n\r\nb", 0, 0, false, true, 0, 0, "@1{a}@2{}@3{b}"},
	        {"", 0, 0, false, true, 0, 0, ""},
	        {"\n", 0, 0, false, false, 0, 0, ""},
	        {"\r\n\r\n", 0, 0, false, false, 0, 0, ""},
	        {"\xef\xbb\xbf"
	         "a,b\n",
	         0, 0, false, true, 0, 0, "@1{a|b}"},
	        {"\xef\xbb\xbf", 0, 0, false, true, 0, 0, ""},
	        {"\xef\xbb", 0, 0, false, true, 0, 0, "@1{\\xef\\xbb}~"},
	        {"a;b,c;\"d;e\"\n", 0, ';', false, true, 0, 0, "@1{a|b,c|'d;e'}"},
	        {"a\tb\t\n", 0, '\t', false, true, 0, 0, "@1{a|b|}"},
	        {"a,b\nc\nd,e,f\n", 0, 0, false, true, 0, 0, "@1{a|b}@2{c}@3{d|e|f}"},
	        {"a\0b,c\n", 6, 0, false, true, 0, 0, "@1{a\\x00b|c}"},
	        {"\xff,\xc3\xa9\n", 0, 0, false, true, 0, 0, "@1{\\xff|\\xc3\\xa9}~"},
	        {"\xc3\xa9\n", 0, 0, false, true, 0, 0, "@1{\\xc3\\xa9}"},
	        /* Header rows. */
	        {"x,y\n1,2\n", 0, 0, true, true, 0, 0, "H{x|y}@2{1|2}"},
	        {"x,y\n", 0, 0, true, true, 0, 0, "H{x|y}"},
	        {"x,y", 0, 0, true, true, 0, 0, "H{x|y}"},
	        {"", 0, 0, true, true, 0, 0, "H{}"},
	        {"\n\nx\n\n1\n", 0, 0, true, false, 0, 0, "H{x}@5{1}"},
	        {"\xef\xbb\xbf\"x\",\"y z\"\r\n1,2\r\n", 0, 0, true, true, 0, 0, "H{x|y z}@2{1|2}"},
	        /* Limits that are met exactly are fine. */
	        {"abcd,e\n", 0, 0, false, true, 4, 0, "@1{abcd|e}"},
	        {"abcdefg\n", 0, 0, false, true, 0, 8, "@1{abcdefg}"},
	};

	(void)state;
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_malformed(void **state)
{
	static const struct csv_case cases[] = {
	        {"a,b\"c,d\nx,y\n", 0, 0, false, true, 0, 0,
	         "@1!line 1: field 2: quote inside an unquoted field@2{x|y}"},
	        {"\"ab\"c,d\nx\n", 0, 0, false, true, 0, 0,
	         "@1!line 1: field 1: unexpected byte after the closing quote@2{x}"},
	        {"\"ab\" ,d\r\nx\r\n", 0, 0, false, true, 0, 0,
	         "@1!line 1: field 1: unexpected byte after the closing quote@2{x}"},
	        {"a\n\"bc\nd\n", 0, 0, false, true, 0, 0,
	         "@1{a}@2!line 4: quoted field opened at line 2 is not closed before the end of input"},
	        {"\"", 0, 0, false, true, 0, 0,
	         "@1!line 1: quoted field opened at line 1 is not closed before the end of input"},
	        /* After an error the reader skips to the end of the line, quotes
	         * and all; a quoted record on the next line is read normally. */
	        {"a\"b\n\"c\nd\",e\n", 0, 0, false, true, 0, 0,
	         "@1!line 1: field 1: quote inside an unquoted field@2{'c\\nd'|e}"},
	        {"x\"y\"z\nok\n", 0, 0, false, true, 0, 0,
	         "@1!line 1: field 1: quote inside an unquoted field@2{ok}"},
	        /* An error inside a multi-line record names the line it is on. */
	        {"\"a\nb\"c\nok\n", 0, 0, false, true, 0, 0,
	         "@1!line 2: field 1: unexpected byte after the closing quote@3{ok}"},
	        {"a,b\"\rok\r", 0, 0, false, true, 0, 0,
	         "@1!line 1: field 2: quote inside an unquoted field@2{ok}"},
	        /* Limits: the record is parsed to its real end, quotes respected. */
	        {"abcd,e\nabcde,f\nok\n", 0, 0, false, true, 4, 0,
	         "@1{abcd|e}@2!line 2: field 1 exceeds max_field_bytes (4 bytes)@3{ok}"},
	        {"\"abcdef\nxyz\",1\nok\n", 0, 0, false, true, 4, 0,
	         "@1!line 1: field 1 exceeds max_field_bytes (4 bytes)@3{ok}"},
	        {"a,b\n0123456789,x\nok\n", 0, 0, false, false, 0, 8,
	         "@1{a|b}@2!line 2: record exceeds max_record_bytes (8 bytes)@3{ok}"},
	        /* The limit is noticed at the byte that crosses it, before a
	         * later error, however the input is chunked (a fuzzer finding). */
	        {"0123456789\"x\nok\n", 0, 0, false, false, 0, 8,
	         "@1!line 1: record exceeds max_record_bytes (8 bytes)@2{ok}"},
	        {"0123456\r\nok\n", 0, 0, false, false, 0, 8,
	         "@1!line 1: record exceeds max_record_bytes (8 bytes)@2{ok}"},
	        {"012345\r\nok\n", 0, 0, false, false, 0, 8, "@1{012345}@2{ok}"},
	        {"0123456\rok\n", 0, 0, false, false, 0, 8, "@1{0123456}@2{ok}"},
	        {"\"0123\n456789\",x\nok\n", 0, 0, false, false, 0, 8,
	         "@1!line 1: record exceeds max_record_bytes (8 bytes)@3{ok}"},
	};

	(void)state;
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_truncated_raw(void **state)
{
	static const char in[] = "ok\n0123456789abcdef\nlast\n";
	struct st_mem_source m;
	struct st_csv_opts o = {0};
	struct st_csv_reader *r;
	const struct st_csv_record *rec;
	struct fl_err err;

	(void)state;
	st_mem_source_init(&m, in, strlen(in));
	o.source = &m.source;
	o.max_record_bytes = 5;
	assert_int_equal(st_csv_reader_open(&o, &r, &err), 0);
	assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
	assert_int_equal(rec->raw_len, 3);
	assert_int_equal(rec->number, 1);
	assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
	assert_non_null(rec->error);
	assert_true(rec->raw_truncated);
	assert_int_equal(rec->raw_len, 5);
	assert_memory_equal(rec->raw, "01234", 5);
	assert_int_equal(rec->number, 2);
	assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
	assert_null(rec->error);
	assert_false(rec->raw_truncated);
	assert_int_equal(rec->line, 3);
	assert_int_equal(rec->raw_len, 5);
	assert_memory_equal(rec->raw, "last\n", 5);
	assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
	assert_null(rec);
	/* The end stays the end. */
	assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
	assert_null(rec);
	st_csv_reader_free(r);
}

/* A record's raw bytes are the input's exactly however the input is chunked:
 * kept in the chunk when the record fits there, copied when a refill falls
 * inside it; the header's survive later refills; a record over the limit
 * keeps its first max_record_bytes. */
static void test_raw_bytes_across_chunks(void **state)
{
	static const char in[] = "h1,h2\r\n\"a\r\nb\",c\r\nx\"y,z\n0123456789\nlast";
	static const char *const want[] = {"\"a\r\nb\",c\r\n", "x\"y,z\n", "0123456789", "last"};
	static const size_t steps[] = {1, 2, 3, 5, 7, 64};
	struct trickle t;
	struct st_csv_opts o = {0};
	struct st_csv_reader *r;
	const struct st_csv_record *rec;
	struct fl_err err;

	(void)state;
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		trickle_init(&t, in, strlen(in), steps[k]);
		o.source = &t.source;
		o.header = true;
		o.max_record_bytes = 10;
		assert_int_equal(st_csv_reader_open(&o, &r, &err), 0);
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
			assert_non_null(rec);
			assert_int_equal(rec->raw_len, strlen(want[i]));
			assert_memory_equal(rec->raw, want[i], rec->raw_len);
		}
		assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
		assert_null(rec);
		assert_int_equal(st_csv_reader_header(r)->raw_len, 7);
		assert_memory_equal(st_csv_reader_header(r)->raw, "h1,h2\r\n", 7);
		st_csv_reader_free(r);
	}
}

static void test_raw_bytes(void **state)
{
	static const char in[] = "\"a\r\nb\",c\r\nd\n";
	struct st_mem_source m;
	struct st_csv_opts o = {0};
	struct st_csv_reader *r;
	const struct st_csv_record *rec;
	struct fl_err err;

	(void)state;
	st_mem_source_init(&m, in, strlen(in));
	o.source = &m.source;
	assert_int_equal(st_csv_reader_open(&o, &r, &err), 0);
	assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
	assert_int_equal(rec->raw_len, 10);
	assert_memory_equal(rec->raw, "\"a\r\nb\",c\r\n", 10);
	assert_int_equal(rec->n_fields, 2);
	assert_int_equal(rec->fields[0].len, 4);
	assert_true(rec->fields[0].quoted);
	assert_false(rec->fields[1].quoted);
	assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
	assert_int_equal(rec->line, 3);
	assert_memory_equal(rec->raw, "d\n", 2);
	st_csv_reader_free(r);
}

static void test_bad_options_and_header(void **state)
{
	static const struct {
		const char *in;
		char delim;
		const char *msg;
	} cases[] = {
	        {"a\n", '"', "csv: the delimiter cannot be a quote or a line break"},
	        {"a\n", '\n', "csv: the delimiter cannot be a quote or a line break"},
	        {"a\"b\n1\n", 0, "csv header row: line 1: field 1: quote inside an unquoted field"},
	        {"\"x\n", 0,
	         "csv header row: line 2: quoted field opened at line 1 is not closed before the end of input"},
	        {"\xff\n1\n", 0, "csv header row (line 1) is not valid UTF-8"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct st_mem_source m;
		struct st_csv_opts o = {0};
		struct st_csv_reader *r = (struct st_csv_reader *)0x1;
		struct fl_err err = {0};

		st_mem_source_init(&m, cases[i].in, strlen(cases[i].in));
		o.source = &m.source;
		o.header = true;
		o.delimiter = cases[i].delim;
		assert_int_equal(st_csv_reader_open(&o, &r, &err), -1);
		assert_ptr_equal(r, (struct st_csv_reader *)0x1);
		assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
		assert_string_equal(err.msg, cases[i].msg);
	}
}

static void test_fd_source(void **state)
{
	char path[] = "/tmp/floe-csv-XXXXXX";
	int fd = mkstemp(path);
	struct st_fd_source f;
	struct st_csv_opts o = {0};
	struct st_csv_reader *r;
	const struct st_csv_record *rec;
	struct fl_err err = {0};
	size_t rows = 0;
	FILE *fp;

	(void)state;
	assert_true(fd >= 0);
	fp = fdopen(dup(fd), "w");
	assert_non_null(fp);
	fputs("id,text\n", fp);
	/* Enough records to cross many 64 KiB chunks, with quoted line breaks
	 * and doubled quotes landing on every boundary offset. */
	for (int i = 0; i < 30000; i++)
		fprintf(fp, "%d,\"line %d\r\nsays \"\"%d\"\"\"\r\n", i, i, i);
	fclose(fp);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	st_fd_source_init(&f, fd, path);
	o.source = &f.source;
	o.header = true;
	assert_int_equal(st_csv_reader_open(&o, &r, &err), 0);
	for (;;) {
		char want[64];

		assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
		if (rec == NULL)
			break;
		assert_null(rec->error);
		assert_int_equal(rec->n_fields, 2);
		assert_int_equal(rec->line, 2 + 2 * rows);
		assert_int_equal(strtol(rec->fields[0].p, NULL, 10), (long)rows);
		snprintf(want, sizeof(want), "line %zu\r\nsays \"%zu\"", rows, rows);
		assert_string_equal(rec->fields[1].p, want);
		rows++;
	}
	assert_int_equal(rows, 30000);
	/* The source counts what it read: the whole file, for progress reports. */
	assert_int_equal(f.bytes_read, (uint64_t)lseek(fd, 0, SEEK_END));
	st_csv_reader_free(r);
	close(fd);
	unlink(path);

	/* A read error is fatal and names the source. */
	st_fd_source_init(&f, -1, "broken.csv");
	o.header = false;
	assert_int_equal(st_csv_reader_open(&o, &r, &err), 0);
	assert_int_equal(st_csv_reader_next(r, &rec, &err), -1);
	assert_int_equal(err.kind, FL_ERR_IO);
	assert_non_null(strstr(err.msg, "broken.csv"));
	st_csv_reader_free(r);
}

static void test_alloc_failures(void **state)
{
	static const char in[] =
	        "h1,h2\n\"a\r\nb\",c\nbad\"x\nd,\"e\"\"f\"\n0123456789012345678,x\n";
	bool reached_end = false;

	(void)state;
	for (long k = 1; !reached_end && k < 1000; k++) {
		struct failalloc fa;
		struct st_mem_source m;
		struct st_csv_opts o = {0};
		struct st_csv_reader *r = NULL;
		const struct st_csv_record *rec;
		struct fl_err err = {0};
		int rc;
		size_t n = 0;

		failalloc_init(&fa, k);
		st_mem_source_init(&m, in, strlen(in));
		o.source = &m.source;
		o.header = true;
		o.max_record_bytes = 16;
		o.alloc = &fa.alloc;
		rc = st_csv_reader_open(&o, &r, &err);
		while (rc == 0) {
			rc = st_csv_reader_next(r, &rec, &err);
			if (rc == 0 && rec == NULL)
				break;
			if (rc == 0)
				n++;
		}
		st_csv_reader_free(r);
		assert_int_equal(fa.live, 0);
		if (fa.failed) {
			assert_int_equal(rc, -1);
			assert_int_equal(err.kind, FL_ERR_NOMEM);
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(n, 4);
			reached_end = true;
		}
	}
	assert_true(reached_end);
}

/* render(), or the reader's refusal (a bad header row) as the text. */
static void wide_or_error(const struct st_csv_opts *o, const char *in, size_t len, size_t step,
                          char *out, size_t cap)
{
	struct fl_err err = {0};

	if (render(o, in, len, step, out, cap, &err) != 0)
		snprintf(out, cap, "error %d: %s", (int)err.kind, err.msg);
}

/* The reader looks for the end of a field sixteen bytes at a time when
 * sixteen are in the chunk, a byte at a time otherwise: random inputs full
 * of delimiters, quotes, line breaks, long plain runs and UTF-8 (valid
 * and cut short: a record without a high byte skips the UTF-8 pass) must
 * read the same
 * from one buffer (the wide search) as from one byte per read (never it),
 * whatever the delimiter and limits. */
static void test_wide_scan_matches_bytewise(void **state)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789 ,;\t\"\r\n";
	static const char delims[] = {',', ';', '\t'};
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	char in[700], a[16384], b[16384];

	(void)state;
	for (int k = 0; k < 3000; k++) {
		struct st_csv_opts o = {0};
		size_t len;

#define NEXT() (seed = seed * 6364136223846793005ULL + 1442695040888963407ULL, seed >> 33)
		len = (size_t)(NEXT() % sizeof(in));
		for (size_t i = 0; i < len;) {
			/* Mostly runs of plain bytes (up to 40), then one byte of any kind. */
			size_t run = (size_t)(NEXT() % 41);

			for (size_t j = 0; j < run && i < len; j++) {
				/* now and then a two-byte character, or half of one */
				if (NEXT() % 64 == 0 && i + 1 < len) {
					in[i++] = (char)0xc3;
					if (NEXT() % 2)
						in[i++] = (char)0xa9;
				} else {
					in[i++] = (char)('a' + NEXT() % 26);
				}
			}
			if (i < len)
				in[i++] = NEXT() % 16 == 0
				                  ? (char)0xc3
				                  : alphabet[NEXT() % (sizeof(alphabet) - 1)];
		}
		o.delimiter = delims[NEXT() % 3];
		o.header = NEXT() % 2;
		o.max_field_bytes = NEXT() % 3 == 0 ? 24 : 0;
		o.max_record_bytes = NEXT() % 4 == 0 ? 100 : 0;
		/* (render's check that raw bytes add up holds only untruncated) */
		o.keep_blank_lines = o.max_record_bytes == 0 && NEXT() % 2;
#undef NEXT
		wide_or_error(&o, in, len, SIZE_MAX, a, sizeof(a));
		wide_or_error(&o, in, len, 1, b, sizeof(b));
		if (strcmp(a, b) != 0)
			fail_msg("input %d: wide %s\nbytewise %s", k, a, b);
		wide_or_error(&o, in, len, 19, b, sizeof(b));
		if (strcmp(a, b) != 0)
			fail_msg("input %d (19-byte reads): wide %s\nbytewise %s", k, a, b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_well_formed),
	        cmocka_unit_test(test_malformed),
	        cmocka_unit_test(test_truncated_raw),
	        cmocka_unit_test(test_raw_bytes),
	        cmocka_unit_test(test_raw_bytes_across_chunks),
	        cmocka_unit_test(test_bad_options_and_header),
	        cmocka_unit_test(test_fd_source),
	        cmocka_unit_test(test_alloc_failures),
	        cmocka_unit_test(test_wide_scan_matches_bytewise),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
