/* basecache.c - the last parsed metadata of the tables this process
 * commits to, so that an optimistic commit (commit.c) neither fetches nor
 * parses a version it already holds: on a hot table most tries judge their
 * requirements on a version that an earlier try read or that an earlier
 * commit of this process wrote.  Only committed versions are kept (a
 * written one once its COMMIT succeeded), and never in place of a newer
 * one.
 *
 * An entry is valid for exactly one metadata location.  Metadata file
 * names carry a UUID, so a location names one version's text for good, and
 * the row read (cat_row_read) leaves out the stored text exactly when the
 * row's current location is the entry's.  Nothing is ever invalidated;
 * entries are replaced, least recently used first, when the slots or the
 * text budget run out; documents over BASE_MAX_TEXT bytes are not kept (a
 * parsed document takes several times its text).  The parsed documents are shared
 * read-only between threads: nothing modifies a document after it is put
 * here, and jansson's reference counts are atomic. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "db_int.h"

#define BASE_SLOTS 16
#define BASE_BUDGET ((size_t)16 << 20) /* bytes of text, all entries */
#define BASE_MAX_TEXT ((size_t)4 << 20)

struct base_slot {
	char *key;
	size_t key_len;
	char id[40]; /* the table's */
	int64_t version;
	char *location;
	char *text; /* NULL when memo holds it */
	size_t text_len;
	json_t *doc;
	struct fl_json_memo *memo; /* the dump that wrote text, or NULL */
	uint64_t used;
};

static const char *slot_text(const struct base_slot *s)
{
	return s->text != NULL ? s->text : fl_json_memo_text(s->memo, NULL);
}

struct cat_base_cache {
	pthread_mutex_t mu;
	uint64_t tick;
	size_t bytes; /* text held */
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
	fl_json_memo_unref(s->memo);
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
                  char **text, json_t **doc, struct fl_json_memo **memo)
{
	struct base_slot *s;
	bool hit = false;

	if (c == NULL || key == NULL)
		return false;
	pthread_mutex_lock(&c->mu);
	s = find(c, key, key_len);
	if (s != NULL) {
		char *l = strdup(s->location), *t = text != NULL ? strdup(slot_text(s)) : NULL;

		if (l != NULL && (text == NULL || t != NULL)) {
			*location = l;
			if (text != NULL)
				*text = t;
			*doc = json_incref(s->doc);
			if (memo != NULL)
				*memo = fl_json_memo_ref(s->memo);
			s->used = ++c->tick;
			hit = true;
		} else {
			free(l);
			free(t);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return hit;
}

void cat_base_put(struct cat_base_cache *c, const char *key, size_t key_len, const char *id,
                  int64_t version, const char *location, const char *text, json_t *doc,
                  struct fl_json_memo *memo)
{
	struct base_slot *s, fresh = {0}, old[BASE_SLOTS];
	size_t n = 0;
	int nold = 0;

	if (memo != NULL)
		(void)fl_json_memo_text(memo, &n);
	else if (text != NULL)
		n = strlen(text);
	if (c == NULL || key == NULL || (text == NULL && memo == NULL) || n > BASE_MAX_TEXT)
		return;
	/* Copied outside the lock: a text is up to megabytes. */
	fresh.key = malloc(key_len);
	fresh.location = strdup(location);
	fresh.memo = fl_json_memo_ref(memo);
	fresh.text = memo == NULL ? malloc(n + 1) : NULL;
	if (fresh.key == NULL || fresh.location == NULL || (memo == NULL && fresh.text == NULL)) {
		slot_clear(&fresh);
		return;
	}
	memcpy(fresh.key, key, key_len);
	fresh.key_len = key_len;
	if (memo == NULL)
		memcpy(fresh.text, text, n + 1);
	fresh.text_len = n;
	fresh.doc = json_incref(doc);
	snprintf(fresh.id, sizeof(fresh.id), "%s", id);
	fresh.version = version;
	pthread_mutex_lock(&c->mu);
	s = find(c, key, key_len);
	if (s != NULL && strcmp(s->id, id) == 0 && s->version > version) {
		/* A reader that raced a commit must not push out the newer version. */
		pthread_mutex_unlock(&c->mu);
		slot_clear(&fresh);
		return;
	}
	for (;;) {
		struct base_slot *lru = NULL;

		if (s != NULL && c->bytes - s->text_len + n <= BASE_BUDGET)
			break;
		if (s == NULL && c->bytes + n <= BASE_BUDGET) {
			for (int i = 0; i < BASE_SLOTS && s == NULL; i++)
				if (c->slots[i].key == NULL)
					s = &c->slots[i];
			if (s != NULL)
				break;
		}
		/* Evict the least recently used other entry. */
		for (int i = 0; i < BASE_SLOTS; i++)
			if (c->slots[i].key != NULL && &c->slots[i] != s &&
			    (lru == NULL || c->slots[i].used < lru->used))
				lru = &c->slots[i];
		if (lru == NULL)
			break; /* only s is left, and n fits the budget alone */
		c->bytes -= lru->text_len;
		old[nold++] = *lru;
		memset(lru, 0, sizeof(*lru));
	}
	if (s == NULL)
		s = &c->slots[0]; /* every slot was emptied above */
	if (s->key != NULL) {
		c->bytes -= s->text_len;
		old[nold++] = *s;
	}
	fresh.used = ++c->tick;
	*s = fresh;
	c->bytes += n;
	pthread_mutex_unlock(&c->mu);
	/* Released outside the lock: large documents. */
	for (int i = 0; i < nold; i++)
		slot_clear(&old[i]);
}
