/* http1.h - a small HTTP/1.1 client for a catalog at an http:// address.
 *
 * `floe ingest --catalog-uri` makes three requests (config, loadTable,
 * commit).  libcurl does them as well, but loading it and the chain it
 * links costs ~15 ms of the dynamic loader on every run, more than the rest
 * of a 1,000-row ingest (issue 9's cold start).  A plain-text catalog --
 * on the same host, or in the same cluster behind a service -- needs only
 * what this file does: one keep-alive TCP connection, a request with a
 * Content-Length, and a response delimited by Content-Length, chunked
 * encoding or the connection's end.  Anything else (https, a proxy from the
 * environment, credentials in the URL) stays with libcurl: see
 * st_http1_usable.
 *
 * Bounds: a response head of at most 64 KiB, a body of at most 64 MiB,
 * 10 s to connect and 120 s for a whole request.  A request on a reused
 * connection that the server had closed (it answered nothing) is sent once
 * more on a new connection when that is safe: a GET, or a request carrying
 * an Idempotency-Key. */
#ifndef ST_HTTP1_H
#define ST_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

#define ST_HTTP1_MAX_HEAD (64u << 10)
#define ST_HTTP1_MAX_BODY (64u << 20)

/* true when uri is http://host[:port][/path], without credentials, and the
 * environment names no proxy that libcurl would use for it (http_proxy,
 * all_proxy, ALL_PROXY). */
bool st_http1_usable(const char *uri);

struct st_http1;

/* A client for the origin of uri (http://host[:port]); connects on the
 * first request.  -1 with FL_ERR_BAD_REQUEST when uri is not one
 * st_http1_usable accepts, FL_ERR_NOMEM. */
int st_http1_open(const char *uri, struct st_http1 **out, struct fl_err *err) FL_MUST_CHECK;

void st_http1_close(struct st_http1 *h);

struct st_http1_request {
	const char *method;
	const char *url; /* absolute, with the origin st_http1_open was given */
	const char *const *headers; /* "Name: value" lines, without CRLF */
	size_t nheaders;
	const char *body; /* NULL: none */
	size_t body_len;
	bool retry_safe; /* may be sent again after a stale connection */
};

/* Sends r and reads the answer: *status and the body in out (decoded when
 * chunked).  -1 with FL_ERR_UNAVAILABLE when no complete answer came;
 * *sent then says whether any of the request may have reached the server
 * (false: connecting failed). */
int st_http1_do(struct st_http1 *h, const struct st_http1_request *r, long *status,
                struct fl_buf *out, bool *sent, struct fl_err *err) FL_MUST_CHECK;

/* ---- the response parser (pure; fuzzed) ---- */

struct st_http1_head {
	int status; /* 100-999 */
	bool close; /* Connection: close, or HTTP/1.0 without keep-alive */
	bool chunked;
	int64_t length; /* Content-Length, or -1 */
	size_t head_len; /* bytes of the head, its blank line included */
};

/* Parses the response head at the start of buf[0..len): 1 = complete (*h
 * filled), 0 = more bytes needed, -1 = malformed or over
 * ST_HTTP1_MAX_HEAD (err says what). */
int st_http1_parse_head(const char *buf, size_t len, struct st_http1_head *h, struct fl_err *err);

/* A chunked body at the start of buf[0..len): 1 = complete, with its bytes
 * (trailers included) in *used and the data appended to out; 0 = more bytes
 * needed (out untouched); -1 = malformed, over ST_HTTP1_MAX_BODY or out of
 * memory (err says what). */
int st_http1_dechunk(const char *buf, size_t len, struct fl_buf *out, size_t *used,
                     struct fl_err *err);

#endif
