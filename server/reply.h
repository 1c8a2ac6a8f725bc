/* reply.h - building responses.  The only place that chooses HTTP statuses:
 * handlers say what happened (ok, created, no content, error kind) and this
 * file says how that is spelled in HTTP. */
#ifndef SRV_REPLY_H
#define SRV_REPLY_H

#include "srv.h"

/* 200 with a JSON body (v is borrowed). */
int srv_reply_ok(struct srv_req *r, const json_t *v) FL_MUST_CHECK;
/* 200 with a JSON body that must not be cached or replayed (signatures,
 * credentials): Cache-Control: no-store. */
int srv_reply_ok_private(struct srv_req *r, const json_t *v) FL_MUST_CHECK;
/* 201 with a JSON body. */
int srv_reply_created(struct srv_req *r, const json_t *v) FL_MUST_CHECK;
/* 204 without a body. */
int srv_reply_no_content(struct srv_req *r) FL_MUST_CHECK;
/* 200 with n constant bytes at p (never freed: a document compiled in),
 * coded for a client that asks with the copy sc keeps, made on first use:
 * sc is static storage, zeroed. */
struct srv_coded_copy;
struct srv_static_coded {
	_Atomic(struct srv_coded_copy *) copy[FL_CODING_COUNT];
};
int srv_reply_static(struct srv_req *r, const char *ctype, const char *p, size_t n,
                     struct srv_static_coded *sc) FL_MUST_CHECK;
/* 200 with a body of the given content type (bytes are copied). */
int srv_reply_bytes(struct srv_req *r, const char *ctype, const char *p, size_t n) FL_MUST_CHECK;
/* 200 with a JSON body taken over (malloc'd) and an optional ETag. */
int srv_reply_table(struct srv_req *r, char *body, size_t n, const char *etag) FL_MUST_CHECK;
/* 200 with t->answer (the cache's block) as the body, not copied: the
 * response takes t's hold (t->hold is NULL after) and releases it once
 * libmicrohttpd has sent the response or dropped it.  On failure t keeps
 * its hold.  A client that accepts gzip or zstd gets the version's coded
 * copy (cat_table_bytes_coded).  srv_reply_codes_later: r's answer about
 * t (the held block when held; otherwise one that may be made around t's
 * metadata, as a table with extras is) is to be coded, no kept copy can be
 * sent, and it is too large to code on a thread that must not wait, so
 * the handler hands r to a worker (FL_ERR_WOULD_BLOCK) first. */
int srv_reply_table_held(struct srv_req *r, struct cat_table_bytes *t,
                         const char *etag) FL_MUST_CHECK;
bool srv_reply_codes_later(const struct srv_req *r, const struct cat_table_bytes *t, bool held);
/* 304 with the ETag, weak (W/) when inm, the request's If-None-Match (or
 * NULL), names it so: the form the 200 the client holds carried (a coded
 * one's is weak). */
int srv_reply_not_modified(struct srv_req *r, const char *etag, const char *inm) FL_MUST_CHECK;
/* Replays a response stored under an Idempotency-Key (status as stored). */
int srv_reply_stored(struct srv_req *r, int status, const char *ctype, const char *etag,
                     const char *body, size_t n) FL_MUST_CHECK;
/* Marks the response just made as a replay (Idempotent-Replayed: true). */
int srv_reply_replayed(struct srv_req *r, struct fl_err *err) FL_MUST_CHECK;
/* 503 {"status": …} for readiness. */
int srv_reply_not_ready(struct srv_req *r, const char *why) FL_MUST_CHECK;

/* 200 with a token response (v is borrowed) and Cache-Control: no-store. */
int srv_reply_token(struct srv_req *r, const json_t *v) FL_MUST_CHECK;

/* An OAuth error (RFC 6749 §5.2) {"error": code, "error_description"}: the
 * status comes from err's kind (400, 401, 429 with Retry-After when
 * retry_after > 0); a 401 carries WWW-Authenticate for Basic when the client
 * used Basic, else Bearer. */
int srv_reply_oauth_error(struct srv_req *r, const struct fl_err *err, const char *code,
                          int retry_after, bool basic) FL_MUST_CHECK;

/* The error model for err: {"error":{"message","type","code"}}, with
 * Retry-After on 503 and Allow on 405 (allow may be NULL). */
void srv_reply_error(struct srv_req *r, const struct fl_err *err, const char *allow);

/* 202 with a JSON body (v is borrowed): accepted, done later. */
int srv_reply_accepted(struct srv_req *r, const json_t *v) FL_MUST_CHECK;

/* The error model for err, with Retry-After: seconds when it is a 429. */
void srv_reply_error_retry(struct srv_req *r, const struct fl_err *err, int seconds);

/* HTTP status and Iceberg type name for an error kind. */
unsigned srv_err_status(enum fl_err_kind kind);
const char *srv_err_type(enum fl_err_kind kind);

#endif
