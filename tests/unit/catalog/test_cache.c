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
#include <pthread.h>
#include <zstd.h>

#include "db/db_int.h"

#define TABLE_ID "0190a7e8-0000-7000-8000-000000000001"
#define OTHER_ID "0190a7e8-0000-7000-8000-000000000002"

/* The cache key of table wh.ns.name. */
static char *key_of(const char *name, size_t *len)
{
	static const char *const levels[1] = {"ns"};
	struct cat_ns ns = {.levels = levels, .n = 1};
	char *k = cat_table_key("wh", &ns, name, len);

	assert_non_null(k);
	return k;
}

static char *key(size_t *len)
{
	return key_of("t", len);
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

/* A version's coded answer (cat_table_bytes_coded): made once and kept
 * with the version while it is cached, the same bytes for every asker,
 * counted in the cache's bytes and given back with the version; made for
 * each asker when the version is not cached; never kept when it would not
 * be smaller. */
enum text { REPEATED, LETTERS, RANDOM };

static struct cat_shared *version_of(size_t meta_len, enum text kind)
{
	char *meta = malloc(meta_len + 1);
	struct cat_shared *sh;

	assert_non_null(meta);
	for (size_t i = 0; i < meta_len; i++)
		meta[i] = kind == RANDOM    ? (char)(rand() & 0xff)
		          : kind == LETTERS ? (char)('a' + rand() % 26)
		                            : "{\"snapshot-id\":1}"[i % 17];
	sh = cat_shared_new("file:///w/t/metadata/00001-x.metadata.json", meta, meta_len);
	free(meta);
	assert_non_null(sh);
	return sh;
}

/* Puts sh in c as the version of table `name` (its id: id); returns the
 * bytes c holds then. */
static size_t put_version(struct cat_cache *c, const char *name, const char *id,
                          struct cat_shared *sh)
{
	size_t len;
	char *k = key_of(name, &len);

	cat_cache_put(c, cat_cache_generation(c), k, len, id, sh, "file");
	free(k);
	return cat_cache_bytes(c, NULL);
}

static bool is_cached(struct cat_cache *c, const char *name)
{
	struct cat_shared *sh;
	char type[16];
	size_t len;
	char *k = key_of(name, &len);
	bool hit = cat_cache_get(c, k, len, &sh, type);

	if (hit)
		cat_table_bytes_release(sh);
	free(k);
	return hit;
}

static struct cat_table_bytes bytes_of(struct cat_shared *sh)
{
	return (struct cat_table_bytes){
	        .hold = sh, .answer = sh->answer, .answer_len = sh->answer_len};
}

static void test_coded_kept(void **state)
{
	struct cat_cache *c = cat_cache_new(1 << 20, true);
	struct cat_shared *sh = version_of(100000, REPEATED);
	struct cat_table_bytes t = bytes_of(sh);
	const char *p1, *p2;
	char *own = NULL;
	size_t n1, n2, base, coded;

	(void)state;
	base = put_version(c, "t", TABLE_ID, sh);
	assert_true(base > sh->answer_len);
	assert_int_not_equal(cat_table_bytes_coded_state(&t, FL_CODING_ZSTD), CAT_CODED_KEPT);
	assert_int_equal(cat_cache_coded(c, &t, FL_CODING_ZSTD, &p1, &n1, &own), 1);
	assert_int_equal(cat_table_bytes_coded_state(&t, FL_CODING_ZSTD), CAT_CODED_KEPT);
	assert_int_not_equal(cat_table_bytes_coded_state(&t, FL_CODING_GZIP), CAT_CODED_KEPT);
	assert_true(n1 > 0 && n1 < sh->answer_len / 20);
	assert_int_equal(ZSTD_getFrameContentSize(p1, n1), sh->answer_len);
	assert_int_equal(cat_cache_coded(c, &t, FL_CODING_ZSTD, &p2, &n2, &own), 1);
	assert_ptr_equal(p1, p2); /* kept, not made again */
	assert_int_equal(cat_cache_coded(c, &t, FL_CODING_GZIP, &p2, &n2, &own), 1);
	assert_ptr_not_equal(p1, p2);
	assert_int_equal(cat_cache_bytes(c, &coded), base + n1 + n2); /* in the budget */
	assert_int_equal(coded, n1 + n2);
	assert_int_equal(cat_cache_coded(c, &t, FL_CODING_IDENTITY, &p2, &n2, &own), 0);
	assert_null(own); /* nothing above was the caller's own */
	/* The version leaves the cache, its copies' charge with it; a response
	 * that holds the version still has them. */
	cat_cache_invalidate(c, TABLE_ID);
	assert_int_equal(cat_cache_bytes(c, &coded), 0);
	assert_int_equal(coded, 0);
	assert_int_equal(cat_table_bytes_coded_state(&t, FL_CODING_ZSTD), CAT_CODED_KEPT);
	assert_int_equal(ZSTD_getFrameContentSize(p1, n1), sh->answer_len);
	cat_table_bytes_release(sh);

	/* Incompressible (random bytes): not kept, the answer goes as it is. */
	sh = version_of(20000, RANDOM);
	t = bytes_of(sh);
	base = put_version(c, "t", TABLE_ID, sh);
	assert_int_equal(cat_cache_coded(c, &t, FL_CODING_GZIP, &p1, &n1, &own), 0);
	assert_int_equal(cat_table_bytes_coded_state(&t, FL_CODING_GZIP), CAT_CODED_NONE);
	assert_int_equal(cat_cache_bytes(c, &coded), base);
	assert_int_equal(coded, 0);
	assert_null(own);
	cat_table_bytes_release(sh);

	/* A version not in the cache (a load whose insert was refused): each
	 * asker gets a copy of its own, nothing is kept or counted. */
	sh = version_of(100000, REPEATED);
	t = bytes_of(sh);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(cat_cache_coded(c, &t, FL_CODING_ZSTD, &p1, &n1, &own), 1);
		assert_non_null(own);
		assert_ptr_equal(p1, own);
		assert_int_equal(ZSTD_getFrameContentSize(p1, n1), sh->answer_len);
		assert_int_equal(cat_table_bytes_coded_state(&t, FL_CODING_ZSTD), CAT_CODED_OPEN);
		free(own);
	}
	assert_int_equal(cat_cache_bytes(c, &coded), base);
	assert_int_equal(coded, 0);
	/* No cache at all (table-cache-bytes 0): the same. */
	assert_int_equal(cat_cache_coded(NULL, &t, FL_CODING_ZSTD, &p1, &n1, &own), 1);
	assert_non_null(own);
	free(own);
	assert_int_equal(cat_cache_bytes(NULL, &coded), 0);
	assert_int_equal(coded, 0);

	/* A kept copy outlives its cache (a response still being sent). */
	put_version(c, "t", TABLE_ID, sh);
	assert_int_equal(cat_cache_coded(c, &t, FL_CODING_GZIP, &p1, &n1, &own), 1);
	assert_null(own);
	cat_cache_stop(c);
	assert_int_equal(cat_table_bytes_coded_state(&t, FL_CODING_GZIP), CAT_CODED_KEPT);
	cat_table_bytes_release(sh);
}

/* A copy makes room like a version: CLOCK evicts a version nobody read
 * (the copy is kept within the budget), and a version evicted takes its
 * copy's bytes with it. */
static void test_coded_evicts(void **state)
{
	struct cat_cache *c = cat_cache_new(256 * 1024, true);
	struct cat_shared *a = version_of(100000, LETTERS), *b = version_of(100000, LETTERS),
	                  *b2 = version_of(100000, LETTERS);
	struct cat_table_bytes t = bytes_of(b);
	const char *p;
	char *own = NULL;
	size_t n, held, coded;

	(void)state;
	/* (b's stripe comes before a's in the CLOCK's round, so a broken spare
	 * would evict b here; the last case below does not depend on that.) */
	put_version(c, "a", TABLE_ID, a);
	held = put_version(c, "b", OTHER_ID, b);
	assert_true(held > 200000 && held <= 256 * 1024);
	assert_true(is_cached(c, "b")); /* read: CLOCK spares it */
	assert_int_equal(cat_cache_coded(c, &t, FL_CODING_GZIP, &p, &n, &own), 1);
	assert_null(own);
	assert_true(n > b->answer_len / 2 && n < b->answer_len); /* letters: ~60 % */
	assert_false(is_cached(c, "a"));
	assert_true(is_cached(c, "b"));
	held = cat_cache_bytes(c, &coded);
	assert_int_equal(coded, n);
	assert_true(held <= 256 * 1024 && held > b->answer_len + n);
	/* A new version that needs the room evicts b, copy and all. */
	put_version(c, "a", TABLE_ID, a);
	put_version(c, "b2", OTHER_ID, b2);
	assert_false(is_cached(c, "b"));
	assert_int_equal(cat_table_bytes_coded_state(&t, FL_CODING_GZIP), CAT_CODED_KEPT);
	held = cat_cache_bytes(c, &coded);
	assert_int_equal(coded, 0);
	assert_true(held <= 256 * 1024);
	cat_table_bytes_release(a);
	cat_table_bytes_release(b);
	cat_table_bytes_release(b2);
	cat_cache_stop(c);

	/* The copy's own version is never what is evicted for it: alone in a
	 * cache too small for both, it stays and the copy is the asker's. */
	c = cat_cache_new(150 * 1024, true);
	b = version_of(100000, LETTERS);
	t = bytes_of(b);
	held = put_version(c, "b", OTHER_ID, b);
	assert_int_equal(cat_cache_coded(c, &t, FL_CODING_GZIP, &p, &n, &own), 1);
	assert_non_null(own);
	free(own);
	assert_true(is_cached(c, "b"));
	assert_int_equal(cat_cache_bytes(c, &coded), held);
	assert_int_equal(coded, 0);
	/* A copy only worth keeping (gzip of a large answer): none is made for
	 * the asker, and the version goes as it is from then on. */
	assert_int_equal(cat_cache_coded(c, &t, FL_CODING_GZIP, &p, &n, NULL), 0);
	assert_int_equal(cat_table_bytes_coded_state(&t, FL_CODING_GZIP), CAT_CODED_NONE);
	assert_int_equal(cat_cache_coded(c, &t, FL_CODING_GZIP, &p, &n, NULL), 0);
	cat_table_bytes_release(b);
	/* ...while one that can be kept is kept as ever. */
	b = version_of(100000, REPEATED);
	t = bytes_of(b);
	put_version(c, "r", OTHER_ID, b);
	assert_int_equal(cat_cache_coded(c, &t, FL_CODING_ZSTD, &p, &n, NULL), 1);
	assert_int_equal(cat_table_bytes_coded_state(&t, FL_CODING_ZSTD), CAT_CODED_KEPT);
	cat_table_bytes_release(b);
	cat_cache_stop(c);
}

/* snapshots=refs (cat_table_bytes_refs): the form of a cached version is
 * made once, kept with it and counted in the cache's bytes (its coded
 * copies too), and leaves with it; an uncached version's is the caller's
 * own; a large one is not made where the thread may not wait. */
static void test_refs_form(void **state)
{
	static const char meta[] =
	        "{\"format-version\":2,\"properties\":{\"p\":\"%s\"},\"snapshots\":["
	        "{\"snapshot-id\":1},{\"snapshot-id\":2},{\"snapshot-id\":3}],"
	        "\"refs\":{\"main\":{\"snapshot-id\":3,\"type\":\"branch\"},"
	        "\"t\":{\"snapshot-id\":1,\"type\":\"tag\"}}}";
	static const char want[] =
	        "\"snapshots\":[{\"snapshot-id\":1},{\"snapshot-id\":3}],\"refs\"";
	struct cat_cache *c = cat_cache_new(1 << 20, true);
	struct cat_db db = {.cache = c};
	char pad[3001], text[4000], *own = NULL;
	struct cat_shared *sh;
	struct cat_table_bytes t, r1, r2;
	struct fl_err err = {0};
	const char *p1, *p2;
	size_t n1, n2, base, coded;

	(void)state;
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	snprintf(text, sizeof(text), meta, pad);
	sh = cat_shared_new("file:///w/t/metadata/00001-x.metadata.json", text, strlen(text));
	assert_non_null(sh);
	t = bytes_of(sh);
	t.metadata = sh->meta;
	t.metadata_len = sh->meta_len;

	/* Not cached: the caller's own form, with only the refs' snapshots. */
	assert_int_equal(cat_table_bytes_refs(&db, &t, &r1, &err), 0);
	assert_ptr_not_equal(r1.hold, sh);
	assert_null(r1.form);
	assert_non_null(memmem(r1.answer, r1.answer_len, want, strlen(want)));
	assert_int_equal(cat_cache_bytes(c, NULL), 0);
	cat_table_bytes_release(r1.hold);

	/* Cached: made once, kept, counted. */
	base = put_version(c, "t", TABLE_ID, sh);
	assert_int_equal(cat_table_bytes_refs(&db, &t, &r1, &err), 0);
	assert_ptr_equal(r1.hold, sh);
	assert_non_null(r1.form);
	assert_non_null(memmem(r1.metadata, r1.metadata_len, want, strlen(want)));
	assert_int_equal(cat_cache_bytes(c, NULL), base + r1.answer_len + strlen(sh->mloc));
	assert_int_equal(cat_table_bytes_refs(&db, &t, &r2, &err), 0);
	assert_ptr_equal(r2.form, r1.form);
	assert_ptr_equal(r2.answer, r1.answer);
	cat_table_bytes_release(r2.hold);
	/* Its coded copy is kept in the form's slots, charged to the version. */
	assert_int_equal(cat_cache_coded(c, &r1, FL_CODING_ZSTD, &p1, &n1, &own), 1);
	assert_null(own);
	assert_int_equal(ZSTD_getFrameContentSize(p1, n1), r1.answer_len);
	assert_int_equal(cat_table_bytes_coded_state(&r1, FL_CODING_ZSTD), CAT_CODED_KEPT);
	assert_int_not_equal(cat_table_bytes_coded_state(&t, FL_CODING_ZSTD), CAT_CODED_KEPT);
	assert_int_equal(cat_cache_coded(c, &r1, FL_CODING_ZSTD, &p2, &n2, &own), 1);
	assert_ptr_equal(p1, p2);
	assert_int_equal(cat_cache_bytes(c, &coded), base + r1.answer_len + strlen(sh->mloc) + n1);
	assert_int_equal(coded, n1);
	/* The version leaves, and all it kept with it. */
	cat_cache_invalidate(c, TABLE_ID);
	assert_int_equal(cat_cache_bytes(c, &coded), 0);
	assert_int_equal(coded, 0);
	assert_non_null(memmem(r1.answer, r1.answer_len, want, strlen(want)));
	cat_table_bytes_release(r1.hold);
	cat_table_bytes_release(sh);

	/* A large version's form is not made where the thread may not wait. */
	sh = version_of(200 * 1024, REPEATED);
	t = bytes_of(sh);
	t.metadata = sh->meta;
	t.metadata_len = sh->meta_len;
	fl_no_wait = true;
	assert_int_equal(cat_table_bytes_refs(&db, &t, &r1, &err), -1);
	fl_no_wait = false;
	assert_int_equal(err.kind, FL_ERR_WOULD_BLOCK);
	/* ...and a form of text that is not JSON is an error that says so. */
	assert_int_equal(cat_table_bytes_refs(&db, &t, &r1, &err), -1);
	assert_int_equal(err.kind, FL_ERR_INTERNAL);
	assert_non_null(strstr(err.msg, "not JSON"));
	cat_table_bytes_release(sh);
	cat_cache_stop(c);
}

struct refs_asker {
	pthread_t th;
	struct cat_db *db;
	struct cat_table_bytes *t, out;
	int rc;
};

static void *ask_refs(void *arg)
{
	struct refs_asker *a = arg;
	struct fl_err err = {0};

	a->rc = cat_table_bytes_refs(a->db, a->t, &a->out, &err);
	return NULL;
}

/* Many first askers of a cached version's form: one form is kept and
 * counted once; the others get it or one of their own, alike. */
static void test_refs_form_concurrent(void **state)
{
	struct cat_cache *c = cat_cache_new(64 << 20, true);
	struct cat_db db = {.cache = c};
	struct refs_asker a[8];
	char text[64 * 1024];
	size_t len = 0;

	(void)state;
	len += (size_t)snprintf(text, sizeof(text), "{\"snapshots\":[");
	for (int i = 1; i <= 1000; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s{\"snapshot-id\":%d}",
		                        i > 1 ? "," : "", i);
	len += (size_t)snprintf(text + len, sizeof(text) - len,
	                        "],\"refs\":{\"main\":{\"snapshot-id\":1000}}}");
	for (int round = 0; round < 20; round++) {
		struct cat_shared *sh = cat_shared_new("file:///w/t/m.json", text, len),
		                  *kept = NULL;
		struct cat_table_bytes t;
		size_t base;

		assert_non_null(sh);
		t = bytes_of(sh);
		base = put_version(c, "t", TABLE_ID, sh);
		for (int i = 0; i < 8; i++) {
			a[i] = (struct refs_asker){.db = &db, .t = &t};
			assert_int_equal(pthread_create(&a[i].th, NULL, ask_refs, &a[i]), 0);
		}
		for (int i = 0; i < 8; i++)
			pthread_join(a[i].th, NULL);
		for (int i = 0; i < 8; i++) {
			assert_int_equal(a[i].rc, 0);
			assert_int_equal(a[i].out.metadata_len,
			                 strlen("{\"snapshots\":[{\"snapshot-id\":1000}],"
			                        "\"refs\":{\"main\":{\"snapshot-id\":1000}}}"));
			if (a[i].out.form != NULL) {
				assert_true(kept == NULL || kept == a[i].out.form);
				kept = a[i].out.form;
			}
		}
		assert_non_null(kept); /* the first asker's, kept */
		assert_int_equal(cat_cache_bytes(c, NULL),
		                 base + kept->answer_len + strlen(sh->mloc));
		for (int i = 0; i < 8; i++)
			cat_table_bytes_release(a[i].out.hold);
		cat_cache_invalidate(c, TABLE_ID);
		assert_int_equal(cat_cache_bytes(c, NULL), 0);
		cat_table_bytes_release(sh);
	}
	cat_cache_stop(c);
}

struct churn {
	struct cat_cache *c;
	struct cat_db *db;
	struct cat_shared *_Atomic cur; /* the version being asked for */
	atomic_bool stop;
	atomic_long kept;
};

static void *churn_ask(void *arg)
{
	struct churn *ch = arg;
	struct fl_err err = {0};

	while (!atomic_load(&ch->stop)) {
		struct cat_shared *sh = NULL;
		struct cat_table_bytes t, r;
		const char *p;
		char *own = NULL;
		size_t n;
		size_t len;
		char type[16], *k = key(&len);

		if (!cat_cache_get(ch->c, k, len, &sh, type)) {
			free(k);
			continue;
		}
		free(k);
		t = bytes_of(sh);
		if (cat_cache_coded(ch->c, &t, FL_CODING_ZSTD, &p, &n, &own) == 1 && own == NULL)
			atomic_fetch_add(&ch->kept, 1);
		free(own);
		if (cat_table_bytes_refs(ch->db, &t, &r, &err) == 0) {
			own = NULL;
			if (cat_cache_coded(ch->c, &r, FL_CODING_GZIP, &p, &n, &own) < 0)
				abort();
			free(own);
			cat_table_bytes_release(r.hold);
		}
		cat_table_bytes_release(sh);
	}
	return NULL;
}

/* Copies and forms made while their versions are invalidated, put again
 * and evicted: every charge is given back exactly once, so the cache's
 * bytes and coded bytes are 0 once it is empty (run under ASan and TSan
 * by the sanitizer passes). */
static void test_charge_churn(void **state)
{
	struct churn ch = {.c = cat_cache_new(400 * 1024, true)};
	struct cat_db db = {.cache = ch.c};
	pthread_t th[4];
	char text[40 * 1024];
	size_t len = 0, coded;

	(void)state;
	ch.db = &db;
	len += (size_t)snprintf(text, sizeof(text), "{\"snapshots\":[");
	for (int i = 1; i <= 1000; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
		                        "%s{\"snapshot-id\":%d,\"x\":\"%d\"}", i > 1 ? "," : "", i,
		                        i % 7);
	len += (size_t)snprintf(text + len, sizeof(text) - len,
	                        "],\"refs\":{\"main\":{\"snapshot-id\":1000}}}");
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, churn_ask, &ch), 0);
	for (int round = 0; round < 300; round++) {
		struct cat_shared *sh = cat_shared_new("file:///w/t/m.json", text, len);

		assert_non_null(sh);
		put_version(ch.c, "t", TABLE_ID, sh);
		/* other tables that evict it now and then */
		if (round % 3 == 0) {
			struct cat_shared *o = version_of(120000, LETTERS);
			char name[16];

			snprintf(name, sizeof(name), "o%d", round % 4);
			put_version(ch.c, name, OTHER_ID, o);
			cat_table_bytes_release(o);
		}
		if (round % 2 == 0)
			cat_cache_invalidate(ch.c, TABLE_ID);
		cat_table_bytes_release(sh);
		assert_true(cat_cache_bytes(ch.c, NULL) <= 400 * 1024);
	}
	atomic_store(&ch.stop, true);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_true(atomic_load(&ch.kept) > 0); /* copies were kept along the way */
	cat_cache_invalidate(ch.c, "*");
	assert_int_equal(cat_cache_bytes(ch.c, &coded), 0);
	assert_int_equal(coded, 0);
	cat_cache_stop(ch.c);
}

struct asker {
	pthread_t th;
	struct cat_cache *c;
	struct cat_table_bytes *t;
	int rc;
	const char *p;
	size_t n;
};

static void *ask(void *arg)
{
	struct asker *a = arg;
	char *own = NULL;

	a->rc = cat_cache_coded(a->c, a->t, FL_CODING_ZSTD, &a->p, &a->n, &own);
	if (own != NULL) /* cached, within the budget: never the asker's own */
		a->rc = 99;
	return NULL;
}

/* Many first askers at once: one makes the copy, the others get it or
 * are told to send the answer as it is (never a second copy). */
static void test_coded_concurrent(void **state)
{
	struct cat_cache *c = cat_cache_new(64 << 20, true);
	struct asker a[8];

	(void)state;
	for (int round = 0; round < 20; round++) {
		struct cat_shared *sh = version_of(300000, REPEATED);
		struct cat_table_bytes t = bytes_of(sh);
		const char *kept = NULL;
		size_t coded;

		put_version(c, "t", TABLE_ID, sh);
		for (int i = 0; i < 8; i++) {
			a[i] = (struct asker){.c = c, .t = &t};
			assert_int_equal(pthread_create(&a[i].th, NULL, ask, &a[i]), 0);
		}
		for (int i = 0; i < 8; i++)
			pthread_join(a[i].th, NULL);
		for (int i = 0; i < 8; i++) {
			assert_true(a[i].rc == 0 || a[i].rc == 1);
			if (a[i].rc == 1) {
				assert_true(kept == NULL || kept == a[i].p);
				kept = a[i].p;
			}
		}
		assert_non_null(kept); /* the maker got it */
		for (int i = 0; i < 8; i++) /* one copy, counted once */
			if (a[i].rc == 1) {
				(void)cat_cache_bytes(c, &coded);
				assert_int_equal(coded, a[i].n);
			}
		cat_cache_invalidate(c, TABLE_ID);
		assert_int_equal(cat_cache_bytes(c, &coded), 0);
		assert_int_equal(coded, 0);
		cat_table_bytes_release(sh);
	}
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
	        cmocka_unit_test(test_coded_kept),
	        cmocka_unit_test(test_coded_evicts),
	        cmocka_unit_test(test_refs_form),
	        cmocka_unit_test(test_refs_form_concurrent),
	        cmocka_unit_test(test_charge_churn),
	        cmocka_unit_test(test_coded_concurrent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
