/* Unit tests of catalog/secret.c: secrets are random, hashes are salted
 * PBKDF2 in the documented format, and verification accepts only the secret
 * (and rejects malformed hashes instead of crashing on them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "access.h"
#include "b64.h"
#include "libcrypto.h"

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

/* Hashes made by another implementation (Python's hashlib.pbkdf2_hmac, salt
 * bytes 0..15) verify, as hashes stored before this version's derivation did;
 * one character changed in the hash or the secret does not. */
static void test_known_hashes(void **state)
{
	static const struct {
		const char *secret, *stored;
	} known[] = {
	        {"correct horse battery staple", "pbkdf2-sha256$600000$AAECAwQFBgcICQoLDA0ODw$"
	                                         "7xdxRO7JQgy8EJPSqLNEqSvFBtDU7JwCjdGfgyTYweY"},
	        {"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", /* 65: hashed */
	         "pbkdf2-sha256$1000$AAECAwQFBgcICQoLDA0ODw$DfhhEUjHpn7neTELZqLqiaGqZYLel7mz2cnxge9dT9g"},
	        {"", "pbkdf2-sha256$1000$AAECAwQFBgcICQoLDA0ODw$"
	             "xbMBsf1hvO1j8AZCojBOxnRRn7182DxLyD2v4XQ_mFU"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		char changed[128];

		assert_true(cat_secret_verify(known[i].secret, known[i].stored));
		snprintf(changed, sizeof(changed), "%s", known[i].stored);
		changed[strlen(changed) - 2] ^= 1; /* a bit of the hash, not the padding bits */
		assert_false(cat_secret_verify(known[i].secret, changed));
		snprintf(changed, sizeof(changed), "%s!", known[i].secret);
		assert_false(cat_secret_verify(changed, known[i].stored));
	}
}

/* The derivation equals OpenSSL's PKCS5_PBKDF2_HMAC for secrets on each side
 * of HMAC's 64-byte block (a longer key is hashed first) and for odd round
 * counts. */
static void test_matches_openssl(void **state)
{
	static const size_t lens[] = {0, 1, 31, 32, 63, 64, 65, 128, 1000};
	static const int rounds[] = {1000, 1001, 2047};
	unsigned char salt[16], h[32];
	char secret[1001], s64[32], h64[48], stored[128];

	(void)state;
	for (size_t i = 0; i < sizeof(secret) - 1; i++)
		secret[i] = (char)(' ' + (i * 7919) % 95);
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		for (size_t r = 0; r < sizeof(rounds) / sizeof(rounds[0]); r++) {
			char saved;

			for (size_t i = 0; i < sizeof(salt); i++)
				salt[i] = (unsigned char)(l * 31 + r * 7 + i);
			saved = secret[lens[l]];
			secret[lens[l]] = '\0';
			assert_int_equal(PKCS5_PBKDF2_HMAC(secret, (int)lens[l], salt, sizeof(salt),
			                                   rounds[r], EVP_sha256(), sizeof(h), h),
			                 1);
			fl_b64url_encode(salt, sizeof(salt), s64);
			fl_b64url_encode(h, sizeof(h), h64);
			snprintf(stored, sizeof(stored), "pbkdf2-sha256$%d$%s$%s", rounds[r], s64,
			         h64);
			assert_true(cat_secret_verify(secret, stored));
			if (lens[l] > 0) {
				secret[lens[l] - 1] ^= 1;
				assert_false(cat_secret_verify(secret, stored));
				secret[lens[l] - 1] ^= 1;
			}
			secret[lens[l]] = saved;
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_new_secrets_differ), cmocka_unit_test(test_hash_and_verify),
	        cmocka_unit_test(test_malformed_hashes),   cmocka_unit_test(test_known_hashes),
	        cmocka_unit_test(test_matches_openssl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
