/* cache.c - the loadTable cache, kept coherent with LISTEN/NOTIFY.
 *
 * Every change to a table or view row (commit, replace, drop, rename,
 * register) is followed, right after its COMMIT and before its client is
 * answered, by NOTIFY floe_table with the row's id (tx.c: not inside the
 * change's own transaction, where PostgreSQL would serialize every
 * notifying COMMIT of the cluster through its WAL flush).  A listener
 * thread on its own connection drops the entries of that row.  The
 * notification is sent in the same request as the change, behind its
 * COMMIT (or behind an optimistic pointer move that committed by itself,
 * after a sync: cat_row_move_if_notify), so PostgreSQL runs it even when
 * the process is gone by then.  Only when that one did not go is it a
 * request of its own, and a process that dies between the two has
 * answered nobody: the others drop everything when it starts again
 * (cat_db_notify_all).
 *
 * Coherence rules:
 *   - the cache serves only while the listener is connected; after a lost
 *     listener connection it is flushed and bypassed until LISTEN is back;
 *   - a reader notes the invalidation counter before its database read and
 *     inserts what it read only if no invalidation of that table (or of
 *     everything) happened meanwhile, so a stale read can never overwrite a
 *     newer invalidation;
 *   - a commit through this process invalidates its tables synchronously
 *     after COMMIT, so a client reads its own writes on the replica it wrote
 *     to; other replicas see the change when the notification arrives
 *     (milliseconds);
 *   - a single-table commit through this process then puts the version it
 *     wrote in place (cat_cache_committed), so that the loads it causes are
 *     hits: its own invalidation is recorded like any other, and the insert
 *     overlooks that one only, so it is refused after any other
 *     invalidation of the table since a generation noted before the
 *     COMMIT was sent (a later commit elsewhere, whose notification came
 *     first), and purged by one that comes after it;
 *   - the listener ignores the notifications this process sent itself
 *     (their backend is one of its pooled connections, cat_db_own_backend):
 *     each has its match in this process's own invalidation of the table
 *     (made before the commit's client is answered), and applying it again
 *     would only drop the version put there.
 *
 * Layout: STRIPES independent chained hash tables, each under its own
 * rwlock (hits take it shared), chosen by the hash of the key.  The budget
 * is in bytes (table-cache-bytes); an insert that would exceed it evicts
 * with CLOCK (a reference bit set on every hit), in its own stripe first,
 * then in the others.  What a version keeps beside its answer (coded
 * copies, cat_cache_coded; its refs-only form, cat_table_bytes_refs)
 * counts against the same budget while it is cached (cat_shared.charge,
 * .charge_forms), makes room the same way, and is given back when its
 * entry goes, so what nobody reads is reclaimed with its version.
 *
 * Per-table invalidation without a global stop: every invalidation is
 * numbered (seq) and recorded in a ring of the last RING table-id hashes.
 * A reader's insert is refused when, since the number it noted, the ring
 * holds its table id or a flush, or more than RING invalidations happened.
 * Proof sketch: an insert checks the ring and inserts under its stripe's
 * write lock; an invalidation records itself in the ring first and then
 * purges the stripes under their write locks.  If the record came before
 * the check the insert is refused; if after, the purge runs after the
 * insert released the stripe and removes it.  Which stripes can hold a
 * table is remembered in id_mask (a bit per stripe, set before the ring
 * check), so an invalidation visits only those. */
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "libcrypto.h"
#include "clock.h"
#include "db_int.h"

#define STRIPES 64
#define RING 256
#define ID_MASKS 4096
/* The largest entry is a 32nd of the budget (8 MiB of the default 256 MiB),
 * at least 512 KiB: a hot table's metadata grows ~0.5 MB per 1,000
 * snapshots and is the one most worth keeping, while no single table can
 * take a large share of the budget. */
#define MIN_ENTRY_LIMIT (512 * 1024)
/* In cat_shared.charge and .charge_forms: the version is in an entry, which
 * is charged for what it keeps (the rest of the word: those bytes). */
#define CHARGED ((size_t)1 << (sizeof(size_t) * 8 - 1))

struct entry {
	struct entry *next;
	uint64_t hash, id_hash;
	char *key;
	size_t key_len;
	char table_id[40];
	struct cat_shared *sh;
	char storage_type[16];
	size_t bytes;
	atomic_bool ref; /* CLOCK: used since the hand last passed */
};

struct stripe {
	pthread_rwlock_t lock;
	struct entry **buckets;
	size_t nbuckets, count;
	size_t hand; /* CLOCK hand: a bucket index */
} __attribute__((aligned(64)));

struct cat_cache {
	struct stripe stripes[STRIPES];
	size_t max_bytes;
	size_t max_entry; /* the largest entry admitted (MIN_ENTRY_LIMIT) */
	atomic_size_t bytes;
	atomic_size_t entries;
	atomic_ulong hits, misses, evictions;
	atomic_ulong notifications; /* NOTIFY floe_table applied, counted after the purge */
	atomic_uint victim; /* next stripe asked to make room for another's insert */
	pthread_mutex_t ring_mu;
	atomic_ulong seq; /* number of the last invalidation */
	struct {
		uint64_t id_hash;
		bool all;
	} ring[RING];
	atomic_uint_least64_t id_mask[ID_MASKS]; /* stripes that may hold a table */
	atomic_ulong access_generation; /* bumped by NOTIFY floe_auth and reconnects */
	atomic_bool live; /* the listener is connected */
	atomic_bool stop;
	pthread_t thread;
	bool started;
	char *conninfo;
	struct cat_db *db;
	atomic_size_t coded_bytes; /* of bytes: what the versions' coded copies hold */
};

static uint64_t fnv(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
	return h ^ (h >> 29);
}

static struct stripe *stripe_of(struct cat_cache *c, uint64_t hash)
{
	return &c->stripes[hash % STRIPES];
}

/* What a LoadTableResult puts around the metadata when the table's config
 * is empty (cat_table_bytes.answer). */
static const char answer_head[] = "{\"metadata-location\":", answer_meta[] = ",\"metadata\":",
                  answer_tail[] = CAT_EMPTY_CONFIG "}";

struct cat_shared *cat_shared_new(const char *mloc, const char *meta, size_t meta_len)
{
	size_t qlen, head;
	char *qloc = fl_json_dump_string(mloc, &qlen);
	struct cat_shared *s = qloc ? malloc(sizeof(*s)) : NULL;

	if (s == NULL) {
		free(qloc);
		return NULL;
	}
	atomic_init(&s->refs, 1);
	/* One block, {"metadata-location":"…","metadata":META,"config":{}},
	 * whose middle is the metadata. */
	head = strlen(answer_head) + qlen + strlen(answer_meta);
	s->answer_len = head + meta_len + strlen(answer_tail);
	s->answer = malloc(s->answer_len + 1);
	s->mloc = strdup(mloc);
	if (s->answer == NULL || s->mloc == NULL) {
		free(qloc);
		free(s->answer);
		free(s->mloc);
		free(s);
		return NULL;
	}
	snprintf(s->answer, head + 1, "%s%s%s", answer_head, qloc, answer_meta);
	free(qloc);
	if (meta != NULL)
		memcpy(s->answer + head, meta, meta_len);
	memcpy(s->answer + head + meta_len, answer_tail, sizeof(answer_tail));
	s->meta = s->answer + head;
	s->meta_len = meta_len;
	atomic_init(&s->location, NULL);
	for (int c = 0; c < FL_CODING_COUNT; c++)
		atomic_init(&s->coded[c], NULL);
	atomic_init(&s->charge, 0);
	atomic_init(&s->charge_forms, 0);
	atomic_init(&s->refs_form, NULL);
	s->row_id[0] = s->ns_id[0] = '\0';
	s->version = -1;
	/* Hashed here, once per version read, instead of on every hit. */
	if (EVP_Digest(mloc, strlen(mloc), s->mloc_sha256, NULL, EVP_sha256(), NULL) != 1)
		memset(s->mloc_sha256, 0, sizeof(s->mloc_sha256));
	return s;
}

void cat_shared_bytes(struct cat_shared *sh, struct cat_table_bytes *out)
{
	out->metadata_location = sh->mloc;
	out->location_sha256 = sh->mloc_sha256;
	out->metadata = sh->meta;
	out->metadata_len = sh->meta_len;
	out->answer = sh->answer;
	out->answer_len = sh->answer_len;
	out->hold = sh;
	out->form = NULL;
}

void cat_shared_row(struct cat_shared *s, const char *row_id, const char *ns_id, int64_t version)
{
	if (version < 0 || strlen(row_id) >= sizeof(s->row_id) || strlen(ns_id) >= sizeof(s->ns_id))
		return; /* not known */
	memcpy(s->row_id, row_id, strlen(row_id) + 1);
	memcpy(s->ns_id, ns_id, strlen(ns_id) + 1);
	s->version = version;
}

/* A coded copy of a version's answer (cat_cache_coded). */
struct cat_coded {
	size_t len;
	char *bytes;
};

/* Stands in a version's slot while its copy is made, or for good when the
 * coding gains nothing: the answer is then sent as it is. */
static struct cat_coded coded_busy, coded_none;
/* Stands in a version's refs_form while another thread makes it. */
static struct cat_shared form_busy;

static void coded_free(struct cat_coded *k)
{
	if (k == NULL || k == &coded_busy || k == &coded_none)
		return;
	free(k->bytes);
	free(k);
}

/* What a refs form costs the cache: its answer and location. */
static size_t form_bytes(const struct cat_shared *f)
{
	return f->answer_len + strlen(f->mloc);
}

size_t cat_cache_bytes(const struct cat_cache *c, size_t *coded)
{
	if (coded != NULL)
		*coded = c != NULL ? atomic_load(&c->coded_bytes) : 0;
	return c != NULL ? atomic_load(&c->bytes) : 0;
}

bool cat_table_bytes_cached(const struct cat_table_bytes *t)
{
	return t->hold != NULL && (atomic_load(&t->hold->charge) & CHARGED);
}

/* Where the coded copies of t's bytes are kept: its form's slots, or its
 * version's. */
static struct cat_shared *slots_of(const struct cat_table_bytes *t)
{
	return t->form != NULL ? t->form : t->hold;
}

enum cat_coded_state cat_table_bytes_coded_state(const struct cat_table_bytes *t, enum fl_coding c)
{
	struct cat_coded *k;

	if (t->hold == NULL || c <= FL_CODING_IDENTITY || c >= FL_CODING_COUNT)
		return CAT_CODED_NONE;
	k = atomic_load_explicit(&slots_of(t)->coded[c], memory_order_acquire);
	return k == NULL          ? CAT_CODED_OPEN
	       : k == &coded_busy ? CAT_CODED_BUSY
	       : k == &coded_none ? CAT_CODED_NONE
	                          : CAT_CODED_KEPT;
}

void cat_table_bytes_release(struct cat_shared *s)
{
	struct cat_shared *form;

	if (s == NULL || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	free(s->mloc);
	free(s->answer);
	free(atomic_load_explicit(&s->location, memory_order_relaxed));
	for (int c = 0; c < FL_CODING_COUNT; c++)
		coded_free(atomic_load_explicit(&s->coded[c], memory_order_relaxed));
	form = atomic_load_explicit(&s->refs_form, memory_order_relaxed);
	if (form != &form_busy)
		cat_table_bytes_release(form);
	free(s);
}

const char *cat_table_bytes_location(const struct cat_table_bytes *t)
{
	struct cat_shared *s = t->hold;
	char *loc = atomic_load_explicit(&s->location, memory_order_acquire), *mine = NULL;
	json_t *m;
	const char *v;

	if (loc != NULL)
		return loc;
	m = json_loadb(s->meta, s->meta_len, 0, NULL);
	v = json_string_value(json_object_get(m, "location"));
	if (v != NULL)
		mine = strdup(v);
	json_decref(m);
	if (mine == NULL)
		return NULL;
	/* Two first askers parse alike; the one that lost frees its copy. */
	if (!atomic_compare_exchange_strong_explicit(&s->location, &loc, mine, memory_order_acq_rel,
	                                             memory_order_acquire)) {
		free(mine);
		return loc;
	}
	return mine;
}

static void entry_free(struct entry *e)
{
	free(e->key);
	cat_table_bytes_release(e->sh);
	free(e);
}

/* Unlinks *pp (write lock held) and frees it. */
static void entry_remove(struct cat_cache *c, struct stripe *s, struct entry **pp)
{
	struct entry *e = *pp;
	/* What its version kept while here goes with it. */
	size_t copies = atomic_exchange(&e->sh->charge, 0) & ~CHARGED,
	       forms = atomic_exchange(&e->sh->charge_forms, 0) & ~CHARGED;

	*pp = e->next;
	s->count--;
	atomic_fetch_sub(&c->coded_bytes, copies);
	atomic_fetch_sub(&c->bytes, e->bytes + copies + forms);
	atomic_fetch_sub(&c->entries, 1);
	entry_free(e);
}

/* Records an invalidation of id_hash (or of everything) and returns the
 * stripes to purge as a mask; *seq (when not NULL) receives its number. */
static uint64_t record(struct cat_cache *c, uint64_t id_hash, bool all, unsigned long *seq)
{
	unsigned long n;

	pthread_mutex_lock(&c->ring_mu);
	n = atomic_load(&c->seq) + 1;
	c->ring[n % RING].id_hash = id_hash;
	c->ring[n % RING].all = all;
	atomic_store(&c->seq, n);
	pthread_mutex_unlock(&c->ring_mu);
	if (seq != NULL)
		*seq = n;
	return all ? ~0ULL : atomic_load(&c->id_mask[id_hash % ID_MASKS]);
}

static void purge(struct cat_cache *c, uint64_t mask, const char *table_id, uint64_t id_hash)
{
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &c->stripes[i];

		if (!(mask & (1ULL << i)))
			continue;
		pthread_rwlock_wrlock(&s->lock);
		for (size_t b = 0; b < s->nbuckets && s->count > 0; b++)
			for (struct entry **pp = &s->buckets[b]; *pp != NULL;) {
				if (table_id == NULL || ((*pp)->id_hash == id_hash &&
				                         strcmp((*pp)->table_id, table_id) == 0))
					entry_remove(c, s, pp);
				else
					pp = &(*pp)->next;
			}
		pthread_rwlock_unlock(&s->lock);
	}
}

static void flush_all(struct cat_cache *c)
{
	purge(c, record(c, 0, true, NULL), NULL, 0);
}

/* Records an invalidation of table_id, purges its entries and returns the
 * invalidation's number. */
static unsigned long invalidate_table(struct cat_cache *c, const char *table_id)
{
	uint64_t h = fnv(table_id, strlen(table_id));
	unsigned long seq;

	purge(c, record(c, h, false, &seq), table_id, h);
	return seq;
}

void cat_cache_invalidate(struct cat_cache *c, const char *table_id)
{
	if (c == NULL)
		return;
	if (strcmp(table_id, "*") == 0)
		flush_all(c);
	else
		(void)invalidate_table(c, table_id);
}

unsigned long cat_cache_generation(struct cat_cache *c)
{
	return c ? atomic_load(&c->seq) : 0;
}

int cat_cache_get(struct cat_cache *c, const char *key, size_t key_len, struct cat_shared **sh,
                  char storage_type[16])
{
	uint64_t h;
	struct stripe *s;
	int hit = 0;

	if (c == NULL)
		return 0;
	if (!atomic_load(&c->live))
		return 0;
	h = fnv(key, key_len);
	s = stripe_of(c, h);
	pthread_rwlock_rdlock(&s->lock);
	if (s->nbuckets > 0)
		for (struct entry *e = s->buckets[(h / STRIPES) % s->nbuckets]; e != NULL;
		     e = e->next) {
			if (e->hash != h || e->key_len != key_len ||
			    memcmp(e->key, key, key_len) != 0)
				continue;
			*sh = cat_shared_ref(e->sh);
			memcpy(storage_type, e->storage_type, 16);
			hit = 1;
			atomic_store_explicit(&e->ref, true, memory_order_relaxed);
			break;
		}
	pthread_rwlock_unlock(&s->lock);
	if (hit)
		atomic_fetch_add_explicit(&c->hits, 1, memory_order_relaxed);
	return hit;
}

void cat_cache_missed(struct cat_cache *c, unsigned long n)
{
	if (c != NULL)
		atomic_fetch_add_explicit(&c->misses, n, memory_order_relaxed);
}

/* Doubles the bucket array of s (write lock held); keeps the old one when
 * out of memory. */
static void grow(struct stripe *s)
{
	size_t n = s->nbuckets ? s->nbuckets * 2 : 16;
	struct entry **b = calloc(n, sizeof(*b));

	if (b == NULL)
		return;
	for (size_t i = 0; i < s->nbuckets; i++)
		for (struct entry *e = s->buckets[i], *next; e != NULL; e = next) {
			next = e->next;
			e->next = b[(e->hash / STRIPES) % n];
			b[(e->hash / STRIPES) % n] = e;
		}
	free(s->buckets);
	s->buckets = b;
	s->nbuckets = n;
	s->hand = 0;
}

/* Evicts with CLOCK in s (write lock held) until `need` more bytes fit or
 * the stripe is empty, sparing the entries of version `spare` (not NULL:
 * the one whose coded copy needs the room). */
static void evict(struct cat_cache *c, struct stripe *s, size_t need,
                  const struct cat_shared *spare)
{
	size_t steps = 0, limit = 2 * (s->nbuckets + s->count) + 2;

	while (s->count > 0 && atomic_load(&c->bytes) + need > c->max_bytes && steps++ < limit) {
		struct entry **pp = &s->buckets[s->hand];

		while (*pp != NULL && atomic_load(&c->bytes) + need > c->max_bytes) {
			if ((*pp)->sh == spare || atomic_exchange(&(*pp)->ref, false)) {
				pp = &(*pp)->next;
				continue;
			}
			entry_remove(c, s, pp);
			atomic_fetch_add_explicit(&c->evictions, 1, memory_order_relaxed);
		}
		s->hand = (s->hand + 1) % s->nbuckets;
	}
}

/* Makes `need` bytes fit: CLOCK in the inserting stripe (write lock held),
 * then in the others in turn, each only if its lock is free at once (so two
 * inserts can never wait on each other's stripes).  For a coded copy of
 * version `spare`: no stripe is held (own NULL), and spare stays. */
static void make_room(struct cat_cache *c, struct stripe *own, size_t need,
                      const struct cat_shared *spare)
{
	if (own != NULL)
		evict(c, own, need, spare);
	for (int k = 0; k < STRIPES && atomic_load(&c->bytes) + need > c->max_bytes; k++) {
		struct stripe *o = &c->stripes[atomic_fetch_add(&c->victim, 1) % STRIPES];

		if (o == own || pthread_rwlock_trywrlock(&o->lock) != 0)
			continue;
		evict(c, o, need, spare);
		pthread_rwlock_unlock(&o->lock);
	}
}

/* Charges len bytes kept with version s to the cache that holds it, in
 * s's word (&s->charge for a coded copy, counted in coded_bytes too;
 * &s->charge_forms for a refs form): 0 when s is in no cache (none was
 * given, or its entry is gone) or the bytes do not fit even after
 * evicting.  The cache's bytes are added first and given back on failure,
 * so that a removal of s's entry (which takes back what s was charged) can
 * never take more than was added. */
static bool charge(struct cat_cache *c, struct cat_shared *s, atomic_size_t *word, size_t len)
{
	atomic_size_t *counted;
	size_t cur;

	/* No more than an entry may take (max_entry) for each thing kept. */
	if (c == NULL || len > c->max_entry || !(atomic_load(word) & CHARGED))
		return false;
	counted = word == &s->charge ? &c->coded_bytes : NULL;
	if (atomic_load(&c->bytes) + len > c->max_bytes) {
		make_room(c, NULL, len, s);
		if (!(atomic_load(word) & CHARGED)) /* its entry went meanwhile */
			return false;
	}
	cur = atomic_load(&c->bytes);
	do {
		if (cur + len > c->max_bytes)
			return false;
	} while (!atomic_compare_exchange_weak(&c->bytes, &cur, cur + len));
	if (counted != NULL)
		atomic_fetch_add(counted, len);
	cur = atomic_load(word);
	do {
		if (!(cur & CHARGED)) {
			if (counted != NULL)
				atomic_fetch_sub(counted, len);
			atomic_fetch_sub(&c->bytes, len);
			return false;
		}
	} while (!atomic_compare_exchange_weak(word, &cur, cur + len));
	return true;
}

/* Makes s's copy coded with c, whose slot the caller set busy, and ends
 * that: kept with version v (charged to it), or the asker's own, or none;
 * returns as cat_cache_coded does. */
static int code_copy(struct cat_cache *cache, struct cat_shared *v, struct cat_shared *s,
                     enum fl_coding c, const char **p, size_t *n, char **owned)
{
	struct cat_coded *mine;
	char *bytes;
	size_t len;

	if (fl_coding_encode(c, s->answer, s->answer_len, &bytes, &len) != 0) {
		atomic_store_explicit(&s->coded[c], NULL, memory_order_release);
		return -1;
	}
	if (len >= s->answer_len) { /* gains nothing, now or later */
		free(bytes);
		atomic_store_explicit(&s->coded[c], &coded_none, memory_order_release);
		return 0;
	}
	mine = malloc(sizeof(*mine));
	if (mine != NULL && !charge(cache, v, &v->charge, len)) {
		free(mine);
		mine = NULL;
	}
	if (mine == NULL && owned == NULL) {
		/* Worth making only to keep: never again for this version. */
		free(bytes);
		atomic_store_explicit(&s->coded[c], &coded_none, memory_order_release);
		return 0;
	}
	if (mine == NULL) {
		/* Not cached (or no room): the asker's own copy; a later asker
		 * may find room (the slot is open again). */
		atomic_store_explicit(&s->coded[c], NULL, memory_order_release);
		*owned = bytes;
	} else {
		mine->len = len;
		mine->bytes = bytes;
		atomic_store_explicit(&s->coded[c], mine, memory_order_release);
	}
	*p = bytes;
	*n = len;
	return 1;
}

int cat_cache_coded(struct cat_cache *cache, const struct cat_table_bytes *t, enum fl_coding c,
                    const char **p, size_t *n, char **owned)
{
	/* The copy is kept in the slots of what is sent (the version's answer
	 * or its refs form) and charged to the version. */
	struct cat_shared *v = t->hold, *s = v != NULL ? slots_of(t) : NULL;
	struct cat_coded *k;

	if (owned != NULL)
		*owned = NULL;
	if (s == NULL || c <= FL_CODING_IDENTITY || c >= FL_CODING_COUNT)
		return 0;
	k = atomic_load_explicit(&s->coded[c], memory_order_acquire);
	/* The first asker makes it; the others meanwhile send the answer as
	 * it is rather than make it again (a hot table's reloads come
	 * together). */
	if (k == NULL &&
	    atomic_compare_exchange_strong_explicit(&s->coded[c], &k, &coded_busy,
	                                            memory_order_acq_rel, memory_order_acquire))
		return code_copy(cache, v, s, c, p, n, owned);
	if (k == &coded_busy || k == &coded_none)
		return 0;
	*p = k->bytes;
	*n = k->len;
	return 1;
}

int cat_table_bytes_coded(struct cat_db *db, const struct cat_table_bytes *t, enum fl_coding c,
                          const char **p, size_t *n, char **owned)
{
	return cat_cache_coded(db->cache, t, c, p, n, owned);
}

/* A form made where the thread may not wait is at most this much metadata
 * (~1.5 ms of parsing); a larger one is made by a worker. */
#define FORM_INLINE_MAX (128 * 1024)

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The metadata text meta with only the snapshots that a ref points at
 * (snapshots=refs), as *out of *n bytes; -1 with err set. */
static int refs_only(const char *meta, size_t len, char **out, size_t *n, struct fl_err *err)
{
	json_t *m = json_loadb(meta, len, 0, NULL), *refs, *keep = NULL, *snap, *ref;
	const char *k;
	size_t i, nids = 0;
	int64_t *ids = NULL;
	int rc = -1;

	if (m == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not JSON");
	refs = json_object_get(m, "refs");
	keep = json_array();
	/* The refs' snapshot ids, sorted: each snapshot is then one search. */
	ids = malloc((json_object_size(refs) + 1) * sizeof(*ids));
	if (keep == NULL || ids == NULL)
		goto out;
	json_object_foreach(refs, k, ref)
	{
		ids[nids++] = json_integer_value(json_object_get(ref, "snapshot-id"));
	}
	qsort(ids, nids, sizeof(*ids), cmp_i64);
	json_array_foreach(json_object_get(m, "snapshots"), i, snap)
	{
		int64_t id = json_integer_value(json_object_get(snap, "snapshot-id"));

		if (bsearch(&id, ids, nids, sizeof(*ids), cmp_i64) != NULL &&
		    json_array_append(keep, snap) != 0)
			goto out;
	}
	if (json_object_set(m, "snapshots", keep) == 0 && (*out = fl_json_dump(m, n)) != NULL)
		rc = 0;
out:
	free(ids);
	json_decref(keep);
	json_decref(m);
	return rc == 0 ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* Version v's refs form, a version of its own (refs 1); NULL with err set. */
static struct cat_shared *form_new(const struct cat_shared *v, struct fl_err *err)
{
	struct cat_shared *f;
	char *meta;
	size_t n;

	if (refs_only(v->meta, v->meta_len, &meta, &n, err) != 0)
		return NULL;
	f = cat_shared_new(v->mloc, meta, n);
	free(meta);
	if (f == NULL)
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	return f;
}

/* out: t's bytes, with those of form f (whose reference out->hold then
 * takes), or of its version's kept form f (held through the version). */
static void form_out(const struct cat_table_bytes *t, struct cat_shared *f, bool kept,
                     struct cat_table_bytes *out)
{
	*out = *t;
	cat_shared_bytes(f, out);
	if (kept) {
		out->hold = cat_shared_ref(t->hold);
		out->form = f;
	}
}

int cat_table_bytes_refs(struct cat_db *db, const struct cat_table_bytes *t,
                         struct cat_table_bytes *out, struct fl_err *err)
{
	struct cat_shared *v = t->hold, *f, *mine;
	bool first;

	if (t->form != NULL) { /* already a refs form: filtering it again changes nothing */
		*out = *t;
		out->hold = cat_shared_ref(v);
		return 0;
	}
	f = atomic_load_explicit(&v->refs_form, memory_order_acquire);
	/* The first asker makes the one kept; others meanwhile make their own
	 * rather than wait. */
	first = f == NULL &&
	        atomic_compare_exchange_strong_explicit(&v->refs_form, &f, &form_busy,
	                                                memory_order_acq_rel, memory_order_acquire);
	if (f != NULL && f != &form_busy) { /* kept (maybe just now, by another) */
		form_out(t, f, true, out);
		return 0;
	}
	if (fl_no_wait && v->meta_len > FORM_INLINE_MAX) {
		if (first)
			atomic_store_explicit(&v->refs_form, NULL, memory_order_release);
		return fl_err_set(err, FL_ERR_WOULD_BLOCK,
		                  "the refs-only metadata is made by a worker");
	}
	mine = form_new(v, err);
	if (first && mine != NULL && charge(db->cache, v, &v->charge_forms, form_bytes(mine))) {
		atomic_store_explicit(&v->refs_form, mine, memory_order_release);
		form_out(t, mine, true, out);
		return 0;
	}
	/* Not cached, no room, made by another meanwhile, or failed. */
	if (first)
		atomic_store_explicit(&v->refs_form, NULL, memory_order_release);
	if (mine == NULL)
		return -1;
	form_out(t, mine, false, out);
	return 0;
}

/* True when nothing since `generation` invalidated id_hash (or everything)
 * but the invalidation numbered own (0: none); ring_mu held. */
static bool unchanged_since(struct cat_cache *c, unsigned long generation, uint64_t id_hash,
                            unsigned long own)
{
	unsigned long now = atomic_load(&c->seq);

	if (now - generation >= RING)
		return now == generation;
	for (unsigned long n = generation + 1; n <= now; n++)
		if (n != own && (c->ring[n % RING].all || c->ring[n % RING].id_hash == id_hash))
			return false;
	return true;
}

static void put(struct cat_cache *c, unsigned long generation, unsigned long own, const char *key,
                size_t key_len, const char *table_id, struct cat_shared *sh,
                const char *storage_type)
{
	size_t bytes = sizeof(struct entry) + key_len + strlen(sh->mloc) + sh->answer_len;
	struct entry *e, **pp;
	struct stripe *s;
	bool ok;

	if (c == NULL || !atomic_load(&c->live) || bytes > c->max_entry || bytes > c->max_bytes)
		return;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return;
	e->key = malloc(key_len);
	if (e->key == NULL) {
		free(e);
		return;
	}
	e->sh = cat_shared_ref(sh);
	memcpy(e->key, key, key_len);
	e->key_len = key_len;
	e->bytes = bytes;
	e->hash = fnv(key, key_len);
	snprintf(e->table_id, sizeof(e->table_id), "%s", table_id);
	e->id_hash = fnv(e->table_id, strlen(e->table_id));
	snprintf(e->storage_type, sizeof(e->storage_type), "%s", storage_type);
	s = stripe_of(c, e->hash);
	pthread_rwlock_wrlock(&s->lock);
	/* Announce the stripe before looking at the ring (see the proof above). */
	atomic_fetch_or(&c->id_mask[e->id_hash % ID_MASKS], 1ULL << (e->hash % STRIPES));
	pthread_mutex_lock(&c->ring_mu);
	ok = atomic_load(&c->live) && unchanged_since(c, generation, e->id_hash, own);
	pthread_mutex_unlock(&c->ring_mu);
	if (ok && s->count >= s->nbuckets)
		grow(s);
	ok = ok && s->nbuckets > 0;
	if (ok) {
		pp = &s->buckets[(e->hash / STRIPES) % s->nbuckets];
		for (; *pp != NULL; pp = &(*pp)->next)
			if ((*pp)->hash == e->hash && (*pp)->key_len == key_len &&
			    memcmp((*pp)->key, key, key_len) == 0) {
				entry_remove(c, s, pp);
				break;
			}
		make_room(c, s, bytes, NULL);
		ok = atomic_load(&c->bytes) + bytes <= c->max_bytes;
	}
	if (ok) {
		/* What it keeps is charged from now until it leaves.  A version
		 * is put before anything is kept with it (what is made of one
		 * not cached is its asker's own), so there is nothing to count
		 * yet; nor is a version put twice. */
		atomic_store(&sh->charge, CHARGED);
		atomic_store(&sh->charge_forms, CHARGED);
		pp = &s->buckets[(e->hash / STRIPES) % s->nbuckets];
		e->next = *pp;
		*pp = e;
		s->count++;
		atomic_fetch_add(&c->bytes, bytes);
		atomic_fetch_add(&c->entries, 1);
		e = NULL;
	}
	pthread_rwlock_unlock(&s->lock);
	if (e != NULL)
		entry_free(e);
}

void cat_cache_put(struct cat_cache *c, unsigned long generation, const char *key, size_t key_len,
                   const char *table_id, struct cat_shared *sh, const char *storage_type)
{
	put(c, generation, 0, key, key_len, table_id, sh, storage_type);
}

struct cat_fresh *cat_fresh_new(struct cat_db *db, const char *wh_name, const char *storage_type,
                                const struct cat_ns *ns, const char *name, const char *table_id,
                                const char *ns_id, int64_t version, const char *metadata_location,
                                const char *metadata, size_t metadata_len, unsigned long generation)
{
	struct cat_fresh *f;

	if (db->cache == NULL || !atomic_load(&db->cache->live))
		return NULL;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return NULL;
	snprintf(f->table_id, sizeof(f->table_id), "%s", table_id);
	snprintf(f->storage_type, sizeof(f->storage_type), "%s", storage_type);
	f->generation = generation;
	f->key = cat_table_key(wh_name, ns, name, &f->key_len);
	f->sh = cat_shared_new(metadata_location, metadata, metadata_len);
	if (f->key == NULL || f->sh == NULL) {
		cat_fresh_free(f);
		return NULL;
	}
	cat_shared_row(f->sh, table_id, ns_id, version);
	return f;
}

void cat_fresh_free(struct cat_fresh *f)
{
	if (f == NULL)
		return;
	free(f->key);
	cat_table_bytes_release(f->sh);
	free(f);
}

/* The invalidation comes first and is recorded like any other: a reader
 * that read the table before this commit and inserts after it is refused
 * by it.  Only this commit's own record is then overlooked by the insert
 * of its version. */
void cat_cache_committed(struct cat_cache *c, const struct cat_fresh *f)
{
	unsigned long own;

	if (c == NULL)
		return;
	own = invalidate_table(c, f->table_id);
	put(c, f->generation, own, f->key, f->key_len, f->table_id, f->sh, f->storage_type);
}

static void *listen_loop(void *arg)
{
	struct cat_cache *c = arg;
	int64_t backoff_ms = 100;

	pthread_setname_np(pthread_self(), "floe-listen");

	while (!atomic_load(&c->stop)) {
		PGconn *pg = cat_pg_connect(c->conninfo);
		PGresult *r;

		if (PQstatus(pg) != CONNECTION_OK) {
			PQfinish(pg);
			for (int64_t t = 0; t < backoff_ms && !atomic_load(&c->stop); t += 50) {
				struct timespec ts = {0, 50 * 1000000L};

				nanosleep(&ts, NULL);
			}
			backoff_ms = backoff_ms < 5000 ? backoff_ms * 2 : 5000;
			continue;
		}
		r = PQexec(pg, "LISTEN floe_table; LISTEN floe_auth");
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			PQclear(r);
			PQfinish(pg);
			continue;
		}
		PQclear(r);
		backoff_ms = 100;
		/* Whatever happened while we were not listening is unknown, and
		 * so is whose backend a pid names now (the server may have
		 * restarted): the pooled connections are checked again. */
		atomic_fetch_add(&c->db->listen_epoch, 1);
		flush_all(c);
		atomic_fetch_add(&c->access_generation, 1);
		atomic_store(&c->live, true);
		while (!atomic_load(&c->stop)) {
			struct pollfd pfd = {PQsocket(pg), POLLIN, 0};
			PGnotify *n;

			if (poll(&pfd, 1, 200) < 0)
				continue;
			if (PQconsumeInput(pg) == 0 || PQstatus(pg) != CONNECTION_OK)
				break;
			while ((n = PQnotifies(pg)) != NULL) {
				if (strcmp(n->relname, "floe_auth") == 0) {
					atomic_fetch_add(&c->access_generation, 1);
				} else if (cat_db_own_backend(c->db, n->be_pid)) {
					/* Sent by this process, which invalidated the
					 * table itself or put the version it committed
					 * there (tx.c): dropping that would only turn
					 * the next load into a miss. */
				} else {
					cat_cache_invalidate(c, n->extra);
					atomic_fetch_add(&c->notifications, 1);
				}
				PQfreemem(n);
			}
		}
		atomic_store(&c->live, false);
		flush_all(c);
		PQfinish(pg);
	}
	return NULL;
}

struct cat_cache *cat_cache_new(size_t max_bytes, bool live)
{
	struct cat_cache *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->max_bytes = max_bytes;
	c->max_entry = max_bytes / 32 > MIN_ENTRY_LIMIT ? max_bytes / 32 : MIN_ENTRY_LIMIT;
	for (int i = 0; i < STRIPES; i++)
		pthread_rwlock_init(&c->stripes[i].lock, NULL);
	pthread_mutex_init(&c->ring_mu, NULL);
	atomic_init(&c->live, live);
	return c;
}

int cat_cache_start(struct cat_db *db, size_t max_bytes, struct fl_err *err)
{
	struct cat_cache *c = cat_cache_new(max_bytes, false);

	if (c == NULL || (c->conninfo = strdup(db->conninfo)) == NULL) {
		cat_cache_stop(c);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	c->db = db;
	if (pthread_create(&c->thread, NULL, listen_loop, c) != 0) {
		cat_cache_stop(c);
		return fl_err_set(err, FL_ERR_INTERNAL, "cannot start the cache listener");
	}
	c->started = true;
	db->cache = c;
	return 0;
}

bool cat_db_access_generation(struct cat_db *db, unsigned long *gen)
{
	struct cat_cache *c = db->cache;

	if (c == NULL || !atomic_load(&c->live))
		return false;
	*gen = atomic_load(&c->access_generation);
	return true;
}

void cat_cache_stop(struct cat_cache *c)
{
	if (c == NULL)
		return;
	atomic_store(&c->stop, true);
	if (c->started)
		pthread_join(c->thread, NULL);
	flush_all(c);
	for (int i = 0; i < STRIPES; i++) {
		pthread_rwlock_destroy(&c->stripes[i].lock);
		free(c->stripes[i].buckets);
	}
	pthread_mutex_destroy(&c->ring_mu);
	free(c->conninfo);
	free(c);
}

void cat_db_cache_stats(struct cat_db *db, struct cat_cache_stats *st)
{
	struct cat_cache *c = db->cache;

	memset(st, 0, sizeof(*st));
	st->file_reads = atomic_load(&db->file_reads);
	st->file_read_bytes = atomic_load(&db->file_read_bytes);
	if (c == NULL)
		return;
	pthread_mutex_lock(&db->load_mu);
	st->batch_reads = db->load_reads;
	st->batch_loads = db->load_loads;
	st->loads_waiting = db->load_waiting;
	pthread_mutex_unlock(&db->load_mu);
	st->hits = atomic_load(&c->hits);
	st->misses = atomic_load(&c->misses);
	st->evictions = atomic_load(&c->evictions);
	st->notifications = atomic_load(&c->notifications);
	st->listening = atomic_load(&c->live);
	st->bytes = cat_cache_bytes(c, &st->coded_bytes);
	st->entries = atomic_load(&c->entries);
	st->max_bytes = c->max_bytes;
}
