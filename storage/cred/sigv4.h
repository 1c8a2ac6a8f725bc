/* sigv4.h - AWS Signature Version 4 (HMAC-SHA256) on OpenSSL.
 *
 * Used where Floe signs requests itself: its calls to STS, and requests it
 * signs on behalf of clients (remote signing).  The steps follow AWS's
 * "Create a signed AWS API request": canonical request, string to sign,
 * signing key derived from the secret, date, region and service.  Pure and
 * thread-safe; nothing here performs IO. */
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

struct st_sigv4_header {
	const char *name; /* any case; repeated names are joined in order */
	const char *value;
};

struct st_sigv4_creds {
	const char *access_key_id;
	const char *secret_access_key;
	const char *session_token; /* NULL for long-term keys */
};

struct st_sigv4_req {
	const char *method;
	const char *path; /* as sent on the wire (percent-encoded), "" means "/" */
	const char *query; /* raw query after '?', or NULL */
	const struct st_sigv4_header *headers; /* every header to sign, host included */
	size_t nheaders;
	const char *payload_hash; /* lowercase hex SHA-256 of the body, or UNSIGNED-PAYLOAD */
	/* S3 rules: the path is used as sent (encoded once, no dot-segment
	 * removal).  Other services normalise the path and encode it again. */
	bool s3;
};

/* The canonical request text and the ';'-joined signed header names.
 * FL_ERR_BAD_REQUEST for a malformed path or query, FL_ERR_TOO_LARGE past
 * the bounds above; out-buffers are appended to. */
int st_sigv4_canonical(const struct st_sigv4_req *req, struct fl_buf *creq,
                       struct fl_buf *signed_headers, struct fl_err *err) FL_MUST_CHECK;

/* The string to sign for a canonical request: algorithm, amz_date
 * ("20150830T123600Z"), the credential scope and the canonical request's
 * hash. */
int st_sigv4_string_to_sign(const char *creq, size_t n, const char *amz_date, const char *region,
                            const char *service, struct fl_buf *out,
                            struct fl_err *err) FL_MUST_CHECK;

/* The Authorization header value ("AWS4-HMAC-SHA256 Credential=…,
 * SignedHeaders=…, Signature=…") for req signed at amz_date.  The caller has
 * put x-amz-date (and x-amz-security-token when creds carry one) among the
 * headers; the secret never leaves this function. */
int st_sigv4_authorization(const struct st_sigv4_req *req, const struct st_sigv4_creds *creds,
                           const char *region, const char *service, const char *amz_date,
                           struct fl_buf *out, struct fl_err *err) FL_MUST_CHECK;

/* ms since the epoch as the basic ISO-8601 form SigV4 uses. */
void st_sigv4_amz_date(int64_t ms, char out[17]);

/* Lowercase hex SHA-256 of n bytes at p. */
void st_sha256_hex(const void *p, size_t n, char out[65]);

/* The hash of an empty payload. */
#define ST_SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

#endif
