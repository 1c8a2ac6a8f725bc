/* test_ndjson.c - the NDJSON reader (storage/feed/ndjson.c): line numbers,
 * raw bytes, blank lines, per-line errors and the limits, each case read in
 * one piece and one byte at a time; every allocation is failed in turn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "failalloc.h"
#include "ndjson.h"

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

/* Renders records as @line{compact json} or @line!error, checking that
 * each raw is the line as it was. */
static void render(const char *in, size_t len, size_t step, size_t max_line, int max_depth,
                   char *out, size_t cap)
{
	struct trickle t = {{trickle_read, &t}, (const uint8_t *)in, len, 0, step};
	struct st_ndjson_opts o = {0};
	struct st_ndjson_reader *r;
	const struct st_ndjson_record *rec;
	struct fl_err err = {0};
	size_t n = 0;
	uint64_t number = 0;

	o.source = &t.source;
	o.max_line_bytes = max_line;
	o.max_depth = max_depth;
	out[0] = '\0';
	assert_int_equal(st_ndjson_reader_open(&o, &r, &err), 0);
	for (;;) {
		assert_int_equal(st_ndjson_reader_next(r, &rec, &err), 0);
		if (rec == NULL)
			break;
		assert_int_equal(rec->number, ++number);
		assert_true(rec->raw_len > 0);
		if (!rec->raw_truncated)
			assert_non_null(memmem(in, len, rec->raw, rec->raw_len));
		if (rec->error != NULL) {
			assert_null(rec->obj);
			n += (size_t)snprintf(out + n, cap - n, "@%llu!%s",
			                      (unsigned long long)rec->line, rec->error);
		} else {
			char *d = json_dumps(rec->obj, JSON_COMPACT);

			assert_non_null(d);
			n += (size_t)snprintf(out + n, cap - n, "@%llu%s",
			                      (unsigned long long)rec->line, d);
			free(d);
		}
		assert_true(n < cap);
	}
	st_ndjson_reader_free(r);
}

static void test_lines(void **state)
{
	static const struct {
		const char *in;
		size_t max_line;
		int max_depth;
		const char *want;
	} cases[] = {
	        {"{\"a\":1}\n{\"b\":2}\n", 0, 0, "@1{\"a\":1}@2{\"b\":2}"},
	        {"{\"a\":1}\n{\"b\":2}", 0, 0, "@1{\"a\":1}@2{\"b\":2}"},
	        {"\n  \n{\"a\":1}\r\n\t\r\n{}\n\n", 0, 0, "@3{\"a\":1}@5{}"},
	        {"", 0, 0, ""},
	        {"\n\n", 0, 0, ""},
	        {"\xef\xbb\xbf{\"k\":\"v\"}\n", 0, 0, "@1{\"k\":\"v\"}"},
	        {" {\"a\" : [1, 2.5, null, true]} \n", 0, 0, "@1{\"a\":[1,2.5,null,true]}"},
	        {"{\"a\":1\n{\"a\":2}\n", 0, 0,
	         "@1!line 1: malformed JSON at column 6: '}' expected near end of file@2{\"a\":2}"},
	        {"{\"a\":1,\"a\":2}\n{}\n", 0, 0,
	         "@1!line 1: malformed JSON at column 10: duplicate object key near '\"a\"'@2{}"},
	        {"[1,2]\n3\n\"s\"\nnull\ntrue\n", 0, 0,
	         "@1!line 1: expected a JSON object, got an array"
	         "@2!line 2: expected a JSON object, got a number"
	         "@3!line 3: expected a JSON object, got a string"
	         "@4!line 4: expected a JSON object, got null"
	         "@5!line 5: expected a JSON object, got a boolean"},
	        {"{} {}\n", 0, 0,
	         "@1!line 1: malformed JSON at column 4: end of file expected near '{'"},
	        {"{\"x\":NaN}\n", 0, 0,
	         "@1!line 1: malformed JSON at column 8: invalid token near 'NaN'"},
	        {"{\"x\":\"\xff\"}\n{}\n", 0, 0,
	         "@1!line 1: malformed JSON at column 6: unable to decode byte 0xff near '\"'@2{}"},
	        {"{\"a\":{\"b\":{}}}\n{\"a\":{}}\n", 0, 2,
	         "@1!line 1: JSON nesting depth 3 exceeds the limit of 2@2{\"a\":{}}"},
	        {"{\"a\":\"0123456789\"}\n{}\n", 10, 0,
	         "@1!line 1: exceeds max_line_bytes (10 bytes)@2{}"},
	        {"{\"a\":\"01\"}\n", 11, 0, "@1{\"a\":\"01\"}"},
	        {"{\"a\":\"0123456789\"}", 10, 0, "@1!line 1: exceeds max_line_bytes (10 bytes)"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char a[1024], b[1024];
		size_t len = strlen(cases[i].in);

		render(cases[i].in, len, SIZE_MAX, cases[i].max_line, cases[i].max_depth, a,
		       sizeof(a));
		if (strcmp(a, cases[i].want) != 0)
			fail_msg("case %zu: got\n  %s\nwant\n  %s", i, a, cases[i].want);
		render(cases[i].in, len, 1, cases[i].max_line, cases[i].max_depth, b, sizeof(b));
		if (strcmp(a, b) != 0)
			fail_msg("case %zu one byte at a time: got\n  %s\nwant\n  %s", i, b, a);
	}
}

static void test_raw_and_truncation(void **state)
{
	static const char in[] = "{\"a\":1}\r\n{\"b\":\"long line here\"}\n{}";
	struct st_mem_source m;
	struct st_ndjson_opts o = {0};
	struct st_ndjson_reader *r;
	const struct st_ndjson_record *rec;
	struct fl_err err;

	(void)state;
	st_mem_source_init(&m, in, strlen(in));
	o.source = &m.source;
	o.max_line_bytes = 12;
	assert_int_equal(st_ndjson_reader_open(&o, &r, &err), 0);
	assert_int_equal(st_ndjson_reader_next(r, &rec, &err), 0);
	assert_int_equal(rec->raw_len, 9);
	assert_memory_equal(rec->raw, "{\"a\":1}\r\n", 9);
	assert_int_equal(json_integer_value(json_object_get(rec->obj, "a")), 1);
	assert_int_equal(st_ndjson_reader_next(r, &rec, &err), 0);
	assert_true(rec->raw_truncated);
	assert_int_equal(rec->raw_len, 12);
	assert_memory_equal(rec->raw, "{\"b\":\"long l", 12);
	assert_int_equal(st_ndjson_reader_next(r, &rec, &err), 0);
	assert_int_equal(rec->line, 3);
	assert_int_equal(rec->raw_len, 2);
	assert_non_null(rec->obj);
	assert_int_equal(st_ndjson_reader_next(r, &rec, &err), 0);
	assert_null(rec);
	st_ndjson_reader_free(r);
}

static void test_many_lines(void **state)
{
	size_t cap = 40u << 20, len = 0;
	char *in = malloc(cap);
	struct st_mem_source m;
	struct st_ndjson_opts o = {0};
	struct st_ndjson_reader *r;
	const struct st_ndjson_record *rec;
	struct fl_err err;
	long rows = 0;

	(void)state;
	assert_non_null(in);
	for (long i = 0; i < 200000; i++)
		len += (size_t)snprintf(in + len, cap - len, "{\"i\":%ld,\"s\":\"x%ld\"}\n", i, i);
	st_mem_source_init(&m, in, len);
	o.source = &m.source;
	assert_int_equal(st_ndjson_reader_open(&o, &r, &err), 0);
	for (;;) {
		assert_int_equal(st_ndjson_reader_next(r, &rec, &err), 0);
		if (rec == NULL)
			break;
		assert_null(rec->error);
		assert_int_equal(json_integer_value(json_object_get(rec->obj, "i")), rows);
		assert_int_equal(rec->line, rows + 1);
		rows++;
	}
	assert_int_equal(rows, 200000);
	st_ndjson_reader_free(r);
	free(in);
}

static void test_alloc_failures(void **state)
{
	static const char in[] =
	        "{\"a\":1}\n\n[1]\n{\"b\":\"0123456789012345678901234567890\"}\n{}\n";
	bool reached_end = false;

	(void)state;
	for (long k = 1; !reached_end && k < 1000; k++) {
		struct failalloc fa;
		struct st_mem_source m;
		struct st_ndjson_opts o = {0};
		struct st_ndjson_reader *r = NULL;
		const struct st_ndjson_record *rec;
		struct fl_err err = {0};
		int rc;
		size_t n = 0;

		failalloc_init(&fa, k);
		st_mem_source_init(&m, in, strlen(in));
		o.source = &m.source;
		o.max_line_bytes = 20;
		o.alloc = &fa.alloc;
		rc = st_ndjson_reader_open(&o, &r, &err);
		while (rc == 0) {
			rc = st_ndjson_reader_next(r, &rec, &err);
			if (rc == 0 && rec == NULL)
				break;
			if (rc == 0)
				n++;
		}
		st_ndjson_reader_free(r);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_lines),
	        cmocka_unit_test(test_raw_and_truncation),
	        cmocka_unit_test(test_many_lines),
	        cmocka_unit_test(test_alloc_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
