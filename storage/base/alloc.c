/* alloc.c - routing storage allocations through an optional hook.
 *
 * Invariant: with a == NULL every call maps onto the C library, so the
 * default path costs one branch. */
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *st_malloc(const struct st_alloc *a, size_t n)
{
	if (n == 0)
		n = 1; /* a zero-size request must still yield a distinct pointer */
	if (a == NULL)
		return malloc(n);
	return a->fn(a->ctx, NULL, n);
}

void *st_calloc(const struct st_alloc *a, size_t count, size_t size)
{
	void *p;

	if (size != 0 && count > SIZE_MAX / size)
		return NULL;
	p = st_malloc(a, count * size);
	if (p != NULL)
		memset(p, 0, count * size);
	return p;
}

void *st_realloc(const struct st_alloc *a, void *p, size_t n)
{
	if (n == 0)
		n = 1;
	if (a == NULL)
		return realloc(p, n);
	return a->fn(a->ctx, p, n);
}

void st_free(const struct st_alloc *a, void *p)
{
	if (p == NULL)
		return;
	if (a == NULL)
		free(p);
	else
		a->fn(a->ctx, p, 0);
}

char *st_memdup(const struct st_alloc *a, const void *p, size_t n)
{
	char *q;

	if (n == SIZE_MAX)
		return NULL;
	q = st_malloc(a, n + 1);
	if (q == NULL)
		return NULL;
	if (n > 0)
		memcpy(q, p, n);
	q[n] = '\0';
	return q;
}

char *st_strdup(const struct st_alloc *a, const char *s)
{
	return st_memdup(a, s, strlen(s));
}

void *st_alloc_hook_zlib(void *opaque, unsigned items, unsigned size)
{
	if (size != 0 && items > SIZE_MAX / size)
		return NULL;
	return st_malloc(opaque, (size_t)items * size);
}

void *st_alloc_hook_zstd(void *opaque, size_t n)
{
	return st_malloc(opaque, n);
}

void st_alloc_hook_free(void *opaque, void *p)
{
	st_free(opaque, p);
}
