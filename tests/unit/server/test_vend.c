/* test_vend.c - the vended-credential cache: an entry serves until 80% of
 * its lifetime has passed, the cache never holds more than its capacity
 * (least recently used goes first), and concurrent use is safe. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vend.h"

static struct st_sts_creds creds(const char *ak, int64_t expires)
{
	struct st_sts_creds c;

	memset(&c, 0, sizeof(c));
	snprintf(c.access_key_id, sizeof(c.access_key_id), "%s", ak);
	c.expires_at_ms = expires;
	return c;
}

static void test_lifetime(void **state)
{
	struct srv_vend *v = srv_vend_new(4);
	struct st_sts_creds c = creds("AK1", 1000 + 900000), out;

	(void)state;
	assert_non_null(v);
	assert_false(srv_vend_cached(v, "wh\ns3://b/t\nread-write", 1000, &out));
	srv_vend_remember(v, "wh\ns3://b/t\nread-write", &c, 1000);
	assert_true(srv_vend_cached(v, "wh\ns3://b/t\nread-write", 1000, &out));
	assert_string_equal(out.access_key_id, "AK1");
	/* 80% of 900 s is 720 s. */
	assert_true(srv_vend_cached(v, "wh\ns3://b/t\nread-write", 1000 + 719999, &out));
	assert_false(srv_vend_cached(v, "wh\ns3://b/t\nread", 1000, &out));
	assert_false(srv_vend_cached(v, "wh\ns3://b/t\nread-write", 1000 + 720000, &out));
	/* The stale entry is gone, not just hidden. */
	assert_false(srv_vend_cached(v, "wh\ns3://b/t\nread-write", 1000, &out));
	srv_vend_free(v);
}

static void test_bounded_lru(void **state)
{
	struct srv_vend *v = srv_vend_new(2);
	struct st_sts_creds a = creds("A", 1000000), b = creds("B", 1000000),
	                    c = creds("C", 1000000), out;

	(void)state;
	srv_vend_remember(v, "a", &a, 10);
	srv_vend_remember(v, "b", &b, 20);
	assert_true(srv_vend_cached(v, "a", 30, &out)); /* a is now the most recent */
	srv_vend_remember(v, "c", &c, 40); /* evicts b */
	assert_true(srv_vend_cached(v, "a", 50, &out));
	assert_string_equal(out.access_key_id, "A");
	assert_true(srv_vend_cached(v, "c", 50, &out));
	assert_false(srv_vend_cached(v, "b", 50, &out));
	/* Replacing a key keeps one entry for it. */
	c = creds("C2", 1000000);
	srv_vend_remember(v, "c", &c, 60);
	assert_true(srv_vend_cached(v, "c", 70, &out));
	assert_string_equal(out.access_key_id, "C2");
	assert_true(srv_vend_cached(v, "a", 70, &out));
	srv_vend_free(v);
}

static void *hammer(void *arg)
{
	struct srv_vend *v = arg;
	char key[32];
	struct st_sts_creds out;

	for (int i = 0; i < 20000; i++) {
		struct st_sts_creds c = creds("K", 1000000);

		snprintf(key, sizeof(key), "k%d", i % 37);
		if (!srv_vend_cached(v, key, 100, &out))
			srv_vend_remember(v, key, &c, 100);
		else if (strcmp(out.access_key_id, "K") != 0)
			return (void *)1;
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct srv_vend *v = srv_vend_new(16);
	pthread_t t[4];
	void *rc;

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, v), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], &rc), 0);
		assert_null(rc);
	}
	srv_vend_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_lifetime),
	        cmocka_unit_test(test_bounded_lru),
	        cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
