/* Unit tests of catalog/db/basecache.c: the parsed metadata an optimistic
 * commit reuses.  An entry answers only for its own key; a newer location
 * replaces it; the least recently used entry goes first when the slots or
 * the text budget run out; oversized documents are not kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "db/db_int.h"

static char *key_of(int i, size_t *len)
{
	static const char *const levels[1] = {"ns"};
	struct cat_ns ns = {.levels = levels, .n = 1};
	char name[16];

	snprintf(name, sizeof(name), "t%d", i);
	return cat_table_key("wh", &ns, name, len);
}

/* Puts table i at location "loc<i>" with text and a small document. */
static void put(struct cat_base_cache *c, int i, const char *text)
{
	size_t len;
	char *key = key_of(i, &len), loc[16];
	json_t *doc = json_pack("{s:i}", "t", i);

	snprintf(loc, sizeof(loc), "loc%d", i);
	cat_base_put(c, key, len, "id", 1, loc, text, doc, NULL);
	json_decref(doc);
	free(key);
}

/* Whether table i is held; its location and document are checked. */
static bool held(struct cat_base_cache *c, int i)
{
	size_t len;
	char *key = key_of(i, &len), *loc = NULL, *text = NULL, want[16];
	json_t *doc = NULL;
	bool hit = cat_base_get(c, key, len, &loc, &text, &doc, NULL);

	if (hit) {
		snprintf(want, sizeof(want), "loc%d", i);
		assert_string_equal(loc, want);
		assert_int_equal(json_integer_value(json_object_get(doc, "t")), i);
	}
	free(key);
	free(loc);
	free(text);
	json_decref(doc);
	return hit;
}

static void test_get_answers_its_key_only(void **state)
{
	struct cat_base_cache *c = cat_base_cache_new();
	size_t len;
	char *key = key_of(1, &len), *loc = NULL, *text = NULL;
	json_t *doc = NULL, *mine = json_pack("{s:s}", "a", "b");

	(void)state;
	assert_false(held(c, 1));
	cat_base_put(c, key, len, "id", 1, "file:///m/00001-x.metadata.json", "{\"a\":\"b\"}", mine,
	             NULL);
	assert_true(cat_base_get(c, key, len, &loc, &text, &doc, NULL));
	assert_string_equal(loc, "file:///m/00001-x.metadata.json");
	assert_string_equal(text, "{\"a\":\"b\"}");
	assert_ptr_equal(doc, mine); /* shared, not copied */
	assert_false(held(c, 2));
	/* A newer version of the same table replaces the entry; an older one,
	 * read before that version was committed, does not. */
	cat_base_put(c, key, len, "id", 2, "file:///m/00002-y.metadata.json", "{}", mine, NULL);
	cat_base_put(c, key, len, "id", 1, "file:///m/00001-x.metadata.json", "{\"a\":\"b\"}", mine,
	             NULL);
	free(loc);
	free(text);
	json_decref(doc);
	assert_true(cat_base_get(c, key, len, &loc, &text, &doc, NULL));
	assert_string_equal(loc, "file:///m/00002-y.metadata.json");
	assert_string_equal(text, "{}");
	free(loc);
	free(text);
	json_decref(doc);
	/* Another table of that name (dropped and created again) starts over. */
	cat_base_put(c, key, len, "id2", 0, "file:///n/00000-z.metadata.json", "[]", mine, NULL);
	assert_true(cat_base_get(c, key, len, &loc, &text, &doc, NULL));
	assert_string_equal(loc, "file:///n/00000-z.metadata.json");
	free(loc);
	free(text);
	json_decref(doc);
	/* Without text only the location and the document are given. */
	loc = NULL;
	doc = NULL;
	assert_true(cat_base_get(c, key, len, &loc, NULL, &doc, NULL));
	assert_string_equal(loc, "file:///n/00000-z.metadata.json");
	assert_ptr_equal(doc, mine);
	free(loc);
	json_decref(doc);
	json_decref(mine);
	free(key);
	cat_base_cache_free(c);
	assert_false(cat_base_get(NULL, "k", 1, &loc, &text, &doc, NULL));
}

static void test_least_recently_used_goes_first(void **state)
{
	struct cat_base_cache *c = cat_base_cache_new();

	(void)state;
	for (int i = 0; i < 16; i++)
		put(c, i, "{}");
	assert_true(held(c, 0)); /* now table 1 is the least recently used */
	put(c, 16, "{}");
	assert_false(held(c, 1));
	for (int i = 0; i <= 16; i++)
		if (i != 1)
			assert_true(held(c, i));
	cat_base_cache_free(c);
}

static void test_text_budget(void **state)
{
	struct cat_base_cache *c = cat_base_cache_new();
	size_t big = (size_t)4 << 20;
	char *text = malloc(big + 2);

	(void)state;
	memset(text, 'x', big + 1);
	text[big + 1] = '\0';
	put(c, 0, text); /* over 4 MiB: not kept */
	assert_false(held(c, 0));
	text[big] = '\0';
	for (int i = 1; i <= 4; i++)
		put(c, i, text); /* 16 MiB: the whole budget */
	for (int i = 1; i <= 4; i++)
		assert_true(held(c, i));
	put(c, 5, "{}"); /* evicts table 1, the least recently used */
	assert_false(held(c, 1));
	for (int i = 2; i <= 5; i++)
		assert_true(held(c, i));
	put(c, 2, "{}"); /* a smaller version frees room: nothing else goes */
	put(c, 6, "{}");
	for (int i = 2; i <= 6; i++)
		assert_true(held(c, i));
	free(text);
	cat_base_cache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_get_answers_its_key_only),
	        cmocka_unit_test(test_least_recently_used_goes_first),
	        cmocka_unit_test(test_text_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
