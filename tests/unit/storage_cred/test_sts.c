/* test_sts.c - reading STS answers (success and error), ISO-8601 times, and
 * the bounded XML scanner under them.  The call itself is exercised against
 * moto_server by tests/integration/vending.test.mjs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sts.h"

static const char ok_xml[] =
        "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
        "  <AssumeRoleResult>\n"
        "    <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/r/s</Arn>"
        "<AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>\n"
        "    <Credentials>\n"
        "      <SessionToken>FQoGZXIvYXdzE&amp;A/B+C==</SessionToken>\n"
        "      <SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY</SecretAccessKey>\n"
        "      <Expiration>2026-12-01T15:39:46.123Z</Expiration>\n"
        "      <AccessKeyId>ASIAIOSFODNN7EXAMPLE</AccessKeyId>\n"
        "    </Credentials>\n"
        "    <PackedPolicySize>6</PackedPolicySize>\n"
        "  </AssumeRoleResult>\n"
        "</AssumeRoleResponse>\n";

static void test_parse_ok(void **state)
{
	struct st_sts_creds *c = calloc(1, sizeof(*c));
	struct fl_err err = {0};

	(void)state;
	assert_int_equal(st_sts_parse(ok_xml, strlen(ok_xml), c, &err), 0);
	assert_string_equal(c->access_key_id, "ASIAIOSFODNN7EXAMPLE");
	assert_string_equal(c->secret_access_key, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY");
	assert_string_equal(c->session_token, "FQoGZXIvYXdzE&A/B+C==");
	assert_int_equal(c->expires_at_ms, 1796139586123LL);
	free(c);
}

static void test_parse_errors(void **state)
{
	static const char denied[] =
	        "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
	        "<Message>User is not authorized to perform: sts:AssumeRole</Message></Error>"
	        "</ErrorResponse>";
	static const char invalid[] = "<ErrorResponse><Error><Code>MalformedPolicyDocument</Code>"
	                              "<Message>bad</Message></Error></ErrorResponse>";
	static const char partial[] = "<Credentials><AccessKeyId>A</AccessKeyId></Credentials>";
	static const char bad_time[] =
	        "<AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey>"
	        "<SessionToken>T</SessionToken><Expiration>tomorrow</Expiration>";
	struct st_sts_creds *c = calloc(1, sizeof(*c));
	struct fl_err err = {0};

	(void)state;
	assert_int_equal(st_sts_parse(denied, strlen(denied), c, &err), -1);
	assert_int_equal(err.kind, FL_ERR_FORBIDDEN);
	assert_non_null(strstr(err.msg, "AccessDenied: User is not authorized"));
	assert_int_equal(st_sts_parse(invalid, strlen(invalid), c, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_int_equal(st_sts_parse(partial, strlen(partial), c, &err), -1);
	assert_int_equal(err.kind, FL_ERR_INTERNAL);
	assert_int_equal(st_sts_parse(bad_time, strlen(bad_time), c, &err), -1);
	assert_int_equal(st_sts_parse("", 0, c, &err), -1);
	assert_string_equal(c->access_key_id, ""); /* untouched */
	free(c);
}

static void test_iso8601(void **state)
{
	(void)state;
	assert_int_equal(st_iso8601_ms("1970-01-01T00:00:00Z"), 0);
	assert_int_equal(st_iso8601_ms("2015-08-30T12:36:00Z"), 1440938160000LL);
	assert_int_equal(st_iso8601_ms("2015-08-30T12:36:00.5Z"), 1440938160500LL);
	assert_int_equal(st_iso8601_ms("2015-08-30T12:36:00+00:00"), 1440938160000LL);
	assert_int_equal(st_iso8601_ms("2015-08-30 12:36:00Z"), -1);
	assert_int_equal(st_iso8601_ms("2015-13-30T12:36:00Z"), -1);
	assert_int_equal(st_iso8601_ms("2015-08-30T12:36:00"), -1);
	assert_int_equal(st_iso8601_ms("2015-08-30T12:36:00.Z"), -1);
}

static void test_xml_text(void **state)
{
	static const char x[] = "<a><Key>one</Key><KeyMarker>no</KeyMarker><Key attr=\"1\">t&#119;o"
	                        "&#x21;&lt;</Key><Key/><Key>x<b/></Key></a>";
	const char *p = x, *end = x + strlen(x);
	char out[16];
	struct fl_err err = {0};

	(void)state;
	assert_int_equal(st_xml_text(p, (size_t)(end - p), "Key", out, sizeof(out), &p, &err), 1);
	assert_string_equal(out, "one");
	assert_int_equal(st_xml_text(p, (size_t)(end - p), "Key", out, sizeof(out), &p, &err), 1);
	assert_string_equal(out, "two!<");
	assert_int_equal(st_xml_text(p, (size_t)(end - p), "Key", out, sizeof(out), &p, &err), 1);
	assert_string_equal(out, "");
	assert_int_equal(st_xml_text(p, (size_t)(end - p), "Key", out, sizeof(out), &p, &err), -1);
	assert_int_equal(st_xml_text(x, strlen(x), "Nope", out, sizeof(out), NULL, &err), 0);
	assert_int_equal(st_xml_text("<K>12345</K>", 12, "K", out, 4, NULL, &err), -1);
	assert_int_equal(st_xml_text("<K>a&bogus;</K>", 15, "K", out, 16, NULL, &err), -1);
	assert_int_equal(st_xml_text("<K>abc", 6, "K", out, 16, NULL, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parse_ok),
	        cmocka_unit_test(test_parse_errors),
	        cmocka_unit_test(test_iso8601),
	        cmocka_unit_test(test_xml_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
