/* thrift.h - the Thrift compact protocol (apache/thrift
 * doc/specs/thrift-compact-protocol.md), enough for the Parquet footer and
 * page headers: an encoder for the writer and a bounded decoder for the
 * reader.
 *
 * Encoder: callers describe a struct field by field, in ascending field-id
 * order, and nest structs with begin/end.  Like the Avro datum calls, the
 * field calls return nothing: the first allocation failure is remembered in
 * `failed` and checked once when the message is complete.
 *
 * Decoder: callers loop over a struct's fields with st_thrift_field and
 * read or skip each value by the type the header announced.  Every length
 * and count is checked against the bytes that remain and nesting is
 * bounded, so a malformed message cannot read out of bounds or loop long;
 * the first problem is remembered in `why` and every later call is a no-op
 * returning zeros.  No state outside the structs; one thread at a time. */
#ifndef ST_THRIFT_H
#define ST_THRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Compact-protocol type codes (field headers and list element types). */
enum st_thrift_type {
	ST_THRIFT_BOOL_TRUE = 1,
	ST_THRIFT_BOOL_FALSE = 2,
	ST_THRIFT_BYTE = 3,
	ST_THRIFT_I16 = 4,
	ST_THRIFT_I32 = 5,
	ST_THRIFT_I64 = 6,
	ST_THRIFT_DOUBLE = 7,
	ST_THRIFT_BINARY = 8,
	ST_THRIFT_LIST = 9,
	ST_THRIFT_SET = 10,
	ST_THRIFT_MAP = 11,
	ST_THRIFT_STRUCT = 12,
};

#define ST_THRIFT_MAX_DEPTH 16

struct st_thrift {
	struct st_buf *out;
	int16_t last[ST_THRIFT_MAX_DEPTH]; /* last field id written, per open struct */
	int depth; /* open structs, the message itself included */
	bool failed; /* out of memory, or nesting too deep */
};

/* Starts a message (the outermost struct) appended to out. */
void st_thrift_init(struct st_thrift *t, struct st_buf *out);

void st_thrift_i32(struct st_thrift *t, int16_t id, int32_t v);
void st_thrift_i64(struct st_thrift *t, int16_t id, int64_t v);
void st_thrift_bool(struct st_thrift *t, int16_t id, bool v);
void st_thrift_binary(struct st_thrift *t, int16_t id, const void *p, size_t n);
void st_thrift_string(struct st_thrift *t, int16_t id, const char *s);

/* A struct-typed field: header now, its fields next, then st_thrift_end. */
void st_thrift_struct_begin(struct st_thrift *t, int16_t id);

/* Ends the innermost open struct (or the message) with the stop byte. */
void st_thrift_end(struct st_thrift *t);

/* A list field of n elements of elem type; then n elements follow, written
 * with st_thrift_elem_* (or, for structs, st_thrift_elem_struct_begin and
 * fields and st_thrift_end). */
void st_thrift_list_begin(struct st_thrift *t, int16_t id, enum st_thrift_type elem, size_t n);
void st_thrift_elem_i32(struct st_thrift *t, int32_t v);
void st_thrift_elem_i64(struct st_thrift *t, int64_t v);
void st_thrift_elem_binary(struct st_thrift *t, const void *p, size_t n);
void st_thrift_elem_struct_begin(struct st_thrift *t);

/* ---- decoder ---------------------------------------------------------- */

struct st_thrift_reader {
	const uint8_t *p, *end;
	const uint8_t *start;
	int16_t last[ST_THRIFT_MAX_DEPTH]; /* last field id read, per open struct */
	int depth; /* open structs, the message itself included */
	const char *why; /* the first problem, or NULL */
};

/* Starts reading a message (the outermost struct) from the n bytes at p. */
void st_thrift_reader_init(struct st_thrift_reader *r, const void *p, size_t n);

/* Reads the next field header of the innermost open struct into *id and
 * *type (for booleans the type carries the value: ST_THRIFT_BOOL_TRUE or
 * _FALSE).  At the struct's stop byte it closes the struct and returns
 * false; it also returns false once the reader has failed. */
bool st_thrift_field(struct st_thrift_reader *r, int16_t *id, uint8_t *type);

/* An integer of type BYTE, I16, I32 or I64 (also a list element of those
 * types); any other type fails the reader.  i32 also fails on values that
 * do not fit 32 bits. */
int64_t st_thrift_read_i64(struct st_thrift_reader *r, uint8_t type);
int32_t st_thrift_read_i32(struct st_thrift_reader *r, uint8_t type);

/* A boolean field's value (from its header type). */
bool st_thrift_read_bool(struct st_thrift_reader *r, uint8_t type);

/* A BINARY value: *p points into the message (not NUL-terminated). */
void st_thrift_read_binary(struct st_thrift_reader *r, uint8_t type, const uint8_t **p, size_t *n);

/* A LIST (or SET) header: returns the element count (0 on failure; at most
 * the bytes that remain) and the element type in *elem. */
size_t st_thrift_read_list(struct st_thrift_reader *r, uint8_t type, uint8_t *elem);

/* Opens a STRUCT-typed field or list element: its fields follow, read with
 * st_thrift_field until it returns false. */
void st_thrift_enter(struct st_thrift_reader *r, uint8_t type);

/* Skips a value of the given type, whatever it nests. */
void st_thrift_skip(struct st_thrift_reader *r, uint8_t type);

#endif
