/* whcache.c - warehouse lookups cached for WHCACHE_TTL_NS; a handful of
 * entries, replaced oldest first. */
#include "whcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

#define WHCACHE_SLOTS 32
#define WHCACHE_TTL_NS (5LL * 1000000000LL)

struct slot {
	struct cat_warehouse wh;
	int64_t at; /* 0 = empty */
};

struct srv_whcache {
	pthread_mutex_t mu;
	struct slot slots[WHCACHE_SLOTS];
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
