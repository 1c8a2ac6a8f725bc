/* test_s3.c - the pure parts of the S3 backend: SigV4 against the AWS
 * documentation's worked examples, addressing, the XML scanner, error
 * mapping and the retry policy (storage/io/sigv4.c, storage/io/s3util.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "io/s3_int.h"
#include "io/sigv4.h"

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static void sign(const char *method, const char *path, const char *query,
                 const struct st_sigv4_header *h, size_t n, const char *expect_sig)
{
	struct st_sigv4_req r = {
	        .method = method,
	        .path = path,
	        .query = query,
	        .headers = h,
	        .n_headers = n,
	        .payload_hash = EMPTY_SHA,
	        .region = "us-east-1",
	        .service = "s3",
	        .amz_date = "20130524T000000Z",
	        .access_key_id = "AKIAIOSFODNN7EXAMPLE",
	        .secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	};
	struct fl_buf out = FL_BUF_INIT;
	struct fl_err err = {0};
	const char *sig;

	assert_int_equal(st_sigv4_authorization(&r, &out, &err), 0);
	assert_non_null(strstr(out.data,
	                       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/"
	                       "us-east-1/s3/aws4_request, SignedHeaders="));
	sig = strstr(out.data, "Signature=");
	assert_non_null(sig);
	assert_string_equal(sig + 10, expect_sig);
	fl_buf_free(&out);
}

/* AWS S3 API reference, "Signature Calculations for the Authorization
 * Header": Example GET Object and Example GET Bucket (List Objects). */
static void test_sigv4_aws_examples(void **state)
{
	const struct st_sigv4_header get[] = {
	        {"Host", "examplebucket.s3.amazonaws.com"},
	        {"Range", "bytes=0-9"},
	        {"x-amz-content-sha256", EMPTY_SHA},
	        {"x-amz-date", "20130524T000000Z"},
	};
	const struct st_sigv4_header list[] = {
	        {"x-amz-date", "20130524T000000Z"},
	        {"host", "examplebucket.s3.amazonaws.com"},
	        {"x-amz-content-sha256", EMPTY_SHA},
	};

	(void)state;
	sign("GET", "/test.txt", "", get, 4,
	     "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
	sign("GET", "/", "max-keys=2&prefix=J", list, 3,
	     "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

static void test_sigv4_helpers(void **state)
{
	struct fl_buf b = FL_BUF_INIT;
	char hex[65], date[17];

	(void)state;
	st_sigv4_sha256_hex("", 0, hex);
	assert_string_equal(hex, EMPTY_SHA);
	st_sigv4_date(1369353600, date);
	assert_string_equal(date, "20130524T000000Z");
	assert_int_equal(st_sigv4_encode(&b, "a b/c~d+e=é", strlen("a b/c~d+e=é"), 1), 0);
	assert_string_equal(b.data, "a%20b/c~d%2Be%3D%C3%A9");
	fl_buf_reset(&b);
	assert_int_equal(st_sigv4_encode(&b, "a/b", 3, 0), 0);
	assert_string_equal(b.data, "a%2Fb");
	fl_buf_free(&b);
}

static void test_target(void **state)
{
	struct st_profile p = {.region = "eu-west-1"};
	struct fl_buf url = FL_BUF_INIT, path = FL_BUF_INIT;
	struct fl_err err = {0};
	char host[256];

	(void)state;
	snprintf(p.endpoint, sizeof(p.endpoint), "http://127.0.0.1:9000");
	p.path_style = true;
	assert_int_equal(
	        st_s3_target(&p, "bkt", "t/a b.json", "", &url, &path, host, sizeof(host), &err),
	        0);
	assert_string_equal(url.data, "http://127.0.0.1:9000/bkt/t/a%20b.json");
	assert_string_equal(path.data, "/bkt/t/a%20b.json");
	assert_string_equal(host, "127.0.0.1:9000");
	assert_int_equal(st_s3_target(&p, "bkt", "", "list-type=2&prefix=a%2F", &url, &path, host,
	                              sizeof(host), &err),
	                 0);
	assert_string_equal(url.data, "http://127.0.0.1:9000/bkt?list-type=2&prefix=a%2F");
	assert_string_equal(path.data, "/bkt");
	p.path_style = false;
	assert_int_equal(st_s3_target(&p, "bkt", "k", "", &url, &path, host, sizeof(host), &err),
	                 0);
	assert_string_equal(url.data, "http://bkt.127.0.0.1:9000/k");
	assert_string_equal(host, "bkt.127.0.0.1:9000");
	assert_string_equal(path.data, "/k");
	p.endpoint[0] = '\0';
	assert_int_equal(st_s3_target(&p, "bkt", "k", "", &url, &path, host, sizeof(host), &err),
	                 0);
	assert_string_equal(url.data, "https://bkt.s3.eu-west-1.amazonaws.com/k");
	fl_buf_free(&url);
	fl_buf_free(&path);
}

struct listed {
	char keys[4][32];
	int n;
};

static int note_key(void *arg, const char *key, uint64_t size, int64_t mtime_ms, struct fl_err *err)
{
	struct listed *l = arg;

	(void)size;
	(void)mtime_ms;
	if (l->n == 4)
		return fl_err_set(err, FL_ERR_IO, "too many");
	snprintf(l->keys[l->n++], sizeof(l->keys[0]), "%s", key);
	return 0;
}

#define ENTRY(key)                                                                          \
	"<Contents><Key>" key "</Key><LastModified>2026-01-02T03:04:05.678Z</LastModified>" \
	"<Size>5</Size></Contents>"

/* st_s3_list_parse: keys unescaped in order, the continuation token, and a
 * key holding a raw NUL refused (it would end early and name another
 * object, which orphan cleanup could then delete). */
static void test_list_parse(void **state)
{
	static const char page[] =
	        "<ListBucketResult><IsTruncated>true</IsTruncated>" ENTRY("t/a&amp;b")
	                ENTRY("t/&#233;") "<NextContinuationToken>k&amp;1</NextContinuationToken>"
	                                  "</ListBucketResult>";
	static const char nul[] =
	        "<ListBucketResult>" ENTRY("t/data/x.parquet\0old") "</ListBucketResult>";
	static const char no_size[] = "<ListBucketResult><Contents><Key>t/a</Key>"
	                              "<LastModified>2026-01-02T03:04:05Z</LastModified></Contents>"
	                              "</ListBucketResult>";
	static const char no_token[] = "<ListBucketResult><IsTruncated>true</IsTruncated>"
	                               "</ListBucketResult>";
	struct listed l = {0};
	struct fl_err err = {0};
	char *next = NULL;

	(void)state;
	assert_int_equal(st_s3_list_parse(page, sizeof(page) - 1, note_key, &l, &next, &err), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.keys[0], "t/a&b");
	assert_string_equal(l.keys[1], "t/\xc3\xa9");
	assert_string_equal(next, "k&1");
	free(next);
	memset(&l, 0, sizeof(l));
	assert_int_equal(st_s3_list_parse(nul, sizeof(nul) - 1, note_key, &l, &next, &err), -1);
	assert_int_equal(err.kind, FL_ERR_IO);
	assert_non_null(strstr(err.msg, "NUL"));
	assert_int_equal(l.n, 0);
	assert_null(next);
	assert_int_equal(st_s3_list_parse(no_size, sizeof(no_size) - 1, note_key, &l, &next, &err),
	                 -1);
	assert_non_null(strstr(err.msg, "malformed entry"));
	assert_int_equal(
	        st_s3_list_parse(no_token, sizeof(no_token) - 1, note_key, &l, &next, &err), -1);
	assert_non_null(strstr(err.msg, "continuation token"));
}

static void test_xml(void **state)
{
	static const char doc[] =
	        "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"x\"><IsTruncated>true</IsTruncated>"
	        "<Contents><Key>a/1&amp;2.txt</Key><Size>5</Size></Contents>"
	        "<Contents><Key>a/&#233;&#x4E2D;</Key><Size>7</Size></Contents>"
	        "<Prefix/><NextContinuationToken>tok=</NextContinuationToken></ListBucketResult>";
	const char *p = doc, *end = doc + strlen(doc), *v, *k;
	size_t vl, kl, n = 0;
	struct fl_buf b = FL_BUF_INIT;

	(void)state;
	while ((p = st_xml_next(p, (size_t)(end - p), "Contents", &v, &vl)) != NULL) {
		assert_non_null(st_xml_next(v, vl, "Key", &k, &kl));
		fl_buf_reset(&b);
		assert_int_equal(st_xml_unescape(&b, k, kl), 0);
		assert_string_equal(b.data, n == 0 ? "a/1&2.txt" : "a/\xc3\xa9\xe4\xb8\xad");
		n++;
	}
	assert_int_equal(n, 2);
	assert_non_null(st_xml_next(doc, strlen(doc), "Prefix", &v, &vl));
	assert_int_equal(vl, 0);
	assert_non_null(st_xml_next(doc, strlen(doc), "NextContinuationToken", &v, &vl));
	assert_int_equal(vl, 4);
	/* Bounds: a tag cut off by the end of the buffer is not found. */
	assert_null(st_xml_next(doc, 60, "IsTruncated", &v, &vl));
	assert_null(st_xml_next("<Code>NoSuchKey", 15, "Code", &v, &vl));
	assert_null(st_xml_next("<Codex>1</Codex>", 16, "Code", &v, &vl));
	/* Bad entities are refused. */
	fl_buf_reset(&b);
	assert_int_equal(st_xml_unescape(&b, "a&bogus;", 8), -1);
	fl_buf_reset(&b);
	assert_int_equal(st_xml_unescape(&b, "a&#0;", 5), -1);
	fl_buf_reset(&b);
	assert_int_equal(st_xml_unescape(&b, "a&amp", 5), -1);
	fl_buf_reset(&b);
	assert_int_equal(st_xml_escape(&b, "<a&'\">"), 0);
	assert_string_equal(b.data, "&lt;a&amp;&apos;&quot;&gt;");
	fl_buf_free(&b);
}

static void test_errors_and_retries(void **state)
{
	(void)state;
	assert_int_equal(st_s3_error_kind(404, "NoSuchKey"), FL_ERR_NOT_FOUND);
	assert_int_equal(st_s3_error_kind(404, ""), FL_ERR_NOT_FOUND);
	assert_int_equal(st_s3_error_kind(404, "NoSuchBucket"), FL_ERR_IO);
	assert_int_equal(st_s3_error_kind(412, "PreconditionFailed"), FL_ERR_ALREADY_EXISTS);
	assert_int_equal(st_s3_error_kind(403, "SignatureDoesNotMatch"), FL_ERR_FORBIDDEN);
	assert_int_equal(st_s3_error_kind(403, "RequestTimeTooSkewed"), FL_ERR_FORBIDDEN);
	assert_int_equal(st_s3_error_kind(503, "SlowDown"), FL_ERR_UNAVAILABLE);
	assert_non_null(strstr(st_s3_error_hint("RequestTimeTooSkewed"), "clocks"));
	assert_non_null(strstr(st_s3_error_hint("NoSuchBucket"), "bucket"));
	assert_null(st_s3_error_hint("Whatever"));

	assert_true(st_s3_retryable(CURLE_COULDNT_CONNECT, 0, ""));
	assert_true(st_s3_retryable(CURLE_RECV_ERROR, 0, ""));
	assert_true(st_s3_retryable(CURLE_OPERATION_TIMEDOUT, 0, ""));
	assert_false(st_s3_retryable(CURLE_COULDNT_RESOLVE_HOST, 0, ""));
	assert_true(st_s3_retryable(CURLE_OK, 500, "InternalError"));
	assert_true(st_s3_retryable(CURLE_OK, 503, "SlowDown"));
	assert_true(st_s3_retryable(CURLE_OK, 503, ""));
	assert_true(st_s3_retryable(CURLE_OK, 200, "InternalError")); /* inside a 200 */
	assert_false(st_s3_retryable(CURLE_OK, 400, "SlowDown"));
	assert_false(st_s3_retryable(CURLE_OK, 403, "AccessDenied"));
	assert_false(st_s3_retryable(CURLE_OK, 404, "NoSuchKey"));
	assert_false(st_s3_retryable(CURLE_OK, 412, ""));
	assert_false(st_s3_retryable(CURLE_OK, 501, "NotImplemented"));

	for (int a = 0; a < 12; a++) {
		long cap = a < 6 ? 100L << a : 5000;

		if (cap > 5000)
			cap = 5000;
		assert_true(st_s3_backoff_ms(a, 0) == 0);
		assert_true(st_s3_backoff_ms(a, UINT32_MAX) <= cap);
		assert_true(st_s3_backoff_ms(a, (uint32_t)cap) == cap);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_sigv4_aws_examples),
	        cmocka_unit_test(test_sigv4_helpers),
	        cmocka_unit_test(test_target),
	        cmocka_unit_test(test_xml),
	        cmocka_unit_test(test_list_parse),
	        cmocka_unit_test(test_errors_and_retries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
