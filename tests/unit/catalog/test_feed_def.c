/* Unit tests of catalog/feed_def.c: feed definitions are normalized with
 * every default, and each bad one is refused naming its key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "feed.h"

static json_t *parse(const char *s)
{
	json_t *v = json_loads(s, 0, NULL);

	assert_non_null(v);
	return v;
}

static void test_defaults(void **state)
{
	struct fl_err err = {0};
	json_t *req = parse("{\"name\":\"o\",\"table\":\"a.b.t\",\"format\":\"csv\","
	                    "\"source\":{\"type\":\"directory\",\"path\":\"/in/\"},"
	                    "\"interval\":\"PT90S\"}");
	json_t *out = NULL;
	char *s;

	(void)state;
	assert_int_equal(cat_feed_def_check(req, "wh", &out, &err), 0);
	s = json_dumps(out, JSON_COMPACT);
	assert_string_equal(
	        s, "{\"name\":\"o\",\"warehouse\":\"wh\",\"table\":\"a.b.t\","
	           "\"source\":{\"type\":\"directory\",\"path\":\"/in\",\"glob\":\"*\"},"
	           "\"format\":\"csv\",\"mode\":\"append\",\"interval\":\"PT1M30S\","
	           "\"on-error\":\"strict\",\"new-columns\":\"reject\",\"create-table\":false,"
	           "\"batch\":{\"max-bytes\":0,\"max-objects\":1000,\"max-age\":\"PT0S\"},"
	           "\"max-retries\":5,\"dead-letter\":\"\",\"spool-max-bytes\":67108864}");
	free(s);
	json_decref(out);
	json_decref(req);
}

static void test_refusals(void **state)
{
	static const struct {
		const char *body, *word;
	} cases[] = {
	        {"{\"name\":\"o\",\"table\":\"n.t\",\"format\":\"csv\",\"source\":{\"type\":\"push\"},\"x\":1}",
	         "unknown key 'x'"},
	        {"{\"table\":\"n.t\",\"format\":\"csv\",\"source\":{\"type\":\"push\"}}", "name"},
	        {"{\"name\":\"o\",\"table\":\"t\",\"format\":\"csv\",\"source\":{\"type\":\"push\"}}",
	         "NAMESPACE.TABLE"},
	        {"{\"name\":\"o\",\"table\":\"n.t\",\"source\":{\"type\":\"push\"}}",
	         "format is required"},
	        {"{\"name\":\"o\",\"table\":\"n.t\",\"format\":\"csv\",\"source\":{\"type\":\"push\"},\"interval\":\"PT0S\"}",
	         "interval"},
	        {"{\"name\":\"o\",\"table\":\"n.t\",\"format\":\"csv\",\"source\":{\"type\":\"directory\",\"path\":\"/a/./b\"}}",
	         "source.path"},
	        {"{\"name\":\"o\",\"table\":\"n.t\",\"format\":\"csv\",\"source\":{\"type\":\"push\"},\"batch\":{\"max-objects\":0}}",
	         "batch.max-objects"},
	        {"{\"name\":\"o\",\"table\":\"n.t\",\"format\":\"csv\",\"source\":{\"type\":\"push\",\"path\":\"/a\"}}",
	         "source.path"},
	        {"{\"name\":\"o\",\"table\":\"n.t\",\"format\":\"csv\",\"source\":{\"type\":\"push\"},\"cdc-field\":\"op\"}",
	         "cdc-field is only for mode upsert"},
	        {"{\"name\":\"o\",\"table\":\"n.t\",\"format\":\"csv\",\"source\":{\"type\":\"push\"},\"mode\":\"upsert\",\"cdc-field\":\"\"}",
	         "cdc-field must be a column name"},
	        {"{\"name\":\"o\",\"table\":\"n.t\",\"format\":\"csv\",\"source\":{\"type\":\"push\"},\"mode\":\"upsert\",\"cdc-field\":true}",
	         "cdc-field"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fl_err err = {0};
		json_t *req = parse(cases[i].body), *out = NULL;

		assert_int_equal(cat_feed_def_check(req, "wh", &out, &err), -1);
		assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
		if (strstr(err.msg, cases[i].word) == NULL)
			fail_msg("case %zu: '%s' does not name '%s'", i, err.msg, cases[i].word);
		assert_null(out);
		json_decref(req);
	}
}

/* cdc-field is kept in the definition, then checked against the table. */
static void test_cdc_field(void **state)
{
	static const struct {
		const char *field, *word; /* word NULL: accepted */
	} cases[] = {
	        {"op", NULL},
	        {"gone", "cdc field gone is not a top-level column"},
	        {"n", "cdc field n must be a string or boolean column"},
	        {"id", "cdc field id is a key column"},
	        {"flag", NULL},
	};
	json_t *meta =
	        parse("{\"current-schema-id\":1,\"schemas\":[{\"schema-id\":1,"
	              "\"identifier-field-ids\":[1],\"fields\":["
	              "{\"id\":1,\"name\":\"id\",\"type\":\"string\",\"required\":true},"
	              "{\"id\":2,\"name\":\"op\",\"type\":\"string\",\"required\":false},"
	              "{\"id\":3,\"name\":\"n\",\"type\":\"long\",\"required\":false},"
	              "{\"id\":4,\"name\":\"flag\",\"type\":\"boolean\",\"required\":false}]}]}");

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fl_err err = {0};
		json_t *req = json_pack("{s:s, s:s, s:s, s:{s:s}, s:s, s:s}", "name", "o", "table",
		                        "n.t", "format", "csv", "source", "type", "push", "mode",
		                        "upsert", "cdc-field", cases[i].field);
		json_t *out = NULL;

		assert_non_null(req);
		assert_int_equal(cat_feed_def_check(req, "wh", &out, &err), 0);
		assert_string_equal(json_string_value(json_object_get(out, "cdc-field")),
		                    cases[i].field);
		if (cases[i].word == NULL) {
			assert_int_equal(cat_feed_def_check_table(out, meta, &err), 0);
		} else {
			assert_int_equal(cat_feed_def_check_table(out, meta, &err), -1);
			assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
			if (strstr(err.msg, cases[i].word) == NULL)
				fail_msg("case %zu: '%s' does not name '%s'", i, err.msg,
				         cases[i].word);
		}
		json_decref(out);
		json_decref(req);
	}
	json_decref(meta);
}

static void test_table_split(void **state)
{
	struct fl_err err = {0};
	char **levels = NULL;
	const char *name = NULL;
	int n = 0;

	(void)state;
	assert_int_equal(cat_feed_table_split("a.b.t", &levels, &n, &name, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(levels[0], "a");
	assert_string_equal(levels[1], "b");
	assert_string_equal(name, "t");
	free(levels);
	assert_int_equal(cat_feed_table_split("a.", &levels, &n, &name, &err), -1);
	assert_int_equal(cat_feed_table_split("t", &levels, &n, &name, &err), -1);
	{
		char long_table[CAT_FEED_TABLE_MAX + 2];

		for (size_t i = 0; i + 1 < sizeof(long_table); i += 2)
			memcpy(long_table + i, "n.", 2);
		long_table[sizeof(long_table) - 2] = 't';
		long_table[sizeof(long_table) - 1] = '\0';
		json_t *req = json_pack("{s:s, s:s, s:s, s:{s:s}}", "name", "long", "table",
		                        long_table, "format", "csv", "source", "type", "push");
		json_t *out = NULL;

		/* A new feed is refused; one stored before the bound still splits. */
		assert_non_null(req);
		assert_int_equal(cat_feed_def_check(req, "wh", &out, &err), -1);
		assert_non_null(strstr(err.msg, "is 1025 bytes, over 1024"));
		json_decref(req);
		assert_int_equal(cat_feed_table_split(long_table, &levels, &n, &name, &err), 0);
		assert_int_equal(n, 512);
		assert_string_equal(name, "t");
		free(levels);
	}
}

/* An s3 source: normalized without the trailing '/', bad locations refused,
 * and it must agree with its warehouse's storage. */
static void test_s3_source(void **state)
{
	static const char *const bad[] = {"s3://ab/p",       "s3:///p",     "s3://bkt/a//b",
	                                  "s3://bkt/a/../b", "s3://bkt/..", "/local",
	                                  "file:///x"};
	struct fl_err err = {0};
	struct cat_warehouse s3wh = {.name = "lake", .storage_type = "s3"},
	                     filewh = {.name = "local", .storage_type = "file"};
	json_t *req = parse("{\"name\":\"o\",\"table\":\"n.t\",\"format\":\"csv\","
	                    "\"source\":{\"type\":\"s3\",\"location\":\"s3://bkt/in/x/\","
	                    "\"glob\":\"*/*.csv\"}}");
	json_t *out = NULL;
	char *s;

	(void)state;
	assert_int_equal(cat_feed_def_check(req, "wh", &out, &err), 0);
	s = json_dumps(json_object_get(out, "source"), JSON_COMPACT);
	assert_string_equal(
	        s, "{\"type\":\"s3\",\"location\":\"s3://bkt/in/x\",\"glob\":\"*/*.csv\"}");
	free(s);
	assert_int_equal(cat_feed_def_check_warehouse(out, &s3wh, &err), 0);
	assert_int_equal(cat_feed_def_check_warehouse(out, &filewh, &err), -1);
	assert_non_null(strstr(err.msg, "'s3' needs an S3 warehouse"));
	json_object_set_new(out, "dead-letter", json_string("/dl"));
	assert_int_equal(cat_feed_def_check_warehouse(out, &s3wh, &err), -1);
	assert_non_null(strstr(err.msg, "dead-letter"));
	json_object_set_new(json_object_get(out, "source"), "type", json_string("directory"));
	json_object_set_new(out, "dead-letter", json_string(""));
	assert_int_equal(cat_feed_def_check_warehouse(out, &filewh, &err), 0);
	assert_int_equal(cat_feed_def_check_warehouse(out, &s3wh, &err), -1);
	assert_non_null(strstr(err.msg, "'directory' needs a warehouse on local files"));
	json_decref(out);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *src = json_object_get(req, "source");

		out = NULL;
		json_object_set_new(src, "location", json_string(bad[i]));
		assert_int_equal(cat_feed_def_check(req, "wh", &out, &err), -1);
		if (strstr(err.msg, "source.location") == NULL)
			fail_msg("%s: '%s' does not name source.location", bad[i], err.msg);
		assert_null(out);
	}
	json_decref(req);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_defaults),  cmocka_unit_test(test_refusals),
	        cmocka_unit_test(test_cdc_field), cmocka_unit_test(test_table_split),
	        cmocka_unit_test(test_s3_source),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
