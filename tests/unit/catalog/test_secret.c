/* Unit tests of catalog/secret.c: secrets are random, hashes are salted
 * PBKDF2 in the documented format, and verification accepts only the secret
 * (and rejects malformed hashes instead of crashing on them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "access.h"

static void test_new_secrets_differ(void **state)
{
	char a[64], b[64];
	struct fl_err err = {0};

	(void)state;
	assert_int_equal(cat_secret_new(a, &err), 0);
	assert_int_equal(cat_secret_new(b, &err), 0);
	assert_int_equal(strlen(a), 43);
	assert_string_not_equal(a, b);
	assert_int_equal(
	        strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), 43);
}

static void test_hash_and_verify(void **state)
{
	struct fl_err err = {0};
	char *h1 = NULL, *h2 = NULL;

	(void)state;
	assert_int_equal(cat_secret_hash("correct horse battery", &h1, &err), 0);
	assert_int_equal(cat_secret_hash("correct horse battery", &h2, &err), 0);
	assert_non_null(strstr(h1, "pbkdf2-sha256$600000$"));
	assert_null(strstr(h1, "correct"));
	assert_string_not_equal(h1, h2); /* salted */
	assert_true(cat_secret_verify("correct horse battery", h1));
	assert_true(cat_secret_verify("correct horse battery", h2));
	assert_false(cat_secret_verify("correct horse batterY", h1));
	assert_false(cat_secret_verify("", h1));
	free(h1);
	free(h2);
}

static void test_malformed_hashes(void **state)
{
	static const char *bad[] = {
	        "",
	        "plain",
	        "pbkdf2-sha256$",
	        "pbkdf2-sha256$abc$AAAA$AAAA",
	        "pbkdf2-sha256$10$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	        "pbkdf2-sha256$600000$short$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	        "pbkdf2-sha256$600000$AAAAAAAAAAAAAAAAAAAAAA",
	        "pbkdf2-sha256$600000$AAAAAAAAAAAAAAAAAAAAAA$!!",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(cat_secret_verify("x", bad[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_new_secrets_differ),
	        cmocka_unit_test(test_hash_and_verify),
	        cmocka_unit_test(test_malformed_hashes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
