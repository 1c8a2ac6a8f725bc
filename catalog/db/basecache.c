/* basecache.c - the last parsed metadata of the tables this process
 * commits to, so that an optimistic commit (commit.c) neither fetches nor
 * parses a version it already holds: on a hot table most tries judge their
 * requirements on a version that the previous commit wrote or read.
 *
 * An entry is valid for exactly one metadata location.  Metadata file
 * names carry a UUID, so a location names one version's text for good, and
 * the row read (cat_row_read) leaves out the stored text exactly when the
 * row's current location is the entry's.  Nothing is ever invalidated;
 * entries are replaced, least recently used first, and documents over
 * BASE_MAX_TEXT bytes are not kept.  The parsed documents are shared
 * read-only between threads: nothing modifies a document after it is put
 * here, and jansson's reference counts are atomic. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "db_int.h"

#define BASE_SLOTS 16
#define BASE_MAX_TEXT ((size_t)8 << 20)

struct base_slot {
	char *key;
	size_t key_len;
	char *location;
	char *text;
	json_t *doc;
	uint64_t used;
};

struct cat_base_cache {
	pthread_mutex_t mu;
	uint64_t tick;
	struct base_slot slots[BASE_SLOTS];
};

struct cat_base_cache *cat_base_cache_new(void)
{
	struct cat_base_cache *c = calloc(1, sizeof(*c));

	if (c != NULL)
		pthread_mutex_init(&c->mu, NULL);
	return c;
}

static void slot_clear(struct base_slot *s)
{
	free(s->key);
	free(s->location);
	free(s->text);
	json_decref(s->doc);
	memset(s, 0, sizeof(*s));
}

void cat_base_cache_free(struct cat_base_cache *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < BASE_SLOTS; i++)
		slot_clear(&c->slots[i]);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static struct base_slot *find(struct cat_base_cache *c, const char *key, size_t key_len)
{
	for (int i = 0; i < BASE_SLOTS; i++) {
		struct base_slot *s = &c->slots[i];

		if (s->key != NULL && s->key_len == key_len && memcmp(s->key, key, key_len) == 0)
			return s;
	}
	return NULL;
}

bool cat_base_get(struct cat_base_cache *c, const char *key, size_t key_len, char **location,
                  char **text, json_t **doc)
{
	struct base_slot *s;
	bool hit = false;

	if (c == NULL || key == NULL)
		return false;
	pthread_mutex_lock(&c->mu);
	s = find(c, key, key_len);
	if (s != NULL) {
		*location = strdup(s->location);
		*text = strdup(s->text);
		if (*location != NULL && *text != NULL) {
			*doc = json_incref(s->doc);
			s->used = ++c->tick;
			hit = true;
		} else {
			free(*location);
			free(*text);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return hit;
}

void cat_base_put(struct cat_base_cache *c, const char *key, size_t key_len, const char *location,
                  const char *text, json_t *doc)
{
	struct base_slot *s, fresh = {0};
	size_t n = strlen(text);

	if (c == NULL || key == NULL || n > BASE_MAX_TEXT)
		return;
	/* Copied outside the lock: a text is up to megabytes. */
	fresh.key = malloc(key_len);
	fresh.location = strdup(location);
	fresh.text = malloc(n + 1);
	if (fresh.key == NULL || fresh.location == NULL || fresh.text == NULL) {
		slot_clear(&fresh);
		return;
	}
	memcpy(fresh.key, key, key_len);
	fresh.key_len = key_len;
	memcpy(fresh.text, text, n + 1);
	fresh.doc = json_incref(doc);
	pthread_mutex_lock(&c->mu);
	s = find(c, key, key_len);
	if (s == NULL) {
		/* A free slot, else the least recently used one. */
		s = &c->slots[0];
		for (int i = 0; i < BASE_SLOTS && s->key != NULL; i++)
			if (c->slots[i].key == NULL || c->slots[i].used < s->used)
				s = &c->slots[i];
	}
	fresh.used = ++c->tick;
	/* The old entry is released outside the lock (a large document). */
	struct base_slot old = *s;
	*s = fresh;
	pthread_mutex_unlock(&c->mu);
	slot_clear(&old);
}
