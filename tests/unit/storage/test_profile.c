/* test_profile.c - storage profiles (storage/io/profile.c): what parses,
 * what is refused and with which message, and how keys are resolved. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/profile.h"

static int parse(const char *text, struct st_profile *p, json_t **norm, struct fl_err *err)
{
	json_t *j = json_loads(text, 0, NULL);
	int rc;

	assert_non_null(j);
	rc = st_profile_parse(j, p, norm, err);
	json_decref(j);
	return rc;
}

static void test_full_s3(void **state)
{
	struct st_profile p;
	struct fl_err err = {0};
	json_t *norm = NULL;

	(void)state;
	assert_int_equal(
	        parse("{\"type\":\"s3\",\"location\":\"s3://lake-1/wh/x/\",\"endpoint\":\"http://127.0.0.1:9000/\","
	              "\"region\":\"eu-west-1\",\"path-style-access\":true,\"access-key-id-env\":\"AK\","
	              "\"secret-access-key-env\":\"SK\",\"sts-role-arn\":\"arn:aws:iam::1:role/w\","
	              "\"sts-endpoint\":\"http://127.0.0.1:9001\",\"sts-external-id\":\"e\","
	              "\"credential-lifetime\":\"PT2H\",\"remote-signing\":true}",
	              &p, &norm, &err),
	        0);
	assert_int_equal(p.type, ST_STORAGE_S3);
	assert_string_equal(p.location, "s3://lake-1/wh/x");
	assert_string_equal(p.bucket, "lake-1");
	assert_string_equal(p.prefix, "wh/x");
	assert_string_equal(p.endpoint, "http://127.0.0.1:9000");
	assert_string_equal(p.region, "eu-west-1");
	assert_true(p.path_style);
	assert_true(p.remote_signing);
	assert_string_equal(p.access_key_id_env, "AK");
	assert_string_equal(p.secret_access_key_env, "SK");
	assert_int_equal(p.credential_lifetime_s, 7200);
	assert_string_equal(json_string_value(json_object_get(norm, "location")),
	                    "s3://lake-1/wh/x");
	json_decref(norm);
}

static void test_defaults(void **state)
{
	struct st_profile p;
	struct fl_err err = {0};

	(void)state;
	assert_int_equal(parse("{\"type\":\"s3\",\"location\":\"s3://bkt\"}", &p, NULL, &err), 0);
	assert_string_equal(p.bucket, "bkt");
	assert_string_equal(p.prefix, "");
	assert_string_equal(p.region, "us-east-1");
	assert_string_equal(p.access_key_id_env, "AWS_ACCESS_KEY_ID");
	assert_int_equal(p.credential_lifetime_s, 3600);
	assert_false(p.path_style);
	assert_int_equal(
	        parse("{\"type\":\"file\",\"location\":\"file:///tmp/wh/\"}", &p, NULL, &err), 0);
	assert_int_equal(p.type, ST_STORAGE_FILE);
	assert_string_equal(p.location, "file:///tmp/wh");
}

static void test_refusals(void **state)
{
	static const struct {
		const char *json;
		const char *msg; /* a substring of the message */
	} cases[] = {
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt/p\",\"bogus\":1}",
	         "unknown key 'bogus'"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt/p\",\"secret-access-key\":\"x\"}",
	         "'secret-access-key' is refused"},
	        {"{\"type\":\"file\",\"location\":\"file:///x\",\"endpoint\":\"http://h\"}",
	         "unknown key 'endpoint' for type file"},
	        {"{\"type\":\"s3\",\"location\":\"s3://B/p\"}", "not a valid bucket name"},
	        {"{\"type\":\"s3\",\"location\":\"s3://ab/p\"}", "not a valid bucket name"},
	        {"{\"type\":\"s3\",\"location\":\"file:///x\"}", "needs a location like s3://"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt/a/../b\"}", "'..' segments"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt/a//b\"}", "empty"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt\",\"endpoint\":\"ftp://h\"}", "http://"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt\",\"endpoint\":\"http://h/path\"}",
	         "without a path"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt\",\"region\":\"US East\"}", "region"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt\",\"access-key-id-env\":\"1X\"}",
	         "access-key-id-env must name an environment variable"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt\",\"session-token-env\":\"FLOE_DATABASE_URL\"}",
	         "session-token-env must name an environment variable ([A-Za-z_][A-Za-z0-9_]*) other "
	         "than Floe's own secrets and libpq's PG*"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt\",\"secret-access-key-env\":\"PGPASSWORD\"}",
	         "secret-access-key-env must name an environment variable"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt\",\"access-key-id-env\":\"FLOE_BOOTSTRAP_CLIENT_SECRET\"}",
	         "access-key-id-env must name an environment variable"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt\",\"credentials-file\":\"/f\",\"access-key-id-env\":\"A\"}",
	         "not both"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt\",\"credentials-file\":\"rel\"}",
	         "absolute"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt\",\"credential-lifetime\":\"PT1M\"}",
	         "credential-lifetime"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt\",\"credential-lifetime\":\"soon\"}",
	         "credential-lifetime"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt\",\"sts-role-arn\":\"role\"}", "ARN"},
	        {"{\"type\":\"s3\",\"location\":\"s3://bkt\",\"path-style-access\":\"yes\"}",
	         "path-style-access"},
	        {"{\"type\":\"gcs\",\"location\":\"gs://b\"}", "type 'gcs' is not supported"},
	        {"{\"type\":\"file\",\"location\":\"file://rel\"}", "absolute location"},
	        {"{\"location\":\"s3://bkt\"}", "type"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct st_profile p;
		struct fl_err err = {0};

		memset(&p, 0x5a, sizeof(p));
		assert_int_equal(parse(cases[i].json, &p, NULL, &err), -1);
		assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
		if (strstr(err.msg, cases[i].msg) == NULL)
			fail_msg("case %zu: '%s' does not contain '%s'", i, err.msg, cases[i].msg);
		assert_int_equal(((unsigned char *)&p)[0], 0x5a); /* untouched */
	}
}

static void test_credentials(void **state)
{
	struct st_profile p;
	struct st_creds c;
	struct fl_err err = {0};
	char path[] = "/tmp/floe-creds-XXXXXX";
	FILE *f;
	int fd;

	(void)state;
	setenv("FLOE_TEST_AK", "AKIDEXAMPLE", 1);
	unsetenv("FLOE_TEST_SK");
	assert_int_equal(parse("{\"type\":\"s3\",\"location\":\"s3://bkt\",\"access-key-id-env\":"
	                       "\"FLOE_TEST_AK\",\"secret-access-key-env\":\"FLOE_TEST_SK\"}",
	                       &p, NULL, &err),
	                 0);
	assert_int_equal(st_profile_credentials(&p, &c, &err), -1);
	assert_non_null(strstr(err.msg, "FLOE_TEST_SK"));
	assert_null(strstr(err.msg, "AKIDEXAMPLE"));
	setenv("FLOE_TEST_SK", "s3cr3t", 1);
	assert_int_equal(st_profile_credentials(&p, &c, &err), 0);
	assert_string_equal(c.access_key_id, "AKIDEXAMPLE");
	assert_string_equal(c.secret_access_key, "s3cr3t");
	assert_string_equal(c.session_token, "");

	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("[default]\naws_access_key_id = FILEKEY\naws_secret_access_key=\"filesecret\"\n"
	      "aws_session_token = tok\n",
	      f);
	fclose(f);
	{
		char text[256];

		snprintf(text, sizeof(text),
		         "{\"type\":\"s3\",\"location\":\"s3://bkt\",\"credentials-file\":\"%s\"}",
		         path);
		assert_int_equal(parse(text, &p, NULL, &err), 0);
	}
	assert_int_equal(st_profile_credentials(&p, &c, &err), 0);
	assert_string_equal(c.access_key_id, "FILEKEY");
	assert_string_equal(c.secret_access_key, "filesecret");
	assert_string_equal(c.session_token, "tok");
	unlink(path);
	assert_int_equal(st_profile_credentials(&p, &c, &err), -1);
	assert_non_null(strstr(err.msg, "cannot be read"));
}

static void test_uri_split(void **state)
{
	char b[64];
	const char *key;
	struct fl_err err = {0};

	(void)state;
	assert_int_equal(st_s3_uri_split("s3://bkt/a/b.json", b, sizeof(b), &key, &err), 0);
	assert_string_equal(b, "bkt");
	assert_string_equal(key, "a/b.json");
	assert_int_equal(st_s3_uri_split("s3://bkt", b, sizeof(b), &key, &err), 0);
	assert_string_equal(key, "");
	assert_int_equal(st_s3_uri_split("s3://-bad/x", b, sizeof(b), &key, &err), -1);
	assert_int_equal(st_s3_uri_split("file:///x", b, sizeof(b), &key, &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_full_s3),   cmocka_unit_test(test_defaults),
	        cmocka_unit_test(test_refusals),  cmocka_unit_test(test_credentials),
	        cmocka_unit_test(test_uri_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
