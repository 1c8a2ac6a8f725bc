/* test_policy.c - S3 locations and the session policy, byte for byte for
 * each access level (the bytes STS receives are the contract: moto does not
 * enforce session policies, so this is where their scope is proven). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

static void test_loc_parse(void **state)
{
	static const struct {
		const char *uri, *bucket, *prefix; /* bucket NULL = refused */
	} cases[] = {
	        {"s3://warehouse/ns/t", "warehouse", "ns/t"},
	        {"s3://warehouse/ns/t/", "warehouse", "ns/t"},
	        {"s3://my.bucket-1/a", "my.bucket-1", "a"},
	        {"s3a://my.bucket-1/a", NULL, NULL},
	        {"s3://warehouse", "warehouse", ""},
	        {"s3://warehouse/", "warehouse", ""},
	        {"s3://wh/x", NULL, NULL}, /* too short */
	        {"s3://Warehouse/x", NULL, NULL}, /* upper case */
	        {"s3://ware_house/x", NULL, NULL},
	        {"file:///tmp/x", NULL, NULL},
	        {"s3://warehouse/a//b", NULL, NULL},
	        {"s3://warehouse/a/../b", NULL, NULL},
	        {"s3://warehouse/a/./b", NULL, NULL},
	        {"s3://warehouse/a\\b", NULL, NULL},
	        {"s3://warehouse/a\nb", NULL, NULL},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct st_s3_loc loc;
		struct fl_err err = {0};
		int rc = st_s3_loc_parse(cases[i].uri, &loc, &err);

		if (cases[i].bucket == NULL) {
			if (rc != -1 || err.kind != FL_ERR_BAD_REQUEST)
				fail_msg("accepted %s", cases[i].uri);
			continue;
		}
		if (rc != 0)
			fail_msg("%s: %s", cases[i].uri, err.msg);
		assert_string_equal(loc.bucket, cases[i].bucket);
		assert_string_equal(loc.prefix, cases[i].prefix);
	}
}

static void check_policy(const char *uri, enum st_access a, const char *want)
{
	struct st_s3_loc loc;
	struct fl_err err = {0};
	char *got = NULL;
	size_t n = 0;

	assert_int_equal(st_s3_loc_parse(uri, &loc, &err), 0);
	if (st_policy_session(&loc, a, &got, &n, &err) != 0)
		fail_msg("%s: %s", uri, err.msg);
	assert_string_equal(got, want);
	assert_int_equal(n, strlen(want));
	free(got);
}

static void test_policy_bytes(void **state)
{
	(void)state;
	check_policy(
	        "s3://warehouse/lake/ns/t", ST_ACCESS_READ,
	        "{\"Version\":\"2012-10-17\",\"Statement\":["
	        "{\"Sid\":\"TableObjects\",\"Effect\":\"Allow\",\"Action\":[\"s3:GetObject\"],"
	        "\"Resource\":[\"arn:aws:s3:::warehouse/lake/ns/t/*\"]},"
	        "{\"Sid\":\"TableList\",\"Effect\":\"Allow\",\"Action\":[\"s3:ListBucket\"],"
	        "\"Resource\":[\"arn:aws:s3:::warehouse\"],"
	        "\"Condition\":{\"StringLike\":{\"s3:prefix\":[\"lake/ns/t/\",\"lake/ns/t/*\"]}}},"
	        "{\"Sid\":\"BucketLocation\",\"Effect\":\"Allow\",\"Action\":[\"s3:GetBucketLocation\"],"
	        "\"Resource\":[\"arn:aws:s3:::warehouse\"]}]}");
	check_policy(
	        "s3://warehouse/lake/ns/t/", ST_ACCESS_READ_WRITE,
	        "{\"Version\":\"2012-10-17\",\"Statement\":["
	        "{\"Sid\":\"TableObjects\",\"Effect\":\"Allow\",\"Action\":[\"s3:GetObject\","
	        "\"s3:PutObject\",\"s3:DeleteObject\",\"s3:AbortMultipartUpload\"],"
	        "\"Resource\":[\"arn:aws:s3:::warehouse/lake/ns/t/*\"]},"
	        "{\"Sid\":\"TableList\",\"Effect\":\"Allow\",\"Action\":[\"s3:ListBucket\"],"
	        "\"Resource\":[\"arn:aws:s3:::warehouse\"],"
	        "\"Condition\":{\"StringLike\":{\"s3:prefix\":[\"lake/ns/t/\",\"lake/ns/t/*\"]}}},"
	        "{\"Sid\":\"BucketLocation\",\"Effect\":\"Allow\",\"Action\":[\"s3:GetBucketLocation\"],"
	        "\"Resource\":[\"arn:aws:s3:::warehouse\"]}]}");
	/* A quote in a key is escaped, not an injection. */
	check_policy(
	        "s3://warehouse/a\"b", ST_ACCESS_READ,
	        "{\"Version\":\"2012-10-17\",\"Statement\":["
	        "{\"Sid\":\"TableObjects\",\"Effect\":\"Allow\",\"Action\":[\"s3:GetObject\"],"
	        "\"Resource\":[\"arn:aws:s3:::warehouse/a\\\"b/*\"]},"
	        "{\"Sid\":\"TableList\",\"Effect\":\"Allow\",\"Action\":[\"s3:ListBucket\"],"
	        "\"Resource\":[\"arn:aws:s3:::warehouse\"],"
	        "\"Condition\":{\"StringLike\":{\"s3:prefix\":[\"a\\\"b/\",\"a\\\"b/*\"]}}},"
	        "{\"Sid\":\"BucketLocation\",\"Effect\":\"Allow\",\"Action\":[\"s3:GetBucketLocation\"],"
	        "\"Resource\":[\"arn:aws:s3:::warehouse\"]}]}");
}

/* Locations whose policy would cover more than the table are refused. */
static void test_policy_refused(void **state)
{
	static const char *const uris[] = {"s3://warehouse", "s3://warehouse/a*",
	                                   "s3://warehouse/a?b", "s3://warehouse/${aws:username}"};
	char long_uri[1100];

	(void)state;
	for (size_t i = 0; i < sizeof(uris) / sizeof(uris[0]); i++) {
		struct st_s3_loc loc;
		struct fl_err err = {0};
		char *got = NULL;
		size_t n;

		assert_int_equal(st_s3_loc_parse(uris[i], &loc, &err), 0);
		assert_int_equal(st_policy_session(&loc, ST_ACCESS_READ, &got, &n, &err), -1);
		assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
		assert_null(got);
	}
	memcpy(long_uri, "s3://warehouse/", 15);
	memset(long_uri + 15, 'k', 900);
	long_uri[915] = '\0';
	{
		struct st_s3_loc loc;
		struct fl_err err = {0};
		char *got = NULL;
		size_t n;

		assert_int_equal(st_s3_loc_parse(long_uri, &loc, &err), 0);
		assert_int_equal(st_policy_session(&loc, ST_ACCESS_READ, &got, &n, &err), -1);
		assert_int_equal(err.kind, FL_ERR_TOO_LARGE);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_loc_parse),
	        cmocka_unit_test(test_policy_bytes),
	        cmocka_unit_test(test_policy_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
