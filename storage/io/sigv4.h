/* sigv4.h - AWS Signature Version 4 (header signing), computed with
 * OpenSSL.
 *
 * Floe signs its own S3 requests with it (libcurl 7.88's CURLOPT_AWS_SIGV4
 * re-encodes percent-escapes in the query, so "prefix=a%2F" is signed as
 * something S3 does not compute), and the remote-signing endpoints sign for
 * clients with it.  Reference: AWS "Signature Version 4 signing process"
 * (create canonical request, string to sign, signing key, signature).
 * Pure functions; thread-safe. */
#ifndef ST_SIGV4_H
#define ST_SIGV4_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

struct st_sigv4_header {
	const char *name; /* any case; signed lower-cased */
	const char *value; /* trimmed when signed */
};

struct st_sigv4_req {
	const char *method; /* "GET", "PUT", … */
	const char *path; /* canonical URI: already URI-encoded, starts with '/' */
	const char *query; /* canonical query: encoded pairs sorted by key, or "" */
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
};

/* Appends the Authorization header value ("AWS4-HMAC-SHA256
 * Credential=…, SignedHeaders=…, Signature=…") to out.  FL_ERR_NOMEM, or
 * FL_ERR_BAD_REQUEST for more than 32 headers or a date that is not
 * YYYYMMDDTHHMMSSZ. */
int st_sigv4_authorization(const struct st_sigv4_req *r, struct fl_buf *out,
                           struct fl_err *err) FL_MUST_CHECK;

/* The x-amz-date value for t (seconds since the epoch, UTC) into out[17]. */
void st_sigv4_date(int64_t t, char out[17]);

/* Lower-case hex SHA-256 of n bytes into out[65]. */
void st_sigv4_sha256_hex(const void *p, size_t n, char out[65]);

/* Appends s (len bytes) URI-encoded the SigV4 way: every byte outside
 * A-Z a-z 0-9 - . _ ~ becomes %XX (upper-case hex); '/' is kept when
 * keep_slash (object keys in paths) and encoded otherwise (query values). */
int st_sigv4_encode(struct fl_buf *out, const char *s, size_t len, int keep_slash) FL_MUST_CHECK;

#endif
