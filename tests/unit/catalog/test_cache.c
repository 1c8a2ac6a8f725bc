/* Unit tests of catalog/db/cache.c: the loadTable cache's rules for the
 * version a commit of this process puts there (cat_cache_committed), on a
 * cache without its listener.  The version is served by the next load; an
 * invalidation of the table after the generation noted before its COMMIT
 * (another replica's commit, applied from its notification) refuses it;
 * a reader that read the table before the commit cannot put back what it
 * read; other tables' invalidations do not matter unless too many to tell. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "db/db_int.h"

#define TABLE_ID "0190a7e8-0000-7000-8000-000000000001"
#define OTHER_ID "0190a7e8-0000-7000-8000-000000000002"

static char *key(size_t *len)
{
	static const char *const levels[1] = {"ns"};
	struct cat_ns ns = {.levels = levels, .n = 1};

	return cat_table_key("wh", &ns, "t", len);
}

/* Version v of the table, as a commit of this process wrote it. */
static struct cat_fresh *fresh(int v, unsigned long generation)
{
	struct cat_fresh *f = calloc(1, sizeof(*f));
	char loc[64], meta[64];

	assert_non_null(f);
	snprintf(loc, sizeof(loc), "file:///w/t/metadata/%05d-x.metadata.json", v);
	snprintf(meta, sizeof(meta), "{\"v\":%d}", v);
	snprintf(f->table_id, sizeof(f->table_id), "%s", TABLE_ID);
	snprintf(f->storage_type, sizeof(f->storage_type), "file");
	f->key = key(&f->key_len);
	f->sh = cat_shared_new(loc, meta, strlen(meta));
	f->generation = generation;
	assert_non_null(f->key);
	assert_non_null(f->sh);
	return f;
}

/* What a load finds: the version cached, or -1 on a miss. */
static int cached(struct cat_cache *c)
{
	struct cat_shared *sh;
	char type[16];
	size_t len;
	char *k = key(&len);
	int v = -1;

	if (cat_cache_get(c, k, len, &sh, type)) {
		assert_int_equal(sscanf(sh->meta, "{\"v\":%d}", &v), 1);
		assert_string_equal(type, "file");
		cat_table_bytes_release(sh);
	}
	free(k);
	return v;
}

/* A reader's insert of version v, read after noting generation. */
static void reader_put(struct cat_cache *c, int v, unsigned long generation)
{
	struct cat_fresh *f = fresh(v, generation);

	cat_cache_put(c, generation, f->key, f->key_len, TABLE_ID, f->sh, "file");
	cat_fresh_free(f);
}

static void committed(struct cat_cache *c, int v, unsigned long generation)
{
	struct cat_fresh *f = fresh(v, generation);

	cat_cache_committed(c, f);
	cat_fresh_free(f);
}

static void test_served_and_replaces(void **state)
{
	struct cat_cache *c = cat_cache_new(1 << 20, true);

	(void)state;
	reader_put(c, 1, cat_cache_generation(c));
	assert_int_equal(cached(c), 1);
	committed(c, 2, cat_cache_generation(c));
	assert_int_equal(cached(c), 2);
	cat_cache_stop(c);
}

static void test_refused_after_foreign_invalidation(void **state)
{
	struct cat_cache *c = cat_cache_new(1 << 20, true);
	unsigned long g;

	(void)state;
	reader_put(c, 1, cat_cache_generation(c));
	g = cat_cache_generation(c); /* before this process's COMMIT */
	/* Another replica committed version 3 after it; its notification was
	 * applied before this process inserted version 2. */
	cat_cache_invalidate(c, TABLE_ID);
	committed(c, 2, g);
	assert_int_equal(cached(c), -1);
	cat_cache_stop(c);
}

static void test_reader_before_commit_refused(void **state)
{
	struct cat_cache *c = cat_cache_new(1 << 20, true);
	unsigned long reader = cat_cache_generation(c);

	(void)state;
	committed(c, 2, cat_cache_generation(c));
	/* A load that read version 1 before the commit inserts after it. */
	reader_put(c, 1, reader);
	assert_int_equal(cached(c), 2);
	cat_cache_stop(c);
}

static void test_other_tables(void **state)
{
	struct cat_cache *c = cat_cache_new(1 << 20, true);
	unsigned long g = cat_cache_generation(c);

	(void)state;
	cat_cache_invalidate(c, OTHER_ID);
	committed(c, 2, g);
	assert_int_equal(cached(c), 2);
	/* More invalidations than the ring remembers: the insert cannot tell
	 * whether one was of this table, so it is refused, and the version
	 * held before is dropped all the same. */
	g = cat_cache_generation(c);
	for (int i = 0; i < 1000; i++)
		cat_cache_invalidate(c, OTHER_ID);
	committed(c, 3, g);
	assert_int_equal(cached(c), -1);
	cat_cache_stop(c);
}

static void test_not_live(void **state)
{
	struct cat_cache *c = cat_cache_new(1 << 20, false);

	(void)state;
	committed(c, 2, cat_cache_generation(c));
	assert_int_equal(cached(c), -1);
	cat_cache_stop(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_served_and_replaces),
	        cmocka_unit_test(test_refused_after_foreign_invalidation),
	        cmocka_unit_test(test_reader_before_commit_refused),
	        cmocka_unit_test(test_other_tables),
	        cmocka_unit_test(test_not_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
