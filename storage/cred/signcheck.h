/* signcheck.h - may Floe sign this S3 request for this caller?
 *
 * Remote signing hands clients signatures made with the server's own
 * credentials, so each request must be proven to touch only the table it
 * was asked for: its bucket and key (after normalisation) lie under the
 * table's location, its method and sub-resource suit the caller's access,
 * and nothing in it (a copy source, a DeleteObjects body) reaches elsewhere.
 * Pure and thread-safe. */
#ifndef ST_SIGNCHECK_H
#define ST_SIGNCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "policy.h"
#include "io/sigv4.h"

/* The parts of an absolute http(s) URI, as sent (still percent-encoded). */
struct st_url {
	bool https;
	char host[256]; /* host[:port], lowercase, default port removed */
	char path[4096]; /* "/" when empty */
	char query[4096]; /* after '?', "" when none */
};

/* Splits uri; FL_ERR_BAD_REQUEST for anything but http(s)://host[:port]/…
 * without user info or fragment, or parts longer than the buffers. */
int st_url_split(const char *uri, struct st_url *out, struct fl_err *err) FL_MUST_CHECK;

struct st_signcheck_scope {
	const struct st_s3_loc *table; /* the table's location */
	const char *endpoint; /* the store, e.g. "http://127.0.0.1:9000" */
	bool path_style; /* the store is addressed as endpoint/bucket/key */
	enum st_access access; /* the caller's access to the table */
};

struct st_signcheck_req {
	const char *method;
	const char *uri; /* absolute */
	const struct st_sigv4_header *headers;
	size_t nheaders;
	const char *body; /* NULL when none was sent */
	size_t body_len;
};

/* 0 when the request may be signed; otherwise FL_ERR_FORBIDDEN with a
 * message naming the escape (another bucket, a key outside the table, '..',
 * an encoded separator, a double slash, the wrong addressing style, a
 * method or sub-resource the caller may not use, a repeated parameter or
 * copy source, a DeleteObjects key or copy source outside the table, markup
 * in a DeleteObjects body beyond the schema's plain elements), or
 * FL_ERR_BAD_REQUEST for a malformed request.  *body_checked is true when
 * the verdict rests on the body (DeleteObjects): the signature must then
 * cover exactly that body (its SHA-256 as the payload hash), or the client
 * could send another. */
int st_signcheck(const struct st_signcheck_scope *s, const struct st_signcheck_req *r,
                 bool *body_checked, struct fl_err *err) FL_MUST_CHECK;

#endif
