/* test_reply.c - the error model: every error kind maps to a 4xx/5xx status
 * and an Iceberg type name, and srv_reply_* install responses with the
 * right status and headers (no daemon needed to build an MHD_Response).
 * The test links libmicrohttpd itself to read the responses back; reply.c
 * reaches the same library through srv_libmhd_load. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "libmhd.h"
#include "log.h"
#include "reply.h"

static void test_every_kind_maps(void **state)
{
	for (int k = 0; k < FL_ERR_KIND_COUNT; k++) {
		unsigned st = srv_err_status((enum fl_err_kind)k);
		const char *type = srv_err_type((enum fl_err_kind)k);

		if (st < 400 || st > 599)
			fail_msg("kind %s maps to status %u", fl_err_kind_name((enum fl_err_kind)k),
			         st);
		if (type == NULL || type[0] == '\0')
			fail_msg("kind %s has no type name", fl_err_kind_name((enum fl_err_kind)k));
	}
	/* Out-of-range kinds are server errors, not crashes. */
	assert_int_equal(srv_err_status(FL_ERR_KIND_COUNT), 500);
	assert_int_equal(srv_err_status((enum fl_err_kind)1000), 500);
	assert_string_equal(srv_err_type(FL_ERR_KIND_COUNT), "ServerErrorException");
}

static void test_specific_kinds(void **state)
{
	static const struct {
		enum fl_err_kind kind;
		unsigned status;
		const char *type;
	} cases[] = {
	        {FL_ERR_BAD_REQUEST, 400, "BadRequestException"},
	        {FL_ERR_NOT_AUTHORIZED, 401, "NotAuthorizedException"},
	        {FL_ERR_FORBIDDEN, 403, "ForbiddenException"},
	        {FL_ERR_NOT_FOUND, 404, "NoSuchResourceException"},
	        {FL_ERR_NO_SUCH_WAREHOUSE, 404, "NoSuchWarehouseException"},
	        {FL_ERR_NO_SUCH_NAMESPACE, 404, "NoSuchNamespaceException"},
	        {FL_ERR_NO_SUCH_TABLE, 404, "NoSuchTableException"},
	        {FL_ERR_NO_SUCH_VIEW, 404, "NoSuchViewException"},
	        {FL_ERR_METHOD_NOT_ALLOWED, 405, "MethodNotAllowedException"},
	        {FL_ERR_UNSUPPORTED, 406, "UnsupportedOperationException"},
	        {FL_ERR_ALREADY_EXISTS, 409, "AlreadyExistsException"},
	        {FL_ERR_NAMESPACE_NOT_EMPTY, 409, "NamespaceNotEmptyException"},
	        {FL_ERR_COMMIT_FAILED, 409, "CommitFailedException"},
	        {FL_ERR_TOO_LARGE, 413, "RequestTooLargeException"},
	        {FL_ERR_UNPROCESSABLE, 422, "UnprocessableEntityException"},
	        {FL_ERR_COMMIT_STATE_UNKNOWN, 500, "CommitStateUnknownException"},
	        {FL_ERR_UNAVAILABLE, 503, "ServiceUnavailableException"},
	        {FL_ERR_INTERNAL, 500, "ServerErrorException"},
	        {FL_ERR_IO, 500, "ServerErrorException"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned st = srv_err_status(cases[i].kind);
		const char *type = srv_err_type(cases[i].kind);

		if (st != cases[i].status || strcmp(type, cases[i].type) != 0)
			fail_msg("kind %s -> %u %s, want %u %s", fl_err_kind_name(cases[i].kind),
			         st, type, cases[i].status, cases[i].type);
	}
}

static void req_init(struct srv_req *r, const char *method)
{
	memset(r, 0, sizeof(*r));
	r->method = method;
	snprintf(r->id, sizeof(r->id), "req-42");
}

static void req_done(struct srv_req *r)
{
	if (r->resp != NULL)
		MHD_destroy_response(r->resp);
	r->resp = NULL;
}

static void test_reply_error_headers(void **state)
{
	static const struct {
		enum fl_err_kind kind;
		const char *allow;
		unsigned status;
		const char *want_allow; /* NULL = no Allow header */
		bool retry_after;
	} cases[] = {
	        {FL_ERR_METHOD_NOT_ALLOWED, "GET, POST", 405, "GET, POST", false},
	        {FL_ERR_METHOD_NOT_ALLOWED, NULL, 405, NULL, false},
	        {FL_ERR_METHOD_NOT_ALLOWED, "", 405, NULL, false},
	        {FL_ERR_NOT_FOUND, "GET", 404, NULL, false},
	        {FL_ERR_UNAVAILABLE, NULL, 503, NULL, true},
	        {FL_ERR_NOMEM, NULL, 503, NULL, true},
	        {FL_ERR_COMMIT_STATE_UNKNOWN, NULL, 500, NULL, false},
	        {FL_ERR_BAD_REQUEST, NULL, 400, NULL, false},
	};

	/* 5xx replies log a line; keep the test output readable. */
	fl_log_set_level(FL_LOG_ERROR + 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct srv_req r;
		struct fl_err err;
		const char *h;

		req_init(&r, "PUT");
		(void)fl_err_set(&err, cases[i].kind, "something about %s", "x");
		srv_reply_error(&r, &err, cases[i].allow);
		assert_non_null(r.resp);
		assert_int_equal(r.status, cases[i].status);
		assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_CONTENT_TYPE),
		                    "application/json");
		assert_string_equal(MHD_get_response_header(r.resp, "X-Request-Id"), "req-42");
		h = MHD_get_response_header(r.resp, "Allow");
		if (cases[i].want_allow == NULL)
			assert_null(h);
		else
			assert_string_equal(h, cases[i].want_allow);
		h = MHD_get_response_header(r.resp, "Retry-After");
		if (cases[i].retry_after)
			assert_string_equal(h, "1");
		else
			assert_null(h);
		req_done(&r);
	}
	fl_log_set_level(FL_LOG_INFO);
}

static void test_reply_success(void **state)
{
	struct srv_req r;
	json_t *v = json_pack("{s:i}", "a", 1);

	assert_non_null(v);
	req_init(&r, "GET");
	assert_int_equal(srv_reply_ok(&r, v), 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_CONTENT_TYPE),
	                    "application/json");
	/* A second reply replaces the first (no leak under ASan). */
	assert_int_equal(srv_reply_created(&r, v), 0);
	assert_int_equal(r.status, 201);
	req_done(&r);

	req_init(&r, "DELETE");
	assert_int_equal(srv_reply_no_content(&r), 0);
	assert_int_equal(r.status, 204);
	assert_null(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_CONTENT_TYPE));
	assert_string_equal(MHD_get_response_header(r.resp, "X-Request-Id"), "req-42");
	req_done(&r);

	req_init(&r, "GET");
	assert_int_equal(srv_reply_bytes(&r, "application/yaml", "a: 1\n", 5), 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_CONTENT_TYPE),
	                    "application/yaml");
	req_done(&r);

	req_init(&r, "GET");
	assert_int_equal(srv_reply_bytes(&r, "text/plain", "", 0), 0);
	assert_int_equal(r.status, 200);
	req_done(&r);

	req_init(&r, "GET");
	assert_int_equal(srv_reply_not_ready(&r, "database down"), 0);
	assert_int_equal(r.status, 503);
	assert_string_equal(MHD_get_response_header(r.resp, "Retry-After"), "1");
	req_done(&r);
	json_decref(v);
}

static void test_error_replaces_earlier_reply(void **state)
{
	/* A handler that built a reply and then failed answers with the error. */
	struct srv_req r;
	struct fl_err err;
	json_t *v = json_object();

	req_init(&r, "POST");
	assert_int_equal(srv_reply_ok(&r, v), 0);
	(void)fl_err_set(&err, FL_ERR_COMMIT_FAILED, "main is 81, expected 80");
	srv_reply_error(&r, &err, NULL);
	assert_int_equal(r.status, 409);
	req_done(&r);
	/* An empty message still yields a reply. */
	req_init(&r, "POST");
	fl_err_clear(&err);
	err.kind = FL_ERR_BAD_REQUEST;
	srv_reply_error(&r, &err, NULL);
	assert_int_equal(r.status, 400);
	req_done(&r);
	json_decref(v);
}

static void test_reply_table_etag_and_replay(void **state)
{
	struct fl_arena *a = fl_arena_new();
	struct srv_req r;
	char *body = strdup("{\"metadata\":{}}");

	assert_non_null(a);
	assert_non_null(body);
	req_init(&r, "GET");
	r.arena = a;
	/* The body is taken over; the ETag is sent and remembered. */
	assert_int_equal(srv_reply_table(&r, body, strlen(body), "\"v1\""), 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_ETAG), "\"v1\"");
	assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_CONTENT_TYPE),
	                    "application/json");
	assert_string_equal(r.out_etag, "\"v1\"");
	assert_int_equal(r.out_len, strlen("{\"metadata\":{}}"));
	req_done(&r);

	req_init(&r, "GET");
	r.arena = a;
	assert_int_equal(srv_reply_not_modified(&r, "\"v1\"", "\"v1\""), 0);
	assert_int_equal(r.status, 304);
	assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_ETAG), "\"v1\"");
	assert_null(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_VARY)); /* nothing is coded */
	req_done(&r);

	/* A replayed idempotent response keeps its stored status and says so. */
	req_init(&r, "POST");
	r.arena = a;
	assert_int_equal(srv_reply_stored(&r, 201, "application/json", NULL, "{}", 2), 0);
	assert_int_equal(r.status, 201);
	assert_string_equal(MHD_get_response_header(r.resp, "Idempotent-Replayed"), "true");
	assert_null(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_ETAG));
	req_done(&r);

	req_init(&r, "DELETE");
	r.arena = a;
	assert_int_equal(srv_reply_stored(&r, 204, NULL, "\"e\"", NULL, 0), 0);
	assert_int_equal(r.status, 204);
	assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_ETAG), "\"e\"");
	req_done(&r);
	fl_arena_free(a);
}

/* A request from a client that accepts coding c, with a floor of min bytes. */
static void coded_req(struct srv_req *r, const char *method, struct fl_arena *a, enum fl_coding c,
                      size_t min)
{
	req_init(r, method);
	r->arena = a;
	r->coding = c;
	r->code_min = min;
}

/* A body of at least code_min bytes goes out in the coding the client
 * accepts, with Vary and a weak ETag, and r->out_body stays the plain body
 * (what an idempotency record stores); a smaller one, a secret one or a
 * 204 goes as it is. */
static void test_coded(void **state)
{
	static const char plain[] =
	        "{\"metadata\":{\"snapshots\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
	        "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}}";
	struct fl_arena *a = fl_arena_new();
	struct srv_req r;
	json_t *tok;
	char *body;

	assert_non_null(a);
	for (int coding = FL_CODING_GZIP; coding <= FL_CODING_ZSTD; coding++) {
		coded_req(&r, "GET", a, (enum fl_coding)coding, 64);
		body = strdup(plain);
		assert_non_null(body);
		assert_int_equal(srv_reply_table(&r, body, strlen(body), "\"v1\""), 0);
		assert_string_equal(
		        MHD_get_response_header(r.resp, MHD_HTTP_HEADER_CONTENT_ENCODING),
		        fl_coding_name((enum fl_coding)coding));
		assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_VARY),
		                    "Accept-Encoding");
		assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_ETAG),
		                    "W/\"v1\"");
		assert_string_equal(r.out_etag, "\"v1\""); /* stored strong, sent weak */
		assert_int_equal(r.out_coding, coding);
		assert_true(r.out_coded_len > 0 && r.out_coded_len < strlen(plain));
		assert_int_equal(r.out_len, strlen(plain));
		assert_memory_equal(r.out_body, plain, r.out_len);
		req_done(&r);

		/* a replay is coded for its own client, its stored tag made weak */
		coded_req(&r, "POST", a, (enum fl_coding)coding, 64);
		assert_int_equal(srv_reply_stored(&r, 200, "application/json", "\"v2\"", plain,
		                                  strlen(plain)),
		                 0);
		assert_string_equal(
		        MHD_get_response_header(r.resp, MHD_HTTP_HEADER_CONTENT_ENCODING),
		        fl_coding_name((enum fl_coding)coding));
		assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_ETAG),
		                    "W/\"v2\"");
		req_done(&r);
	}

	/* past 256 KiB gzip codes no body made per request (four times zstd's
	 * cost), zstd still does */
	for (int coding = FL_CODING_GZIP; coding <= FL_CODING_ZSTD; coding++) {
		size_t big = 300 * 1024;

		coded_req(&r, "GET", a, (enum fl_coding)coding, 64);
		body = malloc(big);
		assert_non_null(body);
		for (size_t i = 0; i < big; i++)
			body[i] = plain[i % (sizeof(plain) - 1)];
		assert_int_equal(srv_reply_table(&r, body, big, NULL), 0);
		assert_int_equal(r.out_coding,
		                 coding == FL_CODING_GZIP ? FL_CODING_IDENTITY : FL_CODING_ZSTD);
		assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_VARY),
		                    "Accept-Encoding");
		req_done(&r);
	}

	/* too small: as it is, and never varies */
	coded_req(&r, "GET", a, FL_CODING_ZSTD, 4096);
	body = strdup(plain);
	assert_non_null(body);
	assert_int_equal(srv_reply_table(&r, body, strlen(body), "\"v1\""), 0);
	assert_null(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_CONTENT_ENCODING));
	assert_null(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_VARY));
	assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_ETAG), "\"v1\"");
	req_done(&r);

	/* a secret: as it is, whatever the client accepts */
	coded_req(&r, "GET", a, FL_CODING_GZIP, 1);
	r.secret = true;
	body = strdup(plain);
	assert_non_null(body);
	assert_int_equal(srv_reply_table(&r, body, strlen(body), NULL), 0);
	assert_null(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_CONTENT_ENCODING));
	assert_int_equal(r.out_coding, FL_CODING_IDENTITY);
	req_done(&r);

	/* a token response marks itself secret */
	coded_req(&r, "POST", a, FL_CODING_GZIP, 1);
	tok = json_pack("{s:s}", "access_token", "eyJ...................................");
	assert_int_equal(srv_reply_token(&r, tok), 0);
	json_decref(tok);
	assert_null(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_CONTENT_ENCODING));
	req_done(&r);

	/* 204 and a 304: no body; the 304 varies as its 200 would, its tag as the client's */
	coded_req(&r, "DELETE", a, FL_CODING_GZIP, 1);
	assert_int_equal(srv_reply_no_content(&r), 0);
	assert_null(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_CONTENT_ENCODING));
	req_done(&r);
	coded_req(&r, "GET", a, FL_CODING_GZIP, 1);
	assert_int_equal(srv_reply_not_modified(&r, "\"v1\"", "\"v0\", W/\"v1\""), 0);
	assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_ETAG), "W/\"v1\"");
	assert_string_equal(MHD_get_response_header(r.resp, MHD_HTTP_HEADER_VARY),
	                    "Accept-Encoding");
	req_done(&r);
	fl_arena_free(a);
}

/* reply.c calls libmicrohttpd through the table the daemon loads at start. */
static int load_mhd(void **state)
{
	struct fl_err err;

	return srv_libmhd_load(&err) != NULL ? 0 : (print_message("%s\n", err.msg), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_every_kind_maps),
	        cmocka_unit_test(test_specific_kinds),
	        cmocka_unit_test(test_reply_error_headers),
	        cmocka_unit_test(test_reply_success),
	        cmocka_unit_test(test_error_replaces_earlier_reply),
	        cmocka_unit_test(test_reply_table_etag_and_replay),
	        cmocka_unit_test(test_coded),
	};

	return cmocka_run_group_tests_name("server/reply", tests, load_mhd, NULL);
}
