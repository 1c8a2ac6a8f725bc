/* arena.c - bump allocation in chained blocks.
 *
 * Invariant: `head` is the block being filled; older blocks are only freed.
 * Requests larger than a quarter block get a block of their own so that a big
 * allocation does not waste the rest of the current one. */
#include "arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK 8192
#define ARENA_ALIGN 16

struct block {
	struct block *next;
	size_t cap;
	size_t used;
	_Alignas(ARENA_ALIGN) unsigned char data[];
};

struct defer {
	struct defer *next;
	void (*fn)(void *);
	void *p;
};

struct fl_arena {
	struct block *head;
	struct defer *defers;
	size_t total;
};

struct fl_arena *fl_arena_new(void)
{
	return calloc(1, sizeof(struct fl_arena));
}

void fl_arena_free(struct fl_arena *a)
{
	if (a == NULL)
		return;
	while (a->defers != NULL) {
		struct defer *d = a->defers;

		a->defers = d->next;
		d->fn(d->p);
		free(d);
	}
	while (a->head != NULL) {
		struct block *b = a->head;

		a->head = b->next;
		free(b);
	}
	free(a);
}

static struct block *block_new(size_t cap)
{
	struct block *b;

	if (cap > SIZE_MAX - sizeof(*b))
		return NULL;
	b = malloc(sizeof(*b) + cap);
	if (b == NULL)
		return NULL;
	b->next = NULL;
	b->cap = cap;
	b->used = 0;
	return b;
}

void *fl_arena_alloc(struct fl_arena *a, size_t n)
{
	struct block *b = a->head;
	size_t need;
	void *p;

	if (n > SIZE_MAX - ARENA_ALIGN)
		return NULL;
	need = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (need == 0)
		need = ARENA_ALIGN;
	if (b == NULL || b->cap - b->used < need) {
		if (need > ARENA_BLOCK / 4) {
			/* A private block, linked behind the head so the head keeps
			 * serving small requests. */
			struct block *big = block_new(need);

			if (big == NULL)
				return NULL;
			big->used = need;
			if (b != NULL) {
				big->next = b->next;
				b->next = big;
			} else {
				a->head = big;
			}
			a->total += need;
			memset(big->data, 0, need);
			return big->data;
		}
		b = block_new(ARENA_BLOCK);
		if (b == NULL)
			return NULL;
		b->next = a->head;
		a->head = b;
	}
	p = b->data + b->used;
	b->used += need;
	a->total += need;
	memset(p, 0, need);
	return p;
}

char *fl_arena_strndup(struct fl_arena *a, const char *s, size_t n)
{
	char *p;

	if (n == SIZE_MAX)
		return NULL;
	p = fl_arena_alloc(a, n + 1);
	if (p == NULL)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *fl_arena_strdup(struct fl_arena *a, const char *s)
{
	return fl_arena_strndup(a, s, strlen(s));
}

char *fl_arena_printf(struct fl_arena *a, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *p;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	p = fl_arena_alloc(a, (size_t)n + 1);
	if (p == NULL)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

int fl_arena_defer(struct fl_arena *a, void (*fn)(void *), void *p)
{
	struct defer *d = malloc(sizeof(*d));

	if (d == NULL) {
		fn(p);
		return -1;
	}
	d->fn = fn;
	d->p = p;
	d->next = a->defers;
	a->defers = d;
	return 0;
}

size_t fl_arena_used(const struct fl_arena *a)
{
	return a->total;
}
