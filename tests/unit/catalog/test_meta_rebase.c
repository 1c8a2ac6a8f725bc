/* test_meta_rebase.c - a commit's built metadata may be the base of the next
 * commit (commit.c keeps it in the base cache, basecache.c) in place of the
 * parse of its text, which is what a commit that fetches the row uses.  The
 * two must be interchangeable: over a randomized sequence of updates, the
 * chain that builds on built documents and the chain that builds on parsed
 * text emit byte-identical metadata at every step, and each built document
 * equals the parse of its own text. */
#include "meta_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* A small deterministic generator (xorshift), so a failure repeats. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One random change of base, whose current snapshot is *cur, with *seq
 * its last sequence number (both updated), as a JSON array text. */
static char *random_updates(const json_t *base, uint64_t *s, int64_t *cur, int64_t *seq, int step)
{
	char *out = malloc(2048), parent[48] = "", rows[80] = "";
	const json_t *next_row = json_object_get(base, "next-row-id");
	int64_t id = 1000 + step;

	assert_non_null(out);
	/* Now and then the oldest snapshot expires (not the current one). */
	const json_t *snaps = json_object_get(base, "snapshots");
	json_int_t oldest =
	        json_integer_value(json_object_get(json_array_get(snaps, 0), "snapshot-id"));

	if (json_array_size(snaps) > 3 && oldest != *cur && rnd(s) % 6 == 0) {
		snprintf(out, 2048, "[{'action':'remove-snapshots','snapshot-ids':[%lld]}]",
		         (long long)oldest);
		return out;
	}
	switch (rnd(s) % 5) {
	case 0:
	case 1: /* an append, as most commits are */
		if (*cur)
			snprintf(parent, sizeof(parent), "'parent-snapshot-id':%lld,",
			         (long long)*cur);
		if (next_row != NULL) /* v3 row lineage */
			snprintf(rows, sizeof(rows), "'first-row-id':%lld,'added-rows':%llu,",
			         (long long)json_integer_value(next_row),
			         (unsigned long long)(1 + rnd(s) % 50));
		snprintf(out, 2048,
		         "[{'action':'add-snapshot','snapshot':{'snapshot-id':%lld,%s%s"
		         "'sequence-number':%lld,'timestamp-ms':%lld,'manifest-list':"
		         "'s3://bucket/wh/ns/t/metadata/snap-%lld.avro','summary':{'operation':"
		         "'append','added-records':'%llu','total-records':'%llu'},'schema-id':0}},"
		         "{'action':'set-snapshot-ref','ref-name':'main','type':'branch',"
		         "'snapshot-id':%lld}]",
		         (long long)id, parent, rows, (long long)(*seq + 1),
		         (long long)(TM_NOW + step), (long long)id,
		         (unsigned long long)(rnd(s) % 1000), (unsigned long long)(rnd(s) % 100000),
		         (long long)id);
		*cur = id;
		(*seq)++;
		break;
	case 2: /* properties, some of which look like numbers */
		snprintf(out, 2048,
		         "[{'action':'set-properties','updates':{'k%llu':'%llu','f':'1.50',"
		         "'write.metadata.previous-versions-max':'%llu'}}]",
		         (unsigned long long)(rnd(s) % 7), (unsigned long long)rnd(s),
		         (unsigned long long)(1 + rnd(s) % 4));
		break;
	case 3:
		snprintf(out, 2048, "[{'action':'remove-properties','removals':['k%llu']}]",
		         (unsigned long long)(rnd(s) % 7));
		break;
	default: /* a tag on the current snapshot, or a property when there is none */
		if (*cur)
			snprintf(out, 2048,
			         "[{'action':'set-snapshot-ref','ref-name':'tag%d','type':'tag',"
			         "'snapshot-id':%lld,'max-ref-age-ms':%llu}]",
			         step % 3, (long long)*cur, (unsigned long long)(rnd(s) % 99999));
		else
			snprintf(out, 2048, "[{'action':'set-properties','updates':{'g':'%d'}}]",
			         step);
		break;
	}
	return out;
}

static json_t *apply(const json_t *base, const char *loc, const char *updates, int64_t now)
{
	struct fl_err err = {0};
	json_t *u = tm_json(updates), *out = NULL;
	bool changed = false;

	if (cat_meta_apply(base, loc, u, now, 1000, &out, &changed, &err) != 0)
		fail_msg("apply failed: %s (%s)", err.msg, updates);
	json_decref(u);
	return out;
}

/* The dump of each new version that copies from the memo of the last one
 * (commit.c: the snapshots a version shares with its base) writes the
 * bytes fl_json_dump writes, over appends, expiries and the rest. */
static void test_memo_dumps_equal_plain_dumps(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 8; seed++) {
		uint64_t s = seed * 0xD1B54A32D192ED03ULL;
		int64_t cur = 0, seq = 0;
		json_t *doc = tm_table(seed % 2 ? 2 : 3);
		struct fl_json_memo *memo = NULL;
		size_t copied = 0;

		for (int step = 0; step < 80; step++) {
			char loc[96], *ups = random_updates(doc, &s, &cur, &seq, step);
			struct fl_json_memo *next = NULL;
			json_t *nd;
			char *plain, *fast;
			size_t n;

			snprintf(loc, sizeof(loc),
			         "s3://bucket/wh/ns/t/metadata/%05d-x.metadata.json", step);
			nd = apply(doc, loc, ups, TM_NOW + 1000 + step);
			plain = fl_json_dump(nd, NULL);
			fast = fl_json_dump_memo(nd, cat_meta_shared_arrays, memo, &next, &n);
			assert_non_null(plain);
			assert_non_null(fast);
			assert_non_null(next);
			if (strcmp(plain, fast) != 0 || n != strlen(plain))
				fail_msg("seed %llu step %d: the memo's dump differs after %s",
				         (unsigned long long)seed, step, ups);
			assert_string_equal(fl_json_memo_text(next, NULL), plain);
			if (memo != NULL)
				copied += json_array_size(json_object_get(nd, "snapshots")) > 0;
			fl_json_memo_unref(memo);
			memo = next;
			/* The base is released: the memo keeps its snapshots alive. */
			json_decref(doc);
			doc = nd;
			free(plain);
			free(fast);
			free(ups);
		}
		assert_true(copied > 0);
		/* A memo that shares nothing with the document (a deep copy's
		 * elements are new objects) changes nothing either. */
		json_t *copy = json_deep_copy(doc);
		char *plain = fl_json_dump(copy, NULL),
		     *fast = fl_json_dump_memo(copy, cat_meta_shared_arrays, memo, NULL, NULL);

		assert_non_null(fast);
		assert_string_equal(fast, plain);
		free(plain);
		free(fast);
		json_decref(copy);
		fl_json_memo_unref(memo);
		json_decref(doc);
	}
}

static void test_built_and_parsed_bases_emit_the_same_bytes(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 8; seed++) {
		uint64_t s = seed * 0x9E3779B97F4A7C15ULL;
		int64_t cur = 0, seq = 0;
		json_t *built = tm_table(seed % 2 ? 2 : 3), *parsed = json_deep_copy(built);

		for (int step = 0; step < 60; step++) {
			char loc[96], *ups = random_updates(built, &s, &cur, &seq, step);
			char *tb, *tp;
			json_t *nb, *np, *reparsed;

			snprintf(loc, sizeof(loc),
			         "s3://bucket/wh/ns/t/metadata/%05d-x.metadata.json", step);
			nb = apply(built, loc, ups, TM_NOW + 1000 + step);
			np = apply(parsed, loc, ups, TM_NOW + 1000 + step);
			tb = fl_json_dump(nb, NULL);
			tp = fl_json_dump(np, NULL);
			assert_non_null(tb);
			assert_non_null(tp);
			if (strcmp(tb, tp) != 0)
				fail_msg("seed %llu step %d: the texts differ after %s",
				         (unsigned long long)seed, step, ups);
			reparsed = json_loads(tb, 0, NULL);
			assert_non_null(reparsed);
			assert_true(json_equal(nb, reparsed));
			/* The next step builds on the built document in one chain and
			 * on the parsed text in the other. */
			json_decref(built);
			json_decref(parsed);
			json_decref(np);
			built = nb;
			parsed = reparsed;
			free(tb);
			free(tp);
			free(ups);
		}
		assert_int_equal(json_array_size(json_object_get(built, "snapshots")) > 0, 1);
		json_decref(built);
		json_decref(parsed);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_built_and_parsed_bases_emit_the_same_bytes),
	        cmocka_unit_test(test_memo_dumps_equal_plain_dumps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
