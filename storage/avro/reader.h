/* reader.h - Avro object-container-file reader (Avro 1.11 spec, "Object
 * Container Files" and "Binary Encoding"), decoding every datum with the
 * writer's schema (the header's avro.schema) into jansson values.
 *
 * It exists so that storage/ can read manifest lists and manifests written
 * by any Iceberg writer (Java, PyIceberg, DuckDB, Floe) and carry them into
 * a new snapshot.  The input is a whole file in memory (read it with
 * st_io_read); the reader borrows it, and it must outlive the reader.
 *
 * Values (schema type -> jansson):
 *   null -> json null;  boolean -> true/false;  int, long -> json_integer;
 *   float, double -> json_real, except NaN and the infinities, which JSON
 *     cannot hold: they become the strings "NaN", "Infinity", "-Infinity";
 *   string -> json string (must be valid UTF-8, may contain NUL);
 *   bytes, fixed -> json string of the standard base64 alphabet with
 *     padding (RFC 4648 section 4); st_avro_base64_decode reverses it;
 *   enum -> the symbol's name as a json string;
 *   record -> json object keyed by field name, in schema order;
 *   array -> json array;  map -> json object (a repeated key: last wins);
 *   union -> the value of the chosen branch, not wrapped (Iceberg only uses
 *     ["null", T], where this is unambiguous).
 * Logical types are ignored: a date is its int, a decimal its bytes.
 *
 * Malformed input is FL_ERR_BAD_REQUEST naming the offset and the reason:
 * every length and count is checked against the bytes that remain, nesting
 * is bounded (opts.max_depth), each datum may produce at most
 * opts.max_values values, and an inflated block at most opts.max_block_bytes.
 * Codecs: "null" and "deflate" (raw RFC 1951); others are
 * FL_ERR_UNSUPPORTED.  A reader is used by one thread at a time. */
#ifndef ST_AVRO_READER_H
#define ST_AVRO_READER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "err.h"

struct st_avro_reader_opts {
	int max_depth; /* nesting of schema and datums; 0: 64 */
	size_t max_values; /* jansson values per datum; 0: 4 Mi */
	size_t max_block_bytes; /* an inflated block; 0: 64 MiB */
	const struct st_alloc *alloc; /* the reader's own memory; NULL: the C library */
};

struct st_avro_reader;

/* Parses the header (magic, metadata map, sync marker) and compiles the
 * schema in avro.schema.  opts may be NULL for the defaults.  Fails with
 * FL_ERR_BAD_REQUEST (not an Avro file, truncated header, bad schema),
 * FL_ERR_UNSUPPORTED (codec) or FL_ERR_NOMEM; *out untouched on failure.
 * data must stay valid and unchanged until st_avro_reader_free. */
int st_avro_reader_open(const void *data, size_t len, const struct st_avro_reader_opts *opts,
                        struct st_avro_reader **out, struct fl_err *err) FL_MUST_CHECK;

/* Decodes the next datum into *out (a new reference the caller releases),
 * or sets *out to NULL at the end of the file.  After a failure the reader
 * stays failed: later calls report the same error. */
int st_avro_reader_next(struct st_avro_reader *r, json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* The header metadata: number of entries, and entry i (key NUL-terminated,
 * value len bytes, not terminated; both owned by the reader).  The entries
 * include avro.schema and avro.codec. */
size_t st_avro_reader_meta_count(const struct st_avro_reader *r);
void st_avro_reader_meta_at(const struct st_avro_reader *r, size_t i, const char **key,
                            const uint8_t **value, size_t *len);

/* The value of header key `key`, or NULL when absent (then *len is 0). */
const uint8_t *st_avro_reader_meta_get(const struct st_avro_reader *r, const char *key,
                                       size_t *len);

/* The writer's schema as parsed JSON, borrowed from the reader. */
const json_t *st_avro_reader_schema(const struct st_avro_reader *r);

/* Frees the reader; accepts NULL.  Datums already returned stay valid. */
void st_avro_reader_free(struct st_avro_reader *r);

struct st_io;

/* Reads the object at uri (at most max bytes) through io and decodes all
 * its datums into *out, a new JSON array (opts may be NULL).  Errors name
 * uri: the IO error (FL_ERR_NOT_FOUND, FL_ERR_TOO_LARGE, ...) or the
 * decoding error.  *out untouched on failure. */
int st_avro_read_all(struct st_io *io, const char *uri, size_t max,
                     const struct st_avro_reader_opts *opts, json_t **out,
                     struct fl_err *err) FL_MUST_CHECK;

/* Decodes the base64 text of a bytes/fixed value, appending to out.
 * FL_ERR_BAD_REQUEST for text this reader would not have produced
 * (wrong alphabet, padding or length); FL_ERR_NOMEM. */
int st_avro_base64_decode(const char *s, size_t n, struct st_buf *out,
                          struct fl_err *err) FL_MUST_CHECK;

#endif
