/* source.h - where a feed reader's bytes come from.
 *
 * The mirror of base/sink.h: a reader pulls its input front to back through
 * one read callback, so a local file, a memory buffer or (later) an
 * object-store download look the same to the CSV and NDJSON readers.  A
 * source is a value the caller owns; the readers never close or free it. */
#ifndef ST_FEED_SOURCE_H
#define ST_FEED_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct st_source {
	/* Reads up to cap (> 0) bytes into p and sets *got; *got == 0 means end
	 * of input.  Fails with err set (FL_ERR_IO naming the source). */
	int (*read)(void *ctx, void *p, size_t cap, size_t *got, struct fl_err *err);
	void *ctx;
};

/* A source over n bytes at p, which must outlive it. */
struct st_mem_source {
	struct st_source source;
	const uint8_t *p;
	size_t len;
	size_t pos;
};

/* Prepares m to read the n bytes at p; allocates nothing. */
void st_mem_source_init(struct st_mem_source *m, const void *p, size_t n);

/* A source reading an open file descriptor with read(2) (retrying EINTR);
 * the descriptor stays the caller's. */
struct st_fd_source {
	struct st_source source;
	int fd;
	const char *name; /* for messages; may be NULL */
	uint64_t bytes_read; /* so far, for progress reports */
};

/* Prepares f to read fd (bytes_read = 0); name (borrowed) appears in I/O
 * error messages. */
void st_fd_source_init(struct st_fd_source *f, int fd, const char *name);

#endif
