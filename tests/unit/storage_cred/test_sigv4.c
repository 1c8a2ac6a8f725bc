/* test_sigv4.c - the signer against AWS's published Signature Version 4
 * vectors: the generic test suite (aws-sig-v4-test-suite: credentials
 * AKIDEXAMPLE, host example.amazonaws.com, 20150830T123600Z, us-east-1,
 * service "service") and the S3 examples of "Signature Calculations for the
 * Authorization Header" (examplebucket, 20130524T000000Z).  Each expected
 * value is AWS's, reproduced here; none is computed by the code under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "io/sigv4.h"

#define SUITE_DATE "20150830T123600Z"
#define SUITE_HOST "example.amazonaws.com"

static struct st_sigv4_req suite_req(const char *method, const char *path, const char *query,
                                     const struct st_sigv4_header *h, size_t n,
                                     const char *payload_hash)
{
	return (struct st_sigv4_req){.method = method,
	                             .path = path,
	                             .query = query,
	                             .headers = h,
	                             .n_headers = n,
	                             .payload_hash = payload_hash,
	                             .region = "us-east-1",
	                             .service = "service",
	                             .amz_date = SUITE_DATE,
	                             .access_key_id = "AKIDEXAMPLE",
	                             .secret_access_key =
	                                     "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
	                             .normalize_path = true};
}

struct vec {
	const char *name;
	const char *method, *path, *query;
	struct st_sigv4_header extra[6]; /* besides host and x-amz-date */
	const char *body;
	const char *signed_headers;
	const char *signature;
};

/* aws-sig-v4-test-suite cases and their published signatures. */
static const struct vec suite[] = {
        {"get-vanilla",
         "GET",
         "/",
         NULL,
         {{0}},
         "",
         "host;x-amz-date",
         "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
        {"get-unreserved",
         "GET",
         "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
         NULL,
         {{0}},
         "",
         "host;x-amz-date",
         "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"},
        {"get-slashes",
         "GET",
         "//example//",
         NULL,
         {{0}},
         "",
         "host;x-amz-date",
         "9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84"},
        {"get-vanilla-query-order-key-case",
         "GET",
         "/",
         "Param2=value2&Param1=value1",
         {{0}},
         "",
         "host;x-amz-date",
         "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
        {"get-vanilla-query-order-value",
         "GET",
         "/",
         "Param1=value2&Param1=value1",
         {{0}},
         "",
         "host;x-amz-date",
         "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694"},
        {"get-vanilla-utf8-query",
         "GET",
         "/",
         "\xe1\x88\xb4=bar",
         {{0}},
         "",
         "host;x-amz-date",
         "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"},
        {"get-header-value-order",
         "GET",
         "/",
         NULL,
         {{"My-Header1", "value4"},
          {"My-Header1", "value1"},
          {"My-Header1", "value3"},
          {"My-Header1", "value2"}},
         "",
         "host;my-header1;x-amz-date",
         "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"},
        {"get-header-key-duplicate",
         "GET",
         "/",
         NULL,
         {{"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}},
         "",
         "host;my-header1;x-amz-date",
         "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"},
        {"get-header-value-trim",
         "GET",
         "/",
         NULL,
         {{"My-Header1", " value1"}, {"My-Header2", "\"a   b   c\""}},
         "",
         "host;my-header1;my-header2;x-amz-date",
         "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
        {"post-x-www-form-urlencoded",
         "POST",
         "/",
         NULL,
         {{"Content-Type", "application/x-www-form-urlencoded"}},
         "Param1=value1",
         "content-type;host;x-amz-date",
         "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"},
};

static void sign_vec(const struct vec *v, struct fl_buf *auth)
{
	struct st_sigv4_header h[8];
	size_t n = 0;
	char hash[65];
	struct st_sigv4_req req;
	struct fl_err err = {0};

	h[n++] = (struct st_sigv4_header){"Host", SUITE_HOST};
	h[n++] = (struct st_sigv4_header){"X-Amz-Date", SUITE_DATE};
	for (int i = 0; i < 6 && v->extra[i].name != NULL; i++)
		h[n++] = v->extra[i];
	st_sigv4_sha256_hex(v->body, strlen(v->body), hash);
	req = suite_req(v->method, v->path, v->query, h, n, hash);
	if (st_sigv4_authorization(&req, auth, &err) != 0)
		fail_msg("%s: %s", v->name, err.msg);
}

static void test_suite_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(suite) / sizeof(suite[0]); i++) {
		struct fl_buf auth = FL_BUF_INIT, want = FL_BUF_INIT;

		sign_vec(&suite[i], &auth);
		assert_int_equal(
		        fl_buf_printf(&want,
		                      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/"
		                      "service/aws4_request, SignedHeaders=%s, Signature=%s",
		                      suite[i].signed_headers, suite[i].signature),
		        0);
		if (strcmp(auth.data, want.data) != 0)
			fail_msg("%s:\n got %s\nwant %s", suite[i].name, auth.data, want.data);
		fl_buf_free(&auth);
		fl_buf_free(&want);
	}
}

/* get-vanilla's published canonical request and string to sign, and the
 * post-x-www-form-urlencoded string to sign, step by step. */
static void test_suite_steps(void **state)
{
	struct st_sigv4_header h[] = {{"Host", SUITE_HOST}, {"X-Amz-Date", SUITE_DATE}};
	struct st_sigv4_req req = suite_req("GET", "/", NULL, h, 2, ST_SHA256_EMPTY);
	struct fl_buf creq = FL_BUF_INIT, sh = FL_BUF_INIT, sts = FL_BUF_INIT;
	struct fl_err err = {0};
	struct st_sigv4_header hp[] = {{"Content-Type", "application/x-www-form-urlencoded"},
	                               {"Host", SUITE_HOST},
	                               {"X-Amz-Date", SUITE_DATE}};
	char hash[65];

	(void)state;
	assert_int_equal(st_sigv4_canonical(&req, &creq, &sh, &err), 0);
	assert_string_equal(creq.data,
	                    "GET\n/\n\nhost:example.amazonaws.com\n"
	                    "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
	                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	assert_int_equal(st_sigv4_string_to_sign(&req, creq.data, creq.len, &sts, &err), 0);
	assert_string_equal(sts.data,
	                    "AWS4-HMAC-SHA256\n20150830T123600Z\n"
	                    "20150830/us-east-1/service/aws4_request\n"
	                    "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
	fl_buf_reset(&creq);
	fl_buf_reset(&sh);
	fl_buf_reset(&sts);
	st_sigv4_sha256_hex("Param1=value1", 13, hash);
	assert_string_equal(hash,
	                    "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e");
	req = suite_req("POST", "/", NULL, hp, 3, hash);
	assert_int_equal(st_sigv4_canonical(&req, &creq, &sh, &err), 0);
	assert_string_equal(sh.data, "content-type;host;x-amz-date");
	assert_int_equal(st_sigv4_string_to_sign(&req, creq.data, creq.len, &sts, &err), 0);
	assert_string_equal(sts.data,
	                    "AWS4-HMAC-SHA256\n20150830T123600Z\n"
	                    "20150830/us-east-1/service/aws4_request\n"
	                    "42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281");
	fl_buf_free(&creq);
	fl_buf_free(&sh);
	fl_buf_free(&sts);
}

/* S3's "GET Bucket Lifecycle" example: a sub-resource without a value signs
 * as "lifecycle=" (the GET Object and List Objects examples are in
 * tests/unit/storage/test_s3.c). */
static void test_s3_lifecycle(void **state)
{
	struct st_sigv4_header h[] = {{"Host", "examplebucket.s3.amazonaws.com"},
	                              {"x-amz-content-sha256", ST_SHA256_EMPTY},
	                              {"x-amz-date", "20130524T000000Z"}};
	struct st_sigv4_req req = {.method = "GET",
	                           .path = "/",
	                           .query = "lifecycle",
	                           .headers = h,
	                           .n_headers = 3,
	                           .payload_hash = ST_SHA256_EMPTY,
	                           .region = "us-east-1",
	                           .service = "s3",
	                           .amz_date = "20130524T000000Z",
	                           .access_key_id = "AKIAIOSFODNN7EXAMPLE",
	                           .secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};
	struct fl_buf auth = FL_BUF_INIT;
	struct fl_err err = {0};
	const char *sig;

	(void)state;
	assert_int_equal(st_sigv4_authorization(&req, &auth, &err), 0);
	sig = strstr(auth.data, "Signature=");
	assert_non_null(sig);
	assert_string_equal(sig + 10,
	                    "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
	fl_buf_free(&auth);
}

/* S3 keeps the wire path: no dot-segment removal, no second encoding; other
 * services normalise.  Bad input is refused. */
static void test_paths_and_errors(void **state)
{
	struct st_sigv4_header h[] = {{"host", "h"}};
	struct st_sigv4_req req = suite_req("GET", "/a/./b/../c%20d", NULL, h, 1, ST_SHA256_EMPTY);
	struct fl_buf creq = FL_BUF_INIT, sh = FL_BUF_INIT;
	struct fl_err err = {0};

	(void)state;
	req.normalize_path = false;
	assert_int_equal(st_sigv4_canonical(&req, &creq, &sh, &err), 0);
	assert_true(strncmp(creq.data, "GET\n/a/./b/../c%20d\n", 20) == 0);
	fl_buf_reset(&creq);
	fl_buf_reset(&sh);
	req.normalize_path = true;
	assert_int_equal(st_sigv4_canonical(&req, &creq, &sh, &err), 0);
	assert_true(strncmp(creq.data, "GET\n/a/c%2520d\n", 15) == 0);
	fl_buf_reset(&creq);
	fl_buf_reset(&sh);
	req.path = "/bad%zz";
	assert_int_equal(st_sigv4_canonical(&req, &creq, &sh, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	req.path = "relative";
	assert_int_equal(st_sigv4_canonical(&req, &creq, &sh, &err), -1);
	req.path = "/";
	h[0].value = "a\r\nx-injected: 1";
	assert_int_equal(st_sigv4_canonical(&req, &creq, &sh, &err), -1);
	fl_buf_free(&creq);
	fl_buf_free(&sh);
}

static void test_amz_date(void **state)
{
	char d[17];

	(void)state;
	st_sigv4_date(1440938160LL, d);
	assert_string_equal(d, SUITE_DATE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_suite_vectors), cmocka_unit_test(test_suite_steps),
	        cmocka_unit_test(test_s3_lifecycle),  cmocka_unit_test(test_paths_and_errors),
	        cmocka_unit_test(test_amz_date),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
