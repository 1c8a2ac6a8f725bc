/* thrift.c - Thrift compact protocol, write side.
 *
 * Bytes produced (thrift-compact-protocol.md):
 *   field header   (delta << 4) | type when 0 < delta <= 15, where delta is
 *                  the id minus the previous field id of the same struct;
 *                  otherwise the type byte then the id as a zig-zag varint
 *   bool field     no payload: the type nibble is 1 (true) or 2 (false)
 *   i16/i32/i64    zig-zag varint
 *   binary/string  unsigned varint length, then the bytes
 *   list           (size << 4) | elem type when size < 15, else
 *                  0xf0 | elem type then the size as an unsigned varint
 *   struct end     one 0x00 (stop) byte
 *
 * Invariant: last[depth - 1] is the previous field id of the innermost open
 * struct; a new struct starts at 0. */
#include "thrift.h"

#include <string.h>

static void put(struct st_thrift *t, int rc)
{
	if (rc != 0)
		t->failed = true;
}

void st_thrift_init(struct st_thrift *t, struct st_buf *out)
{
	memset(t, 0, sizeof(*t));
	t->out = out;
	t->depth = 1;
}

static void field_header(struct st_thrift *t, int16_t id, enum st_thrift_type type)
{
	int16_t *last = &t->last[t->depth - 1];
	int delta = id - *last;

	if (delta > 0 && delta <= 15) {
		put(t, st_buf_put_u8(t->out, (uint8_t)((delta << 4) | type)));
	} else {
		put(t, st_buf_put_u8(t->out, (uint8_t)type));
		put(t, st_buf_put_zigzag(t->out, id));
	}
	*last = id;
}

void st_thrift_i32(struct st_thrift *t, int16_t id, int32_t v)
{
	field_header(t, id, ST_THRIFT_I32);
	put(t, st_buf_put_zigzag(t->out, v));
}

void st_thrift_i64(struct st_thrift *t, int16_t id, int64_t v)
{
	field_header(t, id, ST_THRIFT_I64);
	put(t, st_buf_put_zigzag(t->out, v));
}

void st_thrift_bool(struct st_thrift *t, int16_t id, bool v)
{
	field_header(t, id, v ? ST_THRIFT_BOOL_TRUE : ST_THRIFT_BOOL_FALSE);
}

void st_thrift_elem_binary(struct st_thrift *t, const void *p, size_t n)
{
	put(t, st_buf_put_uvarint(t->out, n));
	put(t, st_buf_append(t->out, p, n));
}

void st_thrift_binary(struct st_thrift *t, int16_t id, const void *p, size_t n)
{
	field_header(t, id, ST_THRIFT_BINARY);
	st_thrift_elem_binary(t, p, n);
}

void st_thrift_string(struct st_thrift *t, int16_t id, const char *s)
{
	st_thrift_binary(t, id, s, strlen(s));
}

static void push(struct st_thrift *t)
{
	if (t->depth >= ST_THRIFT_MAX_DEPTH) {
		t->failed = true;
		return;
	}
	t->last[t->depth++] = 0;
}

void st_thrift_struct_begin(struct st_thrift *t, int16_t id)
{
	field_header(t, id, ST_THRIFT_STRUCT);
	push(t);
}

void st_thrift_elem_struct_begin(struct st_thrift *t)
{
	push(t);
}

void st_thrift_end(struct st_thrift *t)
{
	put(t, st_buf_put_u8(t->out, 0));
	if (t->depth > 0)
		t->depth--;
}

void st_thrift_list_begin(struct st_thrift *t, int16_t id, enum st_thrift_type elem, size_t n)
{
	field_header(t, id, ST_THRIFT_LIST);
	if (n < 15) {
		put(t, st_buf_put_u8(t->out, (uint8_t)((n << 4) | elem)));
	} else {
		put(t, st_buf_put_u8(t->out, (uint8_t)(0xf0 | elem)));
		put(t, st_buf_put_uvarint(t->out, n));
	}
}

void st_thrift_elem_i32(struct st_thrift *t, int32_t v)
{
	put(t, st_buf_put_zigzag(t->out, v));
}

void st_thrift_elem_i64(struct st_thrift *t, int64_t v)
{
	put(t, st_buf_put_zigzag(t->out, v));
}
