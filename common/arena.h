/* arena.h - a region allocator with deferred destructors.
 *
 * One arena lives for one request (or one job): everything allocated from it
 * and every destructor registered on it is released by fl_arena_free, in
 * reverse order of registration.  Not thread-safe; one owner at a time. */
#ifndef FL_ARENA_H
#define FL_ARENA_H

#include <stddef.h>

#include "err.h"

struct fl_arena;

/* Returns a new arena, or NULL when out of memory. */
struct fl_arena *fl_arena_new(void);

/* Runs the deferred destructors (last registered first) and releases every
 * block.  Accepts NULL. */
void fl_arena_free(struct fl_arena *a);

/* Returns n bytes aligned to 16, zeroed; NULL when out of memory (or n
 * overflows).  The memory lives until fl_arena_free. */
void *fl_arena_alloc(struct fl_arena *a, size_t n);

/* Copies the n bytes at s and appends a NUL; NULL when out of memory. */
char *fl_arena_strndup(struct fl_arena *a, const char *s, size_t n);
char *fl_arena_strdup(struct fl_arena *a, const char *s);

/* printf into arena memory; NULL when out of memory. */
char *fl_arena_printf(struct fl_arena *a, const char *fmt, ...) FL_PRINTF(2, 3);

/* Registers fn(p) to run at fl_arena_free.  Returns -1 (and runs fn(p)
 * immediately, so nothing leaks) when out of memory. */
int fl_arena_defer(struct fl_arena *a, void (*fn)(void *), void *p);

/* Bytes handed out so far, for limits and metrics. */
size_t fl_arena_used(const struct fl_arena *a);

#endif
