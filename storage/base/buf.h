/* buf.h - a growable byte buffer drawing from a struct st_alloc, plus the
 * variable-length integer encodings the file formats share.
 *
 * Unlike common/buf.h it routes every allocation through the writer's
 * allocator, so allocation-failure tests reach it.  Appends return -1 when
 * out of memory and leave the contents as they were.  Not thread-safe. */
#ifndef ST_BUF_H
#define ST_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "err.h"

struct st_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	const struct st_alloc *alloc; /* NULL: the C library */
};

/* Prepares an empty buffer; allocates nothing. */
void st_buf_init(struct st_buf *b, const struct st_alloc *alloc);

/* Grows the buffer to hold extra more bytes: the slow path of
 * st_buf_reserve, out of line. */
int st_buf_grow(struct st_buf *b, size_t extra) FL_MUST_CHECK;

/* Makes room for extra more bytes.  The appends below are inline: the
 * Parquet and CSV writers call them once per value, and the call, not the
 * copy, was their cost. */
static inline FL_MUST_CHECK int st_buf_reserve(struct st_buf *b, size_t extra)
{
	return extra <= b->cap - b->len ? 0 : st_buf_grow(b, extra);
}

static inline FL_MUST_CHECK int st_buf_append(struct st_buf *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (st_buf_reserve(b, n) != 0)
		return -1;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

static inline FL_MUST_CHECK int st_buf_put_u8(struct st_buf *b, uint8_t v)
{
	if (st_buf_reserve(b, 1) != 0)
		return -1;
	b->data[b->len++] = v;
	return 0;
}

int st_buf_put_le32(struct st_buf *b, uint32_t v) FL_MUST_CHECK;
int st_buf_put_le64(struct st_buf *b, uint64_t v) FL_MUST_CHECK;

/* Unsigned LEB128 varint (7 bits a byte, low group first, high bit = more):
 * the integer encoding of both Avro and Thrift compact. */
int st_buf_put_uvarint(struct st_buf *b, uint64_t v) FL_MUST_CHECK;

/* Zig-zag then varint: (v << 1) ^ (v >> 63), so small magnitudes of either
 * sign stay short.  Avro int/long and Thrift i16/i32/i64 use it. */
int st_buf_put_zigzag(struct st_buf *b, int64_t v) FL_MUST_CHECK;

/* Pure helpers: the zig-zag mapping and the varint length, for tests and
 * size estimates. */
uint64_t st_zigzag_encode(int64_t v);
int64_t st_zigzag_decode(uint64_t v);
size_t st_uvarint_len(uint64_t v);

/* Forgets the contents, keeps the memory. */
void st_buf_reset(struct st_buf *b);

/* Releases the memory; accepts a zeroed or initialised buffer. */
void st_buf_free(struct st_buf *b);

#endif
