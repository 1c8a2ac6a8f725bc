/* sigv4.h - AWS Signature Version 4 (header signing), computed with
 * OpenSSL.
 *
 * Floe signs its own S3 requests with it (libcurl 7.88's CURLOPT_AWS_SIGV4
 * re-encodes percent-escapes in the query, so "prefix=a%2F" is signed as
 * something S3 does not compute), its calls to STS, and requests the
 * remote-signing endpoints sign for clients.  Reference: AWS "Create a
 * signed AWS API request" (canonical request, string to sign, signing key,
 * signature); tests reproduce AWS's published test-suite vectors and S3
 * examples.  Pure functions; thread-safe. */
#ifndef ST_SIGV4_H
#define ST_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

/* Bounds on what a request to sign may carry. */
#define ST_SIGV4_MAX_HEADERS 64
#define ST_SIGV4_MAX_QUERY_PARAMS 64

/* The SHA-256 of an empty payload. */
#define ST_SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct st_sigv4_header {
	const char *name; /* any case; signed lower-cased; repeated names are joined in order */
	const char *value; /* trimmed, inner runs of spaces collapsed, when signed */
};

struct st_sigv4_req {
	const char *method; /* "GET", "PUT", … */
	/* The path as sent, percent-encoded, starting with '/' ("" = "/").  S3
	 * signs it as is; with normalize_path (every other service) dot and
	 * empty segments are removed and each segment is encoded again. */
	const char *path;
	/* The query as sent (after '?'), NULL or "" for none.  Canonicalised
	 * here: each name and value decoded and re-encoded, pairs sorted. */
	const char *query;
	/* Every header that is signed, including host, x-amz-date and
	 * x-amz-content-sha256 (order does not matter). */
	const struct st_sigv4_header *headers;
	size_t n_headers;
	const char *payload_hash; /* hex SHA-256 of the body, or "UNSIGNED-PAYLOAD" */
	const char *region;
	const char *service; /* "s3", "sts" */
	const char *amz_date; /* "20130524T000000Z", the x-amz-date header's value */
	const char *access_key_id;
	const char *secret_access_key;
	bool normalize_path; /* false for S3 */
};

/* Appends the Authorization header value ("AWS4-HMAC-SHA256
 * Credential=…, SignedHeaders=…, Signature=…") to out.  FL_ERR_NOMEM;
 * FL_ERR_BAD_REQUEST for a malformed path, query, header (a line break in
 * a value) or a date that is not YYYYMMDDTHHMMSSZ; FL_ERR_TOO_LARGE past
 * the bounds above.  The secret never leaves this function. */
int st_sigv4_authorization(const struct st_sigv4_req *r, struct fl_buf *out,
                           struct fl_err *err) FL_MUST_CHECK;

/* The canonical request text and the ';'-joined signed header names
 * (appended to creq and signed_headers), for tests and diagnostics. */
int st_sigv4_canonical(const struct st_sigv4_req *r, struct fl_buf *creq,
                       struct fl_buf *signed_headers, struct fl_err *err) FL_MUST_CHECK;

/* The string to sign for a canonical request of n bytes. */
int st_sigv4_string_to_sign(const struct st_sigv4_req *r, const char *creq, size_t n,
                            struct fl_buf *out, struct fl_err *err) FL_MUST_CHECK;

/* The x-amz-date value for t (seconds since the epoch, UTC) into out[17]. */
void st_sigv4_date(int64_t t, char out[17]);

/* Lower-case hex SHA-256 of n bytes into out[65]. */
void st_sigv4_sha256_hex(const void *p, size_t n, char out[65]);

/* Appends s (len bytes) URI-encoded the SigV4 way: every byte outside
 * A-Z a-z 0-9 - . _ ~ becomes %XX (upper-case hex); '/' is kept when
 * keep_slash (object keys in paths) and encoded otherwise (query values). */
int st_sigv4_encode(struct fl_buf *out, const char *s, size_t len, int keep_slash) FL_MUST_CHECK;

#endif
