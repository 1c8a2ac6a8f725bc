/* buf.h - a growable byte buffer, always NUL-terminated.
 *
 * Appends return -1 when out of memory and leave the contents as they were.
 * Not thread-safe. */
#ifndef FL_BUF_H
#define FL_BUF_H

#include <stddef.h>

#include "err.h"

struct fl_buf {
	char *data; /* NUL-terminated when len > 0 or after any append */
	size_t len;
	size_t cap;
};

#define FL_BUF_INIT        \
	{                  \
		NULL, 0, 0 \
	}

int fl_buf_reserve(struct fl_buf *b, size_t extra) FL_MUST_CHECK;
int fl_buf_append(struct fl_buf *b, const void *p, size_t n) FL_MUST_CHECK;
int fl_buf_puts(struct fl_buf *b, const char *s) FL_MUST_CHECK;
int fl_buf_printf(struct fl_buf *b, const char *fmt, ...) FL_PRINTF(2, 3) FL_MUST_CHECK;

/* Forgets the contents, keeps the memory. */
void fl_buf_reset(struct fl_buf *b);

/* Releases the memory; accepts a zeroed buffer. */
void fl_buf_free(struct fl_buf *b);

/* Hands the memory to the caller (free() it) and empties b. */
char *fl_buf_steal(struct fl_buf *b);

#endif
