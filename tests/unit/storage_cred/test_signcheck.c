/* test_signcheck.c - every way out of a table that remote signing must
 * refuse, and the requests it must still sign.  Table: s3://warehouse/lake/t
 * on http://s3.local:9000. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "signcheck.h"

#define EP "http://s3.local:9000"
#define P EP "/warehouse/lake/t/"
#define V "http://warehouse.s3.local:9000/lake/t/"

enum style { PATH, VHOST };

struct sc_case {
	const char *name;
	enum style style;
	enum st_access access;
	const char *method, *uri;
	const char *copy_source; /* x-amz-copy-source or NULL */
	const char *body;
	enum fl_err_kind want; /* FL_ERR_NONE: signed */
};

#define RW ST_ACCESS_READ_WRITE
#define RO ST_ACCESS_READ
#define OK FL_ERR_NONE
#define NO FL_ERR_FORBIDDEN
#define BAD FL_ERR_BAD_REQUEST

static const char del_in[] = "<Delete><Object><Key>lake/t/data/a.parquet</Key></Object>"
                             "<Object><Key>lake/t/metadata/b.avro</Key></Object></Delete>";
static const char del_out[] = "<Delete><Object><Key>lake/t/data/a.parquet</Key></Object>"
                              "<Object><Key>lake/t-2/data/b.parquet</Key></Object></Delete>";
static const char del_dots[] = "<Delete><Object><Key>lake/t/../u/x</Key></Object></Delete>";
static const char del_ent[] = "<Delete><Object><Key>lake&#47;u/x</Key></Object></Delete>";
static const char del_none[] = "<Delete><Quiet>true</Quiet></Delete>";
/* As the AWS SDKs send it. */
static const char del_sdk[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
                              "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                              "<Object><Key>lake/t/data/a.parquet</Key></Object>"
                              "<Quiet>true</Quiet></Delete>";
/* Keys another XML parser reads and st_xml_next does not (fuzz_signcheck). */
static const char del_ns[] = "<Delete><Object><Key>lake/t/a</Key></Object>"
                             "<Object><s3:Key>other/x</s3:Key></Object></Delete>";
static const char del_cr[] = "<Delete><Object><Key>lake/t/a</Key></Object>"
                             "<Object><Key\r>other/x</Key></Object></Delete>";
static const char del_sp[] = "<Delete><Object><Key>lake/t/a</Key></Object>"
                             "<Object><Key>other/x</Key ></Object></Delete>";
static const char del_cmt[] = "<Delete><!-- x --><Object><Key>lake/t/a</Key></Object></Delete>";
static const char del_dslash[] = "<Delete><Object><Key>lake/t//</Key></Object></Delete>";

static const struct sc_case cases[] = {
        /* Signed. */
        {"GET object", PATH, RW, "GET", P "data/a.parquet", NULL, NULL, OK},
        {"HEAD object, read access", PATH, RO, "HEAD", P "metadata/v1.json", NULL, NULL, OK},
        {"GET, read access", PATH, RO, "GET", P "data/a%20b.parquet", NULL, NULL, OK},
        {"PUT object", PATH, RW, "PUT", P "data/x.parquet", NULL, NULL, OK},
        {"DELETE object", PATH, RW, "DELETE", P "data/x.parquet", NULL, NULL, OK},
        {"multipart create", PATH, RW, "POST", P "data/x.parquet?uploads", NULL, NULL, OK},
        {"multipart part", PATH, RW, "PUT", P "data/x.parquet?partNumber=1&uploadId=abc", NULL,
         NULL, OK},
        {"multipart complete", PATH, RW, "POST", P "data/x.parquet?uploadId=abc", NULL, NULL, OK},
        {"directory marker", PATH, RW, "PUT", P "data/", NULL, NULL, OK},
        {"list inside", PATH, RO, "GET", EP "/warehouse?list-type=2&prefix=lake%2Ft%2Fdata%2F",
         NULL, NULL, OK},
        {"list table root", PATH, RO, "GET", EP "/warehouse/?list-type=2&prefix=lake/t/", NULL,
         NULL, OK},
        {"bucket location", PATH, RO, "GET", EP "/warehouse?location", NULL, NULL, OK},
        {"HEAD bucket", PATH, RO, "HEAD", EP "/warehouse", NULL, NULL, OK},
        {"DeleteObjects inside", PATH, RW, "POST", EP "/warehouse?delete", NULL, del_in, OK},
        {"DeleteObjects as the SDKs send it", PATH, RW, "POST", EP "/warehouse?delete", NULL,
         del_sdk, OK},
        /* the name decodes to "delete": judged (and bound) by its body */
        {"DeleteObjects, encoded name", PATH, RW, "POST", EP "/warehouse?%64elete", NULL, del_in,
         OK},
        {"copy inside", PATH, RW, "PUT", P "data/b", "/warehouse/lake/t/data/a", NULL, OK},
        {"virtual host GET", VHOST, RW, "GET", V "data/a.parquet", NULL, NULL, OK},
        {"virtual host list", VHOST, RO, "GET", "http://warehouse.s3.local:9000/?prefix=lake/t/x",
         NULL, NULL, OK},
        {"default port", PATH, RO, "GET", "http://s3.local:9000/warehouse/lake/t/a", NULL, NULL,
         OK},

        /* Escapes. */
        {"another bucket", PATH, RW, "GET", EP "/other/lake/t/data/a", NULL, NULL, NO},
        {"bucket prefix of name", PATH, RW, "GET", EP "/warehouse2/lake/t/a", NULL, NULL, NO},
        {"sibling prefix", PATH, RW, "GET", EP "/warehouse/lake/t-2/data/a", NULL, NULL, NO},
        {"sibling without slash", PATH, RW, "GET", EP "/warehouse/lake/tx", NULL, NULL, NO},
        {"the prefix itself", PATH, RW, "GET", EP "/warehouse/lake/t", NULL, NULL, NO},
        {"the prefix dir", PATH, RW, "PUT", EP "/warehouse/lake/t/", NULL, NULL, NO},
        {"dot dot", PATH, RW, "GET", P "../u/data/a", NULL, NULL, NO},
        {"dot dot at end", PATH, RW, "GET", P "data/..", NULL, NULL, NO},
        {"encoded dot dot", PATH, RW, "GET", P "%2E%2E/u/a", NULL, NULL, NO},
        {"encoded dot dot lower", PATH, RW, "GET", P "%2e./u/a", NULL, NULL, NO},
        {"single dot", PATH, RW, "GET", P "./a", NULL, NULL, NO},
        {"encoded slash", PATH, RW, "GET", P "..%2F..%2Fu/a", NULL, NULL, NO},
        {"encoded slash lower", PATH, RW, "GET", P "a%2fb", NULL, NULL, NO},
        {"encoded backslash", PATH, RW, "GET", P "a%5Cb", NULL, NULL, NO},
        {"encoded backslash lower", PATH, RW, "GET", P "a%5cb", NULL, NULL, NO},
        {"raw backslash", PATH, RW, "GET", P "a\\..\\b", NULL, NULL, NO},
        {"double slash in key", PATH, RW, "GET", P "data//a", NULL, NULL, NO},
        {"double slash after bucket", PATH, RW, "GET", EP "/warehouse//lake/t/a", NULL, NULL, NO},
        {"double slash before bucket", PATH, RW, "GET", EP "//warehouse/lake/t/a", NULL, NULL, NO},
        {"virtual host on a path-style store", PATH, RW, "GET", V "data/a", NULL, NULL, NO},
        {"path style on a virtual-host store", VHOST, RW, "GET", P "data/a", NULL, NULL, NO},
        {"virtual host, other bucket", VHOST, RW, "GET", "http://other.s3.local:9000/lake/t/a",
         NULL, NULL, NO},
        {"virtual host, bucket in path", VHOST, RW, "GET",
         "http://warehouse.s3.local:9000/other/lake/t/a", NULL, NULL, NO},
        {"another host", PATH, RW, "GET", "http://evil.local:9000/warehouse/lake/t/a", NULL, NULL,
         NO},
        {"another port", PATH, RW, "GET", "http://s3.local:9001/warehouse/lake/t/a", NULL, NULL,
         NO},
        {"https against an http store", PATH, RW, "GET", "https://s3.local:9000/warehouse/lake/t/a",
         NULL, NULL, NO},
        {"user info", PATH, RW, "GET", "http://s3.local:9000@evil/warehouse/lake/t/a", NULL, NULL,
         BAD},
        {"PUT with read access", PATH, RO, "PUT", P "data/a", NULL, NULL, NO},
        {"DELETE with read access", PATH, RO, "DELETE", P "data/a", NULL, NULL, NO},
        {"POST with read access", PATH, RO, "POST", P "data/a?uploads", NULL, NULL, NO},
        {"PATCH", PATH, RW, "PATCH", P "data/a", NULL, NULL, NO},
        {"OPTIONS", PATH, RW, "OPTIONS", P "data/a", NULL, NULL, NO},
        {"acl sub-resource", PATH, RW, "PUT", P "data/a?acl", NULL, NULL, NO},
        {"tagging sub-resource", PATH, RW, "GET", P "data/a?tagging", NULL, NULL, NO},
        {"bucket policy", PATH, RW, "PUT", EP "/warehouse?policy", NULL, NULL, NO},
        {"bucket delete", PATH, RW, "DELETE", EP "/warehouse", NULL, NULL, NO},
        {"list without prefix", PATH, RO, "GET", EP "/warehouse?list-type=2", NULL, NULL, NO},
        {"list of a sibling", PATH, RO, "GET", EP "/warehouse?list-type=2&prefix=lake/t", NULL,
         NULL, NO},
        {"list of another table", PATH, RO, "GET", EP "/warehouse?prefix=lake/u/", NULL, NULL, NO},
        {"list with dot dot", PATH, RO, "GET", EP "/warehouse?prefix=lake/t/../u/", NULL, NULL, NO},
        {"DeleteObjects outside", PATH, RW, "POST", EP "/warehouse?delete", NULL, del_out, NO},
        {"DeleteObjects dot dot", PATH, RW, "POST", EP "/warehouse?delete", NULL, del_dots, NO},
        {"DeleteObjects entity", PATH, RW, "POST", EP "/warehouse?delete", NULL, del_ent, NO},
        {"DeleteObjects no keys", PATH, RW, "POST", EP "/warehouse?delete", NULL, del_none, NO},
        {"DeleteObjects no body", PATH, RW, "POST", EP "/warehouse?delete", NULL, NULL, NO},
        {"DeleteObjects prefixed key", PATH, RW, "POST", EP "/warehouse?delete", NULL, del_ns, NO},
        {"DeleteObjects CR in a tag", PATH, RW, "POST", EP "/warehouse?delete", NULL, del_cr, NO},
        {"DeleteObjects space in a close tag", PATH, RW, "POST", EP "/warehouse?delete", NULL,
         del_sp, NO},
        {"DeleteObjects comment", PATH, RW, "POST", EP "/warehouse?delete", NULL, del_cmt, NO},
        {"DeleteObjects trailing double slash", PATH, RW, "POST", EP "/warehouse?delete", NULL,
         del_dslash, NO},
        {"repeated prefix", PATH, RO, "GET",
         EP "/warehouse?list-type=2&prefix=lake/t/&prefix=other/", NULL, NULL, NO},
        {"DeleteObjects read access", PATH, RO, "POST", EP "/warehouse?delete", NULL, del_in, NO},
        {"POST on an object", PATH, RW, "POST", P "data/a", NULL, NULL, NO},
        {"copy from another table", PATH, RW, "PUT", P "data/b", "/warehouse/lake/u/secret", NULL,
         NO},
        {"copy from another bucket", PATH, RW, "PUT", P "data/b", "other/lake/t/a", NULL, NO},
        {"copy with dot dot", PATH, RW, "PUT", P "data/b", "warehouse/lake/t/../u/a", NULL, NO},
        {"not a URI", PATH, RW, "GET", "ftp://s3.local:9000/warehouse/lake/t/a", NULL, NULL, BAD},
        {"fragment", PATH, RW, "GET", P "a#x", NULL, NULL, BAD},
        {"bad escape", PATH, RW, "GET", P "a%zz", NULL, NULL, BAD},
        {"two ports", PATH, RO, "GET", "http://s3.local:9000:80/warehouse/lake/t/a", NULL, NULL,
         BAD},
};

static void test_cases(void **state)
{
	struct st_s3_loc loc;
	struct fl_err err = {0};

	(void)state;
	assert_int_equal(st_s3_loc_parse("s3://warehouse/lake/t", &loc, &err), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct sc_case *c = &cases[i];
		struct st_signcheck_scope s = {&loc, EP, c->style == PATH, c->access};
		struct st_sigv4_header h[] = {{"x-amz-copy-source", c->copy_source}};
		struct st_signcheck_req r = {c->method, c->uri,
		                             h,         c->copy_source ? 1 : 0,
		                             c->body,   c->body ? strlen(c->body) : 0};
		bool body_checked = true;
		int rc;

		fl_err_clear(&err);
		rc = st_signcheck(&s, &r, &body_checked, &err);
		if (c->want == FL_ERR_NONE && rc != 0)
			fail_msg("%s: refused: %s", c->name, err.msg);
		/* Only a DeleteObjects is judged by its body, and so must bind it. */
		if (rc == 0 && body_checked != (c->body != NULL))
			fail_msg("%s: body_checked is %d", c->name, body_checked);
		if (c->want != FL_ERR_NONE && (rc != -1 || err.kind != c->want))
			fail_msg("%s: want %s, got rc %d kind %s (%s)", c->name,
			         fl_err_kind_name(c->want), rc, fl_err_kind_name(err.kind),
			         err.msg);
	}
}

/* A second copy source (any case) is refused: a store may take either. */
static void test_repeated_copy_source(void **state)
{
	struct st_s3_loc loc;
	struct fl_err err = {0};
	struct st_signcheck_scope s = {&loc, EP, true, RW};
	struct st_sigv4_header h[] = {{"x-amz-copy-source", "warehouse/lake/t/data/a"},
	                              {"X-Amz-Copy-Source", "warehouse/other/secret"}};
	struct st_signcheck_req r = {"PUT", P "data/b", h, 2, NULL, 0};
	bool body_checked;

	(void)state;
	assert_int_equal(st_s3_loc_parse("s3://warehouse/lake/t", &loc, &err), 0);
	assert_int_equal(st_signcheck(&s, &r, &body_checked, &err), -1);
	assert_int_equal(err.kind, FL_ERR_FORBIDDEN);
	assert_non_null(strstr(err.msg, "x-amz-copy-source is repeated"));
	r.nheaders = 1;
	assert_int_equal(st_signcheck(&s, &r, &body_checked, &err), 0);
}

static void test_url_split(void **state)
{
	struct st_url u;
	struct fl_err err = {0};

	(void)state;
	assert_int_equal(st_url_split("HTTPS://S3.Example.com:443/b/k?x=1", &u, &err), 0);
	assert_true(u.https);
	assert_string_equal(u.host, "s3.example.com");
	assert_string_equal(u.path, "/b/k");
	assert_string_equal(u.query, "x=1");
	assert_int_equal(st_url_split("http://h:80", &u, &err), 0);
	assert_string_equal(u.host, "h");
	assert_string_equal(u.path, "/");
	assert_int_equal(st_url_split("http://h/a b", &u, &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_cases),
	        cmocka_unit_test(test_repeated_copy_source),
	        cmocka_unit_test(test_url_split),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
