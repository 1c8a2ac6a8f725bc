/* buf.c - growable byte buffer and varints.
 *
 * Invariant: data is NULL exactly when cap is 0; len <= cap.  Capacity at
 * least doubles, so n appends cost O(n) copies. */
#include "buf.h"

#include <string.h>

void st_buf_init(struct st_buf *b, const struct st_alloc *alloc)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->alloc = alloc;
}

int st_buf_grow(struct st_buf *b, size_t extra)
{
	size_t need, cap;
	uint8_t *p;

	if (extra > SIZE_MAX - b->len)
		return -1;
	need = b->len + extra;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = st_realloc(b->alloc, b->data, cap);
	if (p == NULL)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

int st_buf_put_le32(struct st_buf *b, uint32_t v)
{
	uint8_t x[4];

	for (int i = 0; i < 4; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	return st_buf_append(b, x, sizeof(x));
}

int st_buf_put_le64(struct st_buf *b, uint64_t v)
{
	uint8_t x[8];

	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	return st_buf_append(b, x, sizeof(x));
}

int st_buf_put_uvarint(struct st_buf *b, uint64_t v)
{
	uint8_t x[10];
	size_t n = 0;

	while (v >= 0x80) {
		x[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	x[n++] = (uint8_t)v;
	return st_buf_append(b, x, n);
}

uint64_t st_zigzag_encode(int64_t v)
{
	/* Shift as unsigned: left-shifting a negative value is undefined. */
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

int64_t st_zigzag_decode(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

size_t st_uvarint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

int st_buf_put_zigzag(struct st_buf *b, int64_t v)
{
	return st_buf_put_uvarint(b, st_zigzag_encode(v));
}

void st_buf_reset(struct st_buf *b)
{
	b->len = 0;
}

void st_buf_free(struct st_buf *b)
{
	st_free(b->alloc, b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
