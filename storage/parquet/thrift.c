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

/* ---- decoder ------------------------------------------------------------
 *
 * Reads the bytes described at the top of this file.  Invariants: p <= end;
 * once `why` is set nothing more is consumed and every value reads as 0. */

#define ST_THRIFT_UUID 13 /* 16 raw bytes; newer Thrift versions only */

void st_thrift_reader_init(struct st_thrift_reader *r, const void *p, size_t n)
{
	memset(r, 0, sizeof(*r));
	r->start = p;
	r->p = p;
	r->end = r->p + n;
	r->depth = 1;
}

static void fail(struct st_thrift_reader *r, const char *why)
{
	if (r->why == NULL)
		r->why = why;
}

static uint64_t uvarint(struct st_thrift_reader *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (r->why != NULL)
			return 0;
		if (r->p >= r->end) {
			fail(r, "truncated varint");
			return 0;
		}
		b = *r->p++;
		if (shift == 63 && b > 1) {
			fail(r, "varint overflows 64 bits");
			return 0;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		if ((b & 0x80) == 0)
			return v;
	}
	fail(r, "varint longer than 10 bytes");
	return 0;
}

bool st_thrift_field(struct st_thrift_reader *r, int16_t *id, uint8_t *type)
{
	uint8_t b;
	int64_t fid;

	*id = 0;
	*type = 0;
	if (r->why != NULL)
		return false;
	if (r->depth == 0) {
		fail(r, "read past the end of the message");
		return false;
	}
	if (r->p >= r->end) {
		fail(r, "truncated struct");
		return false;
	}
	b = *r->p++;
	if (b == 0) {
		if (r->depth > 0)
			r->depth--;
		return false;
	}
	if ((b >> 4) != 0) {
		fid = r->last[r->depth - 1] + (b >> 4);
	} else {
		fid = st_zigzag_decode(uvarint(r));
	}
	if (r->why != NULL)
		return false;
	if (fid < INT16_MIN || fid > INT16_MAX) {
		fail(r, "field id out of range");
		return false;
	}
	r->last[r->depth - 1] = (int16_t)fid;
	*id = (int16_t)fid;
	*type = b & 0x0f;
	return true;
}

int64_t st_thrift_read_i64(struct st_thrift_reader *r, uint8_t type)
{
	switch (type) {
	case ST_THRIFT_BYTE:
		if (r->why != NULL)
			return 0;
		if (r->p >= r->end) {
			fail(r, "truncated byte");
			return 0;
		}
		return (int8_t)*r->p++;
	case ST_THRIFT_I16:
	case ST_THRIFT_I32:
	case ST_THRIFT_I64: return st_zigzag_decode(uvarint(r));
	default: fail(r, "an integer field has another type"); return 0;
	}
}

int32_t st_thrift_read_i32(struct st_thrift_reader *r, uint8_t type)
{
	int64_t v = st_thrift_read_i64(r, type);

	if (v < INT32_MIN || v > INT32_MAX) {
		fail(r, "an i32 field out of range");
		return 0;
	}
	return (int32_t)v;
}

bool st_thrift_read_bool(struct st_thrift_reader *r, uint8_t type)
{
	if (type != ST_THRIFT_BOOL_TRUE && type != ST_THRIFT_BOOL_FALSE) {
		fail(r, "a boolean field has another type");
		return false;
	}
	return type == ST_THRIFT_BOOL_TRUE;
}

void st_thrift_read_binary(struct st_thrift_reader *r, uint8_t type, const uint8_t **p, size_t *n)
{
	uint64_t len;

	*p = NULL;
	*n = 0;
	if (type != ST_THRIFT_BINARY) {
		fail(r, "a binary field has another type");
		return;
	}
	len = uvarint(r);
	if (r->why != NULL)
		return;
	if (len > (uint64_t)(r->end - r->p)) {
		fail(r, "binary length beyond the end");
		return;
	}
	*p = r->p;
	*n = (size_t)len;
	r->p += len;
}

size_t st_thrift_read_list(struct st_thrift_reader *r, uint8_t type, uint8_t *elem)
{
	uint64_t n;
	uint8_t b;

	*elem = 0;
	if (type != ST_THRIFT_LIST && type != ST_THRIFT_SET) {
		fail(r, "a list field has another type");
		return 0;
	}
	if (r->why != NULL)
		return 0;
	if (r->p >= r->end) {
		fail(r, "truncated list header");
		return 0;
	}
	b = *r->p++;
	n = b >> 4;
	if (n == 15)
		n = uvarint(r);
	if (r->why != NULL)
		return 0;
	/* Every element takes at least one byte. */
	if (n > (uint64_t)(r->end - r->p)) {
		fail(r, "list count beyond the end");
		return 0;
	}
	*elem = b & 0x0f;
	return (size_t)n;
}

void st_thrift_enter(struct st_thrift_reader *r, uint8_t type)
{
	if (type != ST_THRIFT_STRUCT) {
		fail(r, "a struct field has another type");
		return;
	}
	if (r->depth >= ST_THRIFT_MAX_DEPTH) {
		fail(r, "structs nested too deep");
		return;
	}
	r->last[r->depth++] = 0;
}

static void skip_bytes(struct st_thrift_reader *r, size_t n)
{
	if (r->why != NULL)
		return;
	if (n > (size_t)(r->end - r->p)) {
		fail(r, "truncated value");
		return;
	}
	r->p += n;
}

/* Skips a value; depth counts the values it is nested in, so that lists of
 * lists cannot recurse without bound either. */
static void skip(struct st_thrift_reader *r, uint8_t type, int depth)
{
	int16_t id;
	uint8_t t, elem;
	size_t n;

	if (r->why != NULL)
		return;
	if (depth >= ST_THRIFT_MAX_DEPTH) {
		fail(r, "values nested too deep");
		return;
	}
	switch (type) {
	case ST_THRIFT_BOOL_TRUE:
	case ST_THRIFT_BOOL_FALSE: /* in a field header: no payload */ break;
	case ST_THRIFT_BYTE: skip_bytes(r, 1); break;
	case ST_THRIFT_I16:
	case ST_THRIFT_I32:
	case ST_THRIFT_I64: (void)uvarint(r); break;
	case ST_THRIFT_DOUBLE: skip_bytes(r, 8); break;
	case ST_THRIFT_UUID: skip_bytes(r, 16); break;
	case ST_THRIFT_BINARY: {
		const uint8_t *p;

		st_thrift_read_binary(r, type, &p, &n);
		break;
	}
	case ST_THRIFT_LIST:
	case ST_THRIFT_SET:
		n = st_thrift_read_list(r, type, &elem);
		for (size_t i = 0; i < n && r->why == NULL; i++) {
			/* A boolean element is a whole byte. */
			if (elem == ST_THRIFT_BOOL_TRUE || elem == ST_THRIFT_BOOL_FALSE)
				skip_bytes(r, 1);
			else
				skip(r, elem, depth + 1);
		}
		break;
	case ST_THRIFT_MAP: {
		uint64_t count = uvarint(r);
		uint8_t kv = 0;

		if (count == 0 || r->why != NULL)
			break;
		if (count > (uint64_t)(r->end - r->p) / 2) {
			fail(r, "map count beyond the end");
			break;
		}
		skip_bytes(r, 1);
		if (r->why == NULL)
			kv = r->p[-1];
		for (uint64_t i = 0; i < count && r->why == NULL; i++) {
			for (int k = 0; k < 2; k++) {
				uint8_t et = k == 0 ? kv >> 4 : kv & 0x0f;

				if (et == ST_THRIFT_BOOL_TRUE || et == ST_THRIFT_BOOL_FALSE)
					skip_bytes(r, 1);
				else
					skip(r, et, depth + 1);
			}
		}
		break;
	}
	case ST_THRIFT_STRUCT: {
		int open = r->depth;

		st_thrift_enter(r, type);
		while (r->why == NULL && r->depth > open && st_thrift_field(r, &id, &t))
			skip(r, t, depth + 1);
		break;
	}
	default: fail(r, "unknown value type"); break;
	}
}

void st_thrift_skip(struct st_thrift_reader *r, uint8_t type)
{
	skip(r, type, 0);
}
