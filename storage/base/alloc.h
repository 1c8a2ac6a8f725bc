/* alloc.h - the allocator every storage object draws from.
 *
 * storage/ never aborts on out-of-memory: each allocation may fail and the
 * caller turns that into FL_ERR_NOMEM.  Writers take an optional
 * struct st_alloc so that tests can fail the n-th allocation and check that
 * nothing leaks; NULL means the C library.  The hook is a value passed in,
 * not a global, so two writers in one process never share it. */
#ifndef ST_ALLOC_H
#define ST_ALLOC_H

#include <stddef.h>

struct st_alloc {
	/* realloc-shaped: p == NULL allocates, n == 0 frees p and returns NULL,
	 * otherwise resizes.  Returns NULL on failure and leaves p valid. */
	void *(*fn)(void *ctx, void *p, size_t n);
	void *ctx;
};

/* Each returns NULL when out of memory (or when n * size overflows). */
void *st_malloc(const struct st_alloc *a, size_t n);
void *st_calloc(const struct st_alloc *a, size_t count, size_t size);
void *st_realloc(const struct st_alloc *a, void *p, size_t n);

/* Releases p; accepts NULL. */
void st_free(const struct st_alloc *a, void *p);

/* Copies n bytes of p into new memory with a trailing NUL; NULL on failure. */
char *st_memdup(const struct st_alloc *a, const void *p, size_t n);
char *st_strdup(const struct st_alloc *a, const char *s);

/* The allocator as the hooks zlib (zalloc / zfree) and zstd
 * (ZSTD_customMem) call: opaque is the const struct st_alloc * (NULL: the C
 * library).  The zlib one refuses an items * size that overflows. */
void *st_alloc_hook_zlib(void *opaque, unsigned items, unsigned size);
void *st_alloc_hook_zstd(void *opaque, size_t n);
void st_alloc_hook_free(void *opaque, void *p);

#endif
