/* test_rest_pick.c - which vended credential `floe ingest --catalog-uri`
 * uses: the longest prefix of the table location, at a '/' boundary (so
 * credentials for s3://b/t never serve s3://b/t-2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rest.h"

static const char *pick(const json_t *creds, const char *location)
{
	json_t *c = st_rest_pick_credentials(creds, location);

	return c ? json_string_value(json_object_get(c, "k")) : NULL;
}

static void test_pick(void **state)
{
	json_t *creds = json_loads("[{\"prefix\":\"s3://b/\",\"config\":{\"k\":\"bucket\"}},"
	                           "{\"prefix\":\"s3://b/ns/t\",\"config\":{\"k\":\"table\"}},"
	                           "{\"prefix\":\"s3://b/ns\",\"config\":{\"k\":\"ns\"}},"
	                           "{\"prefix\":\"s3://c\",\"config\":{\"k\":\"c\"}},"
	                           "{\"prefix\":\"s3://b/ns/t/x\"},"
	                           "{\"config\":{\"k\":\"no prefix\"}}]",
	                           0, NULL);

	(void)state;
	assert_non_null(creds);
	assert_string_equal(pick(creds, "s3://b/ns/t"), "table");
	assert_string_equal(pick(creds, "s3://b/ns/t/data/f.parquet"), "table");
	assert_string_equal(pick(creds, "s3://b/ns/t-2"), "ns");
	assert_string_equal(pick(creds, "s3://b/other"), "bucket");
	assert_string_equal(pick(creds, "s3://c/x"), "c");
	assert_null(pick(creds, "s3://cc/x"));
	assert_null(pick(creds, "s3://d/x"));
	assert_null(st_rest_pick_credentials(NULL, "s3://b/ns/t"));
	json_decref(creds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_pick),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
