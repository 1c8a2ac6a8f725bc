/* s3_int.h - the pure parts of the S3 backend (s3util.c), apart from the
 * transport in s3.c so that unit tests reach them: addressing, the small
 * XML scanner, error mapping and retry policy. */
#ifndef ST_S3_INT_H
#define ST_S3_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "profile.h"

/* Where a request for bucket/key (key raw, may be "") goes.  query is the
 * canonical query ("" or encoded pairs sorted by key).  Fills url (the full
 * URL), path (the canonical URI, which is the URL's path) and host (the
 * Host header value).  Path style: endpoint/bucket/key; virtual host:
 * scheme://bucket.host/key.  No endpoint: https://s3.REGION.amazonaws.com. */
int st_s3_target(const struct st_profile *p, const char *bucket, const char *key, const char *query,
                 struct fl_buf *url, struct fl_buf *path, char *host, size_t host_cap,
                 struct fl_err *err) FL_MUST_CHECK;

/* Finds the first element <tag>…</tag> in the n bytes at s (an element
 * with attributes, <tag a="…">, counts; a self-closing <tag/> is empty).
 * Returns a pointer just past the element and sets *val / *vlen to its
 * raw content, or NULL when there is none.  Never reads past s + n. */
const char *st_xml_next(const char *s, size_t n, const char *tag, const char **val, size_t *vlen);

/* Appends the n bytes at s with the five XML entities and numeric
 * character references (&#N; &#xH;) decoded.  -1 on an unknown or
 * malformed entity or out of memory. */
int st_xml_unescape(struct fl_buf *out, const char *s, size_t n) FL_MUST_CHECK;

/* Appends s with & < > " ' escaped. */
int st_xml_escape(struct fl_buf *out, const char *s) FL_MUST_CHECK;

/* What st_s3_list_parse reports of each object: its key (unescaped,
 * NUL-terminated), size and LastModified in ms since the epoch. */
typedef int (*st_s3_entry_fn)(void *arg, const char *key, uint64_t size, int64_t mtime_ms,
                              struct fl_err *err);

/* The objects of one ListObjectsV2 answer (n bytes of XML at xml), fn for
 * each in order; *next is the continuation token (malloc'd) when the
 * answer is truncated, else NULL.  FL_ERR_IO for a malformed entry, a key
 * with an unknown entity or a NUL byte (which would end it early and name
 * another object), or a truncated answer without a token; fn's error as
 * it is.  On failure *next is NULL. */
int st_s3_list_parse(const char *xml, size_t n, st_s3_entry_fn fn, void *arg, char **next,
                     struct fl_err *err) FL_MUST_CHECK;

/* The error kind for an S3 answer: status and the <Code> of its error
 * body ("" when none). */
enum fl_err_kind st_s3_error_kind(long status, const char *code);

/* A sentence a user can act on for well-known codes, or NULL. */
const char *st_s3_error_hint(const char *code);

/* Whether a failed attempt may be retried: transport errors that mean the
 * connection broke or never formed (curl_code is a CURLcode, 0 = none),
 * 500/502/503/504, and the throttling and internal-error codes that S3
 * also returns inside 200 answers.  Never a 4xx. */
bool st_s3_retryable(int curl_code, long status, const char *code);

/* Milliseconds to wait before retry number attempt (0-based): "full
 * jitter" over an exponential cap, 100 ms × 2^attempt bounded by 5 s; rnd
 * is a uniformly random 32-bit value. */
long st_s3_backoff_ms(int attempt, uint32_t rnd);

#endif
