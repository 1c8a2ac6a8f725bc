/* thrift.h - a write-only Thrift compact-protocol encoder, enough for the
 * Parquet footer and page headers (apache/thrift
 * doc/specs/thrift-compact-protocol.md).
 *
 * Callers describe a struct field by field, in ascending field-id order,
 * and nest structs with begin/end.  Like the Avro datum calls, the field
 * calls return nothing: the first allocation failure is remembered in
 * `failed` and checked once when the message is complete.  No state
 * outside the struct; one thread at a time. */
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

#endif
