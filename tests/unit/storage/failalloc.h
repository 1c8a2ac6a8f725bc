/* failalloc.h - an allocator hook for storage/ tests that fails the n-th
 * allocation and counts live blocks, so a test can check that every
 * failure path reports an error and releases everything; and a sink that
 * fails past a byte budget. */
#ifndef TEST_FAILALLOC_H
#define TEST_FAILALLOC_H

#include <stdbool.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "err.h"

struct failalloc {
	long calls; /* allocations and resizes so far */
	long fail_at; /* 1-based call to fail; 0 never */
	long live; /* blocks not yet freed */
	bool failed; /* fail_at was reached */
	struct st_alloc alloc;
};

static void *failalloc_fn(void *ctx, void *p, size_t n)
{
	struct failalloc *f = ctx;
	void *q;

	if (n == 0) {
		if (p != NULL) {
			free(p);
			f->live--;
		}
		return NULL;
	}
	f->calls++;
	if (f->fail_at > 0 && f->calls == f->fail_at) {
		f->failed = true;
		return NULL;
	}
	q = realloc(p, n);
	if (q != NULL && p == NULL)
		f->live++;
	return q;
}

/* A sink (st_sink.write) that takes `budget` bytes, then fails with
 * FL_ERR_IO "disk full". */
struct failing_sink {
	size_t budget;
};

static inline int failing_write(void *ctx, const void *p, size_t n, struct fl_err *err)
{
	struct failing_sink *s = ctx;

	(void)p;
	if (n > s->budget)
		return fl_err_set(err, FL_ERR_IO, "disk full");
	s->budget -= n;
	return 0;
}

static inline void failalloc_init(struct failalloc *f, long fail_at)
{
	f->calls = 0;
	f->fail_at = fail_at;
	f->live = 0;
	f->failed = false;
	f->alloc.fn = failalloc_fn;
	f->alloc.ctx = f;
}

#endif
