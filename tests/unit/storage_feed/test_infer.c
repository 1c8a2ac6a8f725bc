/* test_infer.c - schema inference (storage/feed/infer.c) from CSV and
 * NDJSON samples: the widening rules, the schema JSON, refusals that must
 * teach nothing, a check that every sampled value casts to the inferred
 * type, and every allocation failed in turn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cast.h"
#include "csv.h"
#include "failalloc.h"
#include "infer.h"
#include "ndjson.h"

/* The inferred "name:type" list, comma-separated. */
static void types_of(const json_t *schema, char *out, size_t cap)
{
	json_t *fields = json_object_get(schema, "fields");
	size_t o = 0;

	out[0] = '\0';
	for (size_t i = 0; i < json_array_size(fields); i++) {
		json_t *f = json_array_get(fields, i);

		assert_int_equal(json_integer_value(json_object_get(f, "id")), (json_int_t)(i + 1));
		assert_true(json_is_false(json_object_get(f, "required")));
		o += (size_t)snprintf(out + o, cap - o, "%s%s:%s", i ? "," : "",
		                      json_string_value(json_object_get(f, "name")),
		                      json_string_value(json_object_get(f, "type")));
	}
}

/* Infers from a CSV text, then casts every field with the result. */
static void infer_csv(const char *in, bool header, char *out, size_t cap)
{
	struct st_mem_source m;
	struct st_csv_opts o = {0};
	struct st_csv_reader *r;
	const struct st_csv_record *rec;
	struct st_infer *s;
	struct fl_err err;
	json_t *schema, *fields;

	st_mem_source_init(&m, in, strlen(in));
	o.source = &m.source;
	o.header = header;
	assert_int_equal(st_csv_reader_open(&o, &r, &err), 0);
	assert_int_equal(st_infer_open(NULL, 0, &s, &err), 0);
	if (header)
		assert_int_equal(st_infer_csv_header(s, st_csv_reader_header(r), &err), 0);
	for (;;) {
		assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
		if (rec == NULL)
			break;
		if (st_infer_csv_row(s, rec, &err) != 0)
			continue; /* refused rows are skipped */
	}
	st_csv_reader_free(r);
	assert_int_equal(st_infer_schema(s, &schema, &err), 0);
	types_of(schema, out, cap);

	/* The schema must take the sample it was inferred from. */
	fields = json_object_get(schema, "fields");
	st_mem_source_init(&m, in, strlen(in));
	assert_int_equal(st_csv_reader_open(&o, &r, &err), 0);
	for (;;) {
		assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
		if (rec == NULL)
			break;
		if (rec->error != NULL || rec->n_fields != json_array_size(fields))
			continue;
		for (size_t i = 0; i < rec->n_fields; i++) {
			struct st_type t;
			struct st_value v;

			if (rec->fields[i].len == 0)
				continue;
			assert_int_equal(st_type_parse(json_string_value(json_object_get(
			                                       json_array_get(fields, i), "type")),
			                               &t, &err),
			                 0);
			if (st_cast_text(&t, rec->fields[i].p, rec->fields[i].len, NULL, NULL, &v,
			                 &err) != 0)
				fail_msg("inferred type refuses its sample: %s", err.msg);
		}
	}
	st_csv_reader_free(r);
	json_decref(schema);
	st_infer_free(s);
}

static void test_csv_widening(void **state)
{
	static const struct {
		const char *in;
		bool header;
		const char *want;
	} cases[] = {
	        {"a,b,c\n1,2.5,x\n-3,4,y\n", true, "a:long,b:double,c:string"},
	        {"a\n1\n1.5\n", true, "a:double"},
	        {"a\n1e3\n", true, "a:double"},
	        {"a\nNaN\n-Infinity\n2\n", true, "a:double"},
	        {"a\nnan\n", true, "a:string"},
	        {"a\n99999999999999999999\n", true, "a:string"},
	        {"a\n9223372036854775807\n", true, "a:long"},
	        {"a,b\ntrue,0\nFALSE,1\n", true, "a:boolean,b:long"},
	        {"a\ntrue\n1\n", true, "a:string"},
	        {"d,t,z\n2020-01-01,2020-01-01 10:00:00,2020-01-01T10:00:00Z\n"
	         "0001-01-01,9999-12-31T23:59:59.999999,2020-01-01T10:00:00+05:30\n",
	         true, "d:date,t:timestamp,z:timestamptz"},
	        {"a\n2020-01-01\n2020-01-01T00:00:00\n", true, "a:string"},
	        {"a\n2020-01-01T00:00:00\n2020-01-01T00:00:00Z\n", true, "a:string"},
	        {"a\n2020-02-30\n", true, "a:string"},
	        {"a,b\n,1\n,\n", true, "a:string,b:long"},
	        {"a,b\n\"1\",\"\"\n", true, "a:long,b:string"},
	        {"a,b\n1,2\n3\n4,x,y\n5,6\n", true, "a:long,b:long"},
	        {"1,x\n2,y\n", false, "column_1:long,column_2:string"},
	        {"a\n", true, "a:string"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char got[256];

		infer_csv(cases[i].in, cases[i].header, got, sizeof(got));
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("case %zu: got %s, want %s", i, got, cases[i].want);
	}
}

static void test_schema_json(void **state)
{
	static const char in[] = "id,name\n1,x\n";
	struct st_mem_source m;
	struct st_csv_opts o = {0};
	struct st_csv_reader *r;
	const struct st_csv_record *rec;
	struct st_infer *s;
	struct fl_err err;
	json_t *schema;
	char *d;

	(void)state;
	st_mem_source_init(&m, in, strlen(in));
	o.source = &m.source;
	o.header = true;
	assert_int_equal(st_csv_reader_open(&o, &r, &err), 0);
	assert_int_equal(st_infer_open(NULL, 0, &s, &err), 0);
	assert_int_equal(st_infer_csv_header(s, st_csv_reader_header(r), &err), 0);
	assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
	assert_int_equal(st_infer_csv_row(s, rec, &err), 0);
	assert_int_equal(st_infer_rows(s), 1);
	assert_int_equal(st_infer_schema(s, &schema, &err), 0);
	d = json_dumps(schema, JSON_COMPACT);
	assert_string_equal(
	        d, "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
	           "{\"id\":1,\"name\":\"id\",\"required\":false,\"type\":\"long\"},"
	           "{\"id\":2,\"name\":\"name\",\"required\":false,\"type\":\"string\"}]}");
	free(d);
	json_decref(schema);
	st_csv_reader_free(r);
	st_infer_free(s);
}

static void test_csv_refusals(void **state)
{
	static const struct {
		const char *in;
		const char *msg;
	} headers[] = {
	        {"a,,c\n", "csv header: column 2 has no name"},
	        {"a,b,a\n", "csv header: column name \"a\" appears twice"},
	};
	struct fl_err err;

	(void)state;
	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		struct st_mem_source m;
		struct st_csv_opts o = {0};
		struct st_csv_reader *r;
		struct st_infer *s;
		json_t *schema;

		st_mem_source_init(&m, headers[i].in, strlen(headers[i].in));
		o.source = &m.source;
		o.header = true;
		assert_int_equal(st_csv_reader_open(&o, &r, &err), 0);
		assert_int_equal(st_infer_open(NULL, 0, &s, &err), 0);
		assert_int_equal(st_infer_csv_header(s, st_csv_reader_header(r), &err), -1);
		assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
		assert_string_equal(err.msg, headers[i].msg);
		assert_int_equal(st_infer_schema(s, &schema, &err), -1);
		st_csv_reader_free(r);
		st_infer_free(s);
	}
	/* Too many columns. */
	{
		struct st_mem_source m;
		struct st_csv_opts o = {0};
		struct st_csv_reader *r;
		const struct st_csv_record *rec;
		struct st_infer *s;

		st_mem_source_init(&m, "1,2,3\n", 6);
		o.source = &m.source;
		assert_int_equal(st_csv_reader_open(&o, &r, &err), 0);
		assert_int_equal(st_infer_open(NULL, 2, &s, &err), 0);
		assert_int_equal(st_csv_reader_next(r, &rec, &err), 0);
		assert_int_equal(st_infer_csv_row(s, rec, &err), -1);
		assert_int_equal(err.kind, FL_ERR_TOO_LARGE);
		st_csv_reader_free(r);
		st_infer_free(s);
	}
}

static void infer_ndjson(const char *in, char *out, size_t cap, char *errs, size_t ecap)
{
	struct st_mem_source m;
	struct st_ndjson_opts o = {0};
	struct st_ndjson_reader *r;
	const struct st_ndjson_record *rec;
	struct st_infer *s;
	struct fl_err err;
	json_t *schema;
	size_t e = 0;

	st_mem_source_init(&m, in, strlen(in));
	o.source = &m.source;
	errs[0] = '\0';
	assert_int_equal(st_ndjson_reader_open(&o, &r, &err), 0);
	assert_int_equal(st_infer_open(NULL, 0, &s, &err), 0);
	for (;;) {
		assert_int_equal(st_ndjson_reader_next(r, &rec, &err), 0);
		if (rec == NULL)
			break;
		if (rec->obj != NULL && st_infer_json_object(s, rec->obj, &err) != 0)
			e += (size_t)snprintf(errs + e, ecap - e, "[%s]", err.msg);
	}
	assert_int_equal(st_infer_schema(s, &schema, &err), 0);
	types_of(schema, out, cap);
	json_decref(schema);
	st_ndjson_reader_free(r);
	st_infer_free(s);
}

static void test_ndjson(void **state)
{
	static const struct {
		const char *in;
		const char *want;
		const char *errs;
	} cases[] = {
	        {"{\"a\":1,\"b\":1.5,\"c\":true,\"d\":\"x\"}\n",
	         "a:long,b:double,c:boolean,d:string", ""},
	        {"{\"a\":1}\n{\"a\":2.5}\n", "a:double", ""},
	        {"{\"a\":1}\n{\"b\":\"2020-01-01\",\"a\":null}\n{\"c\":null}\n",
	         "a:long,b:date,c:string", ""},
	        {"{\"t\":\"2020-01-01T00:00:00\",\"z\":\"2020-01-01T00:00:00Z\",\"n\":\"123\"}\n",
	         "t:timestamp,z:timestamptz,n:string", ""},
	        {"{\"a\":1}\n{\"a\":\"1\"}\n", "a:string", ""},
	        {"{\"a\":true}\n{\"a\":1}\n", "a:string", ""},
	        {"{\"a\":1}\n{\"a\":2,\"n\":{\"x\":1}}\n{\"a\":3,\"l\":[1]}\n", "a:long",
	         "[key \"n\" holds a nested object; feeds take flat objects]"
	         "[key \"l\" holds a nested array; feeds take flat objects]"},
	        {"{\"a\":1}\n{\"\":1}\n", "a:long", "[an empty key cannot name a column]"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char got[256], errs[512];

		infer_ndjson(cases[i].in, got, sizeof(got), errs, sizeof(errs));
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("case %zu: got %s, want %s", i, got, cases[i].want);
		if (strcmp(errs, cases[i].errs) != 0)
			fail_msg("case %zu: errors %s, want %s", i, errs, cases[i].errs);
	}
}

static void test_alloc_failures(void **state)
{
	static const char *objs[] = {"{\"a\":1,\"b\":\"x\"}", "{\"c\":2.5,\"a\":3}",
	                             "{\"d\":\"2020-01-01\",\"e\":1,\"f\":2,\"g\":3,\"h\":4,"
	                             "\"i\":5,\"j\":6,\"k\":7,\"l\":8}"};
	bool reached_end = false;

	(void)state;
	for (long k = 1; !reached_end && k < 1000; k++) {
		struct failalloc fa;
		struct st_infer *s = NULL;
		struct fl_err err = {0};
		json_t *schema = NULL;
		int rc;

		failalloc_init(&fa, k);
		rc = st_infer_open(&fa.alloc, 0, &s, &err);
		for (size_t i = 0; rc == 0 && i < 3; i++) {
			json_t *o = json_loads(objs[i], 0, NULL);

			assert_non_null(o);
			rc = st_infer_json_object(s, o, &err);
			json_decref(o);
		}
		if (rc == 0)
			rc = st_infer_schema(s, &schema, &err);
		st_infer_free(s);
		assert_int_equal(fa.live, 0);
		if (fa.failed) {
			assert_int_equal(rc, -1);
			assert_int_equal(err.kind, FL_ERR_NOMEM);
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(json_array_size(json_object_get(schema, "fields")), 12);
			reached_end = true;
		}
		json_decref(schema);
	}
	assert_true(reached_end);
}

/* Types of one column from several inputs join by the same rules. */
static void test_join_type(void **state)
{
	(void)state;
	assert_string_equal(st_infer_join_type(NULL, "long"), "long");
	assert_string_equal(st_infer_join_type("long", "long"), "long");
	assert_string_equal(st_infer_join_type("long", "double"), "double");
	assert_string_equal(st_infer_join_type("double", "long"), "double");
	assert_string_equal(st_infer_join_type("timestamp", "timestamp"), "timestamp");
	assert_string_equal(st_infer_join_type("timestamp", "timestamptz"), "string");
	assert_string_equal(st_infer_join_type("long", "boolean"), "string");
	assert_string_equal(st_infer_join_type("date", "string"), "string");
	assert_string_equal(st_infer_join_type("string", "long"), "string");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_csv_widening),   cmocka_unit_test(test_schema_json),
	        cmocka_unit_test(test_csv_refusals),   cmocka_unit_test(test_ndjson),
	        cmocka_unit_test(test_alloc_failures), cmocka_unit_test(test_join_type),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
