/* sts.h - STS AssumeRole over libcurl, signed with io/sigv4.h.
 *
 * The catalog assumes the warehouse's role with an inline session policy
 * (policy.h) to vend credentials limited to one table.  One call per
 * request; no state, thread-safe (each call has its own curl handle).
 * Secrets are never put into error messages. */
#ifndef ST_STS_H
#define ST_STS_H

#include <stdint.h>

#include "err.h"
#include "io/profile.h"

struct st_sts_creds {
	char access_key_id[128];
	char secret_access_key[128];
	char session_token[4096];
	int64_t expires_at_ms; /* from <Expiration> */
};

struct st_sts_assume {
	const char *endpoint; /* "https://sts.amazonaws.com", "http://127.0.0.1:5055" */
	const char *region; /* signing region */
	const struct st_creds *creds; /* the server's own credentials */
	const char *role_arn;
	const char *session_name; /* 2-64 of [\w+=,.@-] */
	const char *external_id; /* NULL when none */
	const char *policy; /* inline session policy JSON, NULL when none */
	int64_t duration_s; /* 900 .. 43200 */
	int64_t timeout_s; /* whole call */
};

/* Calls AssumeRole and fills *out.  FL_ERR_UNAVAILABLE when STS cannot be
 * reached or answers 5xx; FL_ERR_FORBIDDEN when it denies the call (the
 * message carries STS's error code and message); FL_ERR_BAD_REQUEST for
 * bad arguments; FL_ERR_INTERNAL for a response that cannot be read.
 * *out is untouched on failure. */
int st_sts_assume_role(const struct st_sts_assume *a, struct st_sts_creds *out,
                       struct fl_err *err) FL_MUST_CHECK;

/* Reads an AssumeRoleResponse (or an ErrorResponse, as an error) from the n
 * bytes at xml.  Pure; used by st_sts_assume_role and the unit tests. */
int st_sts_parse(const char *xml, size_t n, struct st_sts_creds *out,
                 struct fl_err *err) FL_MUST_CHECK;

/* The text of the first element named tag in the n bytes at xml, entities
 * decoded, into out (cap bytes with the NUL): 1 when found, 0 when absent,
 * -1 (FL_ERR_BAD_REQUEST) when it holds markup, a bad entity, a NUL or
 * more than cap - 1 bytes.  *next, when not NULL, receives where the
 * scan may continue.  A bounded layer over io/s3_int.h's scanner. */
int st_xml_text(const char *xml, size_t n, const char *tag, char *out, size_t cap,
                const char **next, struct fl_err *err) FL_MUST_CHECK;

/* Parses an ISO-8601 UTC time ("2026-12-01T15:39:46Z", fractional seconds
 * allowed) into ms since the epoch; -1 when malformed. */
int64_t st_iso8601_ms(const char *s);

#endif
