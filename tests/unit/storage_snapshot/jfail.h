/* jfail.h - routes jansson's allocations through the same failalloc counter
 * as the storage allocator, so an allocation-failure loop reaches the JSON
 * values the reader and the snapshot builder create, and counts jansson's
 * live blocks as well.  jansson's allocator is process-wide: install it at
 * the start of a test and remove it before the test returns, with every
 * value created in between released. */
#ifndef TEST_JFAIL_H
#define TEST_JFAIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>

#include "failalloc.h"

static struct failalloc *jfail_fa;
static long jfail_live;
/* The failed call was jansson's.  jansson absorbs a few of its own
 * failures (json_dumps carries on without its loop-detection set), so a
 * test may see success after one of those, never after one of ours. */
static bool jfail_hit;
/* Inside json_loadb.  jansson 2.14's lexer ignores a failed append to its
 * token buffer (lex_save) and then reads past the shortened token: failing
 * an allocation there corrupts jansson's heap, whoever calls it.  The test
 * executables link with -Wl,--wrap=json_loadb so that the hook can leave
 * the lexer's allocations alone (they are still counted). */
static bool jfail_in_lexer;

json_t *__real_json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error);
json_t *__wrap_json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error);

json_t *__wrap_json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error)
{
	json_t *v;

	jfail_in_lexer = true;
	v = __real_json_loadb(buffer, buflen, flags, error);
	jfail_in_lexer = false;
	return v;
}

static void *jfail_malloc(size_t n)
{
	void *p;

	if (!jfail_in_lexer)
		jfail_fa->calls++;
	if (!jfail_in_lexer && jfail_fa->fail_at > 0 && jfail_fa->calls == jfail_fa->fail_at) {
		jfail_fa->failed = true;
		jfail_hit = true;
		return NULL;
	}
	p = malloc(n);
	if (p != NULL)
		jfail_live++;
	return p;
}

static void jfail_free(void *p)
{
	if (p != NULL) {
		jfail_live--;
		free(p);
	}
}

static inline void jfail_install(struct failalloc *fa)
{
	jfail_fa = fa;
	jfail_live = 0;
	jfail_hit = false;
	json_set_alloc_funcs(jfail_malloc, jfail_free);
}

static inline void jfail_remove(void)
{
	json_set_alloc_funcs(malloc, free);
}

#endif
