/* whcache.c - warehouse lookups cached for WHCACHE_TTL_NS; a handful of
 * entries, replaced oldest first.  Storage handles are kept per warehouse
 * id and profile, in a table of their own (a handle outlives the lookup's
 * TTL: an S3 handle keeps its connections warm). */
#include "whcache.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "io/io.h"

#define WHCACHE_SLOTS 32
#define WHCACHE_TTL_NS (5LL * 1000000000LL)

struct slot {
	struct cat_warehouse wh;
	int64_t at; /* 0 = empty */
};

struct io_slot {
	char id[37];
	struct st_profile profile;
	struct st_io *io; /* one reference held by the cache; NULL = empty */
	int64_t used;
};

struct srv_whcache {
	pthread_mutex_t mu;
	struct slot slots[WHCACHE_SLOTS];
	struct io_slot ios[WHCACHE_SLOTS];
};

struct srv_whcache *srv_whcache_new(void)
{
	struct srv_whcache *c = calloc(1, sizeof(*c));

	if (c != NULL)
		pthread_mutex_init(&c->mu, NULL);
	return c;
}

void srv_whcache_free(struct srv_whcache *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < WHCACHE_SLOTS; i++)
		st_io_release(c->ios[i].io);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int srv_whcache_get(struct srv_whcache *c, const char *name, struct cat_warehouse *wh)
{
	int64_t now = fl_mono_ns();
	int hit = 0;

	if (c == NULL)
		return 0;
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < WHCACHE_SLOTS; i++) {
		struct slot *s = &c->slots[i];

		if (s->at != 0 && now - s->at < WHCACHE_TTL_NS && strcmp(s->wh.name, name) == 0) {
			*wh = s->wh;
			hit = 1;
			break;
		}
	}
	pthread_mutex_unlock(&c->mu);
	return hit;
}

void srv_whcache_put(struct srv_whcache *c, const struct cat_warehouse *wh)
{
	struct slot *victim;

	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	victim = &c->slots[0];
	for (int i = 0; i < WHCACHE_SLOTS; i++) {
		struct slot *s = &c->slots[i];

		if (s->at != 0 && strcmp(s->wh.name, wh->name) == 0) {
			victim = s;
			break;
		}
		if (s->at < victim->at)
			victim = s;
	}
	victim->wh = *wh;
	victim->at = fl_mono_ns();
	pthread_mutex_unlock(&c->mu);
}

void srv_whcache_clear(struct srv_whcache *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	memset(c->slots, 0, sizeof(c->slots));
	pthread_mutex_unlock(&c->mu);
}

/* The fields a handle is built from; the STS and signing settings do not
 * change how Floe itself reaches the store. */
static bool same_profile(const struct st_profile *a, const struct st_profile *b)
{
	return a->type == b->type && strcmp(a->location, b->location) == 0 &&
	       strcmp(a->endpoint, b->endpoint) == 0 && strcmp(a->region, b->region) == 0 &&
	       a->path_style == b->path_style &&
	       strcmp(a->access_key_id_env, b->access_key_id_env) == 0 &&
	       strcmp(a->secret_access_key_env, b->secret_access_key_env) == 0 &&
	       strcmp(a->session_token_env, b->session_token_env) == 0 &&
	       strcmp(a->credentials_file, b->credentials_file) == 0;
}

int srv_whcache_io(struct srv_whcache *c, struct cat_warehouse *wh, struct fl_err *err)
{
	struct io_slot *victim = NULL;
	struct st_io *io = NULL;
	int rc = 0;

	if (c == NULL) {
		if (st_io_open(&wh->profile, &wh->io, err) != 0)
			return -1;
		return 0;
	}
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < WHCACHE_SLOTS; i++) {
		struct io_slot *s = &c->ios[i];

		if (s->io != NULL && strcmp(s->id, wh->id) == 0 &&
		    same_profile(&s->profile, &wh->profile)) {
			io = s->io;
			s->used = fl_mono_ns();
			break;
		}
		if (victim == NULL || s->io == NULL ||
		    (victim->io != NULL && s->used < victim->used))
			victim = s;
	}
	if (io == NULL) {
		rc = st_io_open(&wh->profile, &io, err);
		if (rc == 0) {
			st_io_release(victim->io);
			snprintf(victim->id, sizeof(victim->id), "%s", wh->id);
			victim->profile = wh->profile;
			victim->io = io;
			victim->used = fl_mono_ns();
		}
	}
	if (rc == 0) {
		st_io_retain(io);
		wh->io = io;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}
