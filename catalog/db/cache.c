/* cache.c - the loadTable cache, kept coherent with LISTEN/NOTIFY.
 *
 * Every change to a table row (commit, drop, rename, register) issues
 * NOTIFY floe_table with the table id in the same transaction, so the
 * notification is delivered exactly when the change becomes visible.  A
 * listener thread on its own connection drops the entries of that table.
 *
 * Coherence rules:
 *   - the cache serves only while the listener is connected; after a lost
 *     listener connection it is flushed and bypassed until LISTEN is back;
 *   - a reader notes the invalidation counter before its database read and
 *     inserts what it read only if no invalidation happened meanwhile, so a
 *     stale read can never overwrite a newer invalidation;
 *   - a commit through this process invalidates its tables synchronously
 *     after COMMIT, so a client reads its own writes on the replica it wrote
 *     to; other replicas see the change when the notification arrives
 *     (milliseconds).
 * The cache is direct-mapped (a colliding insert replaces the slot) and
 * bounded in entry size and total bytes. */
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "db_int.h"

#define SLOTS 2048
#define MAX_ENTRY_BYTES (512 * 1024)
#define MAX_TOTAL_BYTES (256L * 1024 * 1024)

struct entry {
	char *key;
	size_t key_len;
	char table_id[40];
	char *metadata_location;
	char *metadata;
	char storage_type[16];
	size_t bytes;
};

struct cat_cache {
	pthread_rwlock_t lock;
	struct entry slots[SLOTS];
	size_t total;
	atomic_ulong generation; /* bumped by every invalidation */
	atomic_ulong access_generation; /* bumped by NOTIFY floe_auth and reconnects */
	atomic_bool live; /* the listener is connected */
	atomic_bool stop;
	pthread_t thread;
	bool started;
	char *conninfo;
};

static uint64_t fnv(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
	return h;
}

static void entry_clear(struct cat_cache *c, struct entry *e)
{
	c->total -= e->bytes;
	free(e->key);
	free(e->metadata_location);
	free(e->metadata);
	memset(e, 0, sizeof(*e));
}

static void flush_all(struct cat_cache *c)
{
	pthread_rwlock_wrlock(&c->lock);
	for (int i = 0; i < SLOTS; i++)
		if (c->slots[i].key != NULL)
			entry_clear(c, &c->slots[i]);
	atomic_fetch_add(&c->generation, 1);
	pthread_rwlock_unlock(&c->lock);
}

void cat_cache_invalidate(struct cat_cache *c, const char *table_id)
{
	if (c == NULL)
		return;
	pthread_rwlock_wrlock(&c->lock);
	atomic_fetch_add(&c->generation, 1);
	for (int i = 0; i < SLOTS; i++)
		if (c->slots[i].key != NULL &&
		    (strcmp(table_id, "*") == 0 || strcmp(c->slots[i].table_id, table_id) == 0))
			entry_clear(c, &c->slots[i]);
	pthread_rwlock_unlock(&c->lock);
}

unsigned long cat_cache_generation(struct cat_cache *c)
{
	return c ? atomic_load(&c->generation) : 0;
}

int cat_cache_get(struct cat_cache *c, const char *key, size_t key_len, char **mloc, char **meta,
                  char storage_type[16])
{
	struct entry *e;
	int hit = 0;

	if (c == NULL || !atomic_load(&c->live))
		return 0;
	e = &c->slots[fnv(key, key_len) % SLOTS];
	pthread_rwlock_rdlock(&c->lock);
	if (e->key != NULL && e->key_len == key_len && memcmp(e->key, key, key_len) == 0) {
		*mloc = strdup(e->metadata_location);
		*meta = strdup(e->metadata);
		memcpy(storage_type, e->storage_type, 16);
		hit = *mloc != NULL && *meta != NULL;
		if (!hit) {
			free(*mloc);
			free(*meta);
		}
	}
	pthread_rwlock_unlock(&c->lock);
	return hit;
}

void cat_cache_put(struct cat_cache *c, unsigned long generation, const char *key, size_t key_len,
                   const char *table_id, const char *mloc, const char *meta,
                   const char *storage_type)
{
	size_t bytes = key_len + strlen(mloc) + strlen(meta);
	struct entry *e, fresh = {0};

	if (c == NULL || !atomic_load(&c->live) || bytes > MAX_ENTRY_BYTES)
		return;
	fresh.key = malloc(key_len);
	fresh.metadata_location = strdup(mloc);
	fresh.metadata = strdup(meta);
	if (fresh.key == NULL || fresh.metadata_location == NULL || fresh.metadata == NULL) {
		free(fresh.key);
		free(fresh.metadata_location);
		free(fresh.metadata);
		return;
	}
	memcpy(fresh.key, key, key_len);
	fresh.key_len = key_len;
	fresh.bytes = bytes;
	snprintf(fresh.table_id, sizeof(fresh.table_id), "%s", table_id);
	snprintf(fresh.storage_type, sizeof(fresh.storage_type), "%s", storage_type);
	e = &c->slots[fnv(key, key_len) % SLOTS];
	pthread_rwlock_wrlock(&c->lock);
	/* Anything invalidated since the read began makes what was read suspect. */
	if (atomic_load(&c->generation) == generation && c->total + bytes <= MAX_TOTAL_BYTES) {
		if (e->key != NULL)
			entry_clear(c, e);
		*e = fresh;
		c->total += bytes;
		fresh.key = NULL;
	}
	pthread_rwlock_unlock(&c->lock);
	if (fresh.key != NULL) {
		free(fresh.key);
		free(fresh.metadata_location);
		free(fresh.metadata);
	}
}

static void *listen_loop(void *arg)
{
	struct cat_cache *c = arg;
	int64_t backoff_ms = 100;

	while (!atomic_load(&c->stop)) {
		PGconn *pg = PQconnectdb(c->conninfo);
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
		/* Whatever happened while we were not listening is unknown. */
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
				if (strcmp(n->relname, "floe_auth") == 0)
					atomic_fetch_add(&c->access_generation, 1);
				else
					cat_cache_invalidate(c, n->extra);
				PQfreemem(n);
			}
		}
		atomic_store(&c->live, false);
		flush_all(c);
		PQfinish(pg);
	}
	return NULL;
}

int cat_cache_start(struct cat_db *db, struct fl_err *err)
{
	struct cat_cache *c = calloc(1, sizeof(*c));

	if (c == NULL || (c->conninfo = strdup(db->conninfo)) == NULL) {
		free(c);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	pthread_rwlock_init(&c->lock, NULL);
	if (pthread_create(&c->thread, NULL, listen_loop, c) != 0) {
		free(c->conninfo);
		free(c);
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
	pthread_rwlock_destroy(&c->lock);
	free(c->conninfo);
	free(c);
}
