/* avro.h - Avro object-container-file writer (Avro 1.11 spec, "Object
 * Container Files") with a datum encoder for the types Iceberg manifests use.
 *
 * Why hand-written: avro-c cannot put arbitrary keys in the file header and
 * re-serialises the schema without "field-id"/"element-id" attributes, and
 * Iceberg readers need both.  This writer keeps the caller's schema JSON
 * byte for byte under "avro.schema".
 *
 * The datum calls (st_avro_write_*) do not know the schema: the caller emits
 * the fields of each record in schema order, then calls
 * st_avro_writer_end_record.  They return nothing because an encoder writes
 * many small fields per record; like ferror(3), the first failure is
 * remembered and reported by the next end_record or close, and nothing
 * reaches the sink after it.  A writer is used by one thread at a time. */
#ifndef ST_AVRO_H
#define ST_AVRO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/sink.h"
#include "err.h"

enum st_avro_codec {
	ST_AVRO_CODEC_NULL, /* blocks stored as encoded */
	ST_AVRO_CODEC_DEFLATE, /* each block raw RFC 1951 deflate, no zlib header */
};

/* One file-header metadata entry; value is len bytes (need not be text). */
struct st_avro_meta {
	const char *key;
	const void *value;
	size_t len;
};

struct st_avro_writer_opts {
	const char *schema_json; /* written verbatim under avro.schema; required */
	enum st_avro_codec codec;
	const struct st_avro_meta *meta; /* extra header keys; "avro." keys refused */
	size_t n_meta;
	size_t block_bytes; /* flush a block past this many datum bytes; 0: 64 KiB */
	const uint8_t *sync; /* 16-byte sync marker, or NULL for random bytes */
	int deflate_level; /* zlib level for DEFLATE; 0 means Z_DEFAULT_COMPRESSION */
	struct st_sink sink; /* receives the header at open, blocks as they fill */
	const struct st_alloc *alloc; /* NULL: the C library */
};

struct st_avro_writer;

/* Writes the header to opts->sink and returns a writer in *out.  Fails with
 * FL_ERR_BAD_REQUEST for a missing schema or a reserved key, FL_ERR_NOMEM,
 * or the sink's error; *out is untouched on failure.  opts->meta may be
 * released after this returns; opts->sink must outlive the writer. */
int st_avro_writer_open(const struct st_avro_writer_opts *opts, struct st_avro_writer **out,
                        struct fl_err *err) FL_MUST_CHECK;

/* Datum encoding (Avro spec "Binary Encoding").  null encodes as nothing. */
void st_avro_write_int(struct st_avro_writer *w, int32_t v); /* zig-zag varint */
void st_avro_write_long(struct st_avro_writer *w, int64_t v); /* zig-zag varint */
void st_avro_write_bool(struct st_avro_writer *w, bool v); /* one byte 0/1 */
void st_avro_write_float(struct st_avro_writer *w, float v); /* 4 bytes LE */
void st_avro_write_double(struct st_avro_writer *w, double v); /* 8 bytes LE */
void st_avro_write_bytes(struct st_avro_writer *w, const void *p, size_t n); /* long len + bytes */
void st_avro_write_string(struct st_avro_writer *w, const char *s); /* as bytes, UTF-8 */
void st_avro_write_fixed(struct st_avro_writer *w, const void *p, size_t n); /* bytes only */

/* A union value: the zero-based branch index, then (unless the branch is
 * null) the value itself. */
void st_avro_write_union(struct st_avro_writer *w, int branch);

/* Arrays and maps are a sequence of blocks, each a count followed by that
 * many items (maps: string key then value), ending with a zero count.
 * array_start(n) writes the one block header for n items (nothing when n
 * is 0); array_end writes the terminating 0.  Maps use the same calls. */
void st_avro_write_array_start(struct st_avro_writer *w, size_t n);
void st_avro_write_array_end(struct st_avro_writer *w);

/* Marks the end of one top-level datum; flushes a block to the sink when
 * the block is full.  Reports the first failure since the last call. */
int st_avro_writer_end_record(struct st_avro_writer *w, struct fl_err *err) FL_MUST_CHECK;

/* Flushes the last block and frees the writer, whatever the outcome.
 * *bytes (if not NULL) receives the file length on success. */
int st_avro_writer_close(struct st_avro_writer *w, uint64_t *bytes,
                         struct fl_err *err) FL_MUST_CHECK;

/* Frees a writer without flushing (after a failure); accepts NULL. */
void st_avro_writer_free(struct st_avro_writer *w);

#endif
