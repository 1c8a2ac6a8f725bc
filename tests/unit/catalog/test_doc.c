/* Unit tests of catalog/db/doc.c: a metadata document as table_entry.metadata
 * stores it.  A long document is packed and unpacks to the same bytes; a
 * short one, one naming a floe.maintenance.* property and one packing would
 * not shrink are stored as they are; a stored value that is not a whole
 * packed document of text is refused with a message; threads pack and unpack
 * at once, each with its own contexts. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include <cmocka.h>

#include "b64.h"
#include "db/db_int.h"

/* A document of about n bytes, shaped like the benchmarks' (seed varies it). */
static char *document(size_t n, unsigned seed)
{
	char *t = malloc(n + 64);
	size_t len = (size_t)snprintf(t, n + 64, "{\"format-version\":2,\"properties\":{");

	assert_non_null(t);
	for (unsigned i = 0; len < n; i++)
		len += (size_t)snprintf(t + len, n + 64 - len, "\"p.%04u\":\"v-%08u\",", i,
		                        i * 7919u + seed);
	t[len - 1] = '}';
	memcpy(t + len, "}", 2);
	return t;
}

static void assert_unpacks_to(const char *stored, const char *text)
{
	struct fl_err err = {0};
	char *out = NULL;
	size_t n = 0;

	assert_true(cat_doc_packed(stored, strlen(stored)));
	assert_int_equal(cat_doc_unpack(stored, strlen(stored), &out, &n, &err), 0);
	assert_int_equal(n, strlen(text));
	assert_string_equal(out, text);
	free(out);
}

static void test_pack_roundtrip(void **state)
{
	(void)state;
	for (size_t n = 1024; n <= 300000; n *= 4) {
		char *text = document(n, (unsigned)n), *owned = NULL;
		const char *stored = cat_doc_pack(text, &owned);

		assert_ptr_equal(stored, owned);
		assert_int_equal(strncmp(stored, "zstd:", 5), 0);
		assert_true(strlen(stored) < strlen(text) / (n >= 4096 ? 3 : 1));
		/* base64url: nothing PostgreSQL's LIKE '%floe.maintenance.%' could match. */
		assert_int_equal(strspn(stored + 5,
		                        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		                        "0123456789-_"),
		                 strlen(stored) - 5);
		assert_unpacks_to(stored, text);
		free(owned);
		free(text);
	}
}

static void test_stored_as_is(void **state)
{
	char *owned = NULL, *text, *noise;

	(void)state;

	/* NULL (only the file holds the document) stays NULL. */
	assert_null(cat_doc_pack(NULL, &owned));
	assert_null(owned);
	/* Short. */
	text = document(900, 1);
	assert_ptr_equal(cat_doc_pack(text, &owned), text);
	assert_null(owned);
	free(text);
	/* A maintenance property, which the scheduler reads in SQL. */
	text = document(20000, 2);
	memcpy(text + 5000, "\"floe.maintenance.x\"", 20);
	assert_ptr_equal(cat_doc_pack(text, &owned), text);
	assert_null(owned);
	free(text);
	/* Packing would not shrink it. */
	noise = malloc(4097);
	assert_non_null(noise);
	for (unsigned i = 0, x = 12345; i < 4096; i++) {
		x = x * 1103515245u + 12345u;
		noise[i] = (char)(33 + (x >> 16) % 94);
	}
	noise[0] = '{';
	noise[4096] = '\0';
	assert_ptr_equal(cat_doc_pack(noise, &owned), noise);
	assert_null(owned);
	assert_false(cat_doc_packed(noise, 4096));
	free(noise);
}

/* "zstd:" and the base64url of a zstd frame of the n bytes at p. */
static char *packed_of(const void *p, size_t n)
{
	size_t cap = ZSTD_compressBound(n), zn;
	unsigned char *z = malloc(cap);
	char *s;

	assert_non_null(z);
	zn = ZSTD_compress(z, cap, p, n, 1);
	assert_false(ZSTD_isError(zn));
	s = malloc(5 + (4 * zn + 2) / 3 + 1);
	assert_non_null(s);
	memcpy(s, "zstd:", 5);
	fl_b64url_encode(z, zn, s + 5);
	free(z);
	return s;
}

static void assert_refused(const char *v, size_t len, const char *why)
{
	struct fl_err err = {0};
	char *out = (char *)"untouched";
	size_t n = 0;

	assert_int_equal(cat_doc_unpack(v, len, &out, &n, &err), -1);
	assert_null(out);
	assert_int_equal(err.kind, FL_ERR_INTERNAL);
	if (strstr(err.msg, why) == NULL)
		fail_msg("'%s' does not say '%s'", err.msg, why);
}

static void test_unpack_refuses(void **state)
{
	char *text = document(5000, 3), *owned = NULL, *cut;
	const char *stored = cat_doc_pack(text, &owned);
	char with_nul[2000];

	(void)state;
	assert_refused(text, strlen(text), "not a packed document");
	assert_refused("zstd:", 5, "without a valid zstd frame");
	assert_refused("zstd:ab.cd", 10, "not base64url");
	assert_refused("zstd:QUJDREVGR0g", 16, "without a valid zstd frame");
	/* A frame cut short: its header still promises the whole text. */
	cut = strdup(stored);
	assert_non_null(cut);
	cut[strlen(cut) - 40] = '\0';
	assert_refused(cut, strlen(cut), "does not unpack");
	free(cut);
	/* Text with a NUL inside would be cut short by its readers. */
	memset(with_nul, 'a', sizeof(with_nul));
	with_nul[1000] = '\0';
	cut = packed_of(with_nul, sizeof(with_nul));
	assert_refused(cut, strlen(cut), "does not unpack");
	free(cut);
	free(owned);
	free(text);
}

static void *pack_many(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (unsigned i = 0; i < 200; i++) {
		char *text = document(2000 + 37 * i, seed * 1000 + i), *owned = NULL, *out = NULL;
		const char *stored = cat_doc_pack(text, &owned);
		struct fl_err err = {0};
		size_t n = 0;

		if (owned == NULL || cat_doc_unpack(stored, strlen(stored), &out, &n, &err) != 0 ||
		    strcmp(out, text) != 0)
			return (void *)1;
		free(out);
		free(owned);
		free(text);
	}
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t t[4];
	void *rc;

	(void)state;
	for (uintptr_t i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, pack_many, (void *)(i + 1)), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], &rc), 0);
		assert_null(rc);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_pack_roundtrip),
	        cmocka_unit_test(test_stored_as_is),
	        cmocka_unit_test(test_unpack_refuses),
	        cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
