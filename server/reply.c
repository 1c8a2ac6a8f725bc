/* reply.c - responses and the error model.
 *
 * Every response gets Content-Type and X-Request-Id; every error is
 * {"error":{"message","type","code"}} with the code equal to the status. */
#include "reply.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "libmhd.h"
#include "log.h"
#include "router.h"

struct err_map {
	unsigned status;
	const char *type;
};

/* clang-format off */
static const struct err_map err_table[FL_ERR_KIND_COUNT] = {
	[FL_ERR_NONE]                 = {500, "ServerErrorException"},
	[FL_ERR_BAD_REQUEST]          = {400, "BadRequestException"},
	[FL_ERR_NOT_AUTHORIZED]       = {401, "NotAuthorizedException"},
	[FL_ERR_FORBIDDEN]            = {403, "ForbiddenException"},
	[FL_ERR_NOT_FOUND]            = {404, "NoSuchResourceException"},
	[FL_ERR_NO_SUCH_WAREHOUSE]    = {404, "NoSuchWarehouseException"},
	[FL_ERR_NO_SUCH_NAMESPACE]    = {404, "NoSuchNamespaceException"},
	[FL_ERR_NO_SUCH_TABLE]        = {404, "NoSuchTableException"},
	[FL_ERR_NO_SUCH_VIEW]         = {404, "NoSuchViewException"},
	[FL_ERR_METHOD_NOT_ALLOWED]   = {405, "MethodNotAllowedException"},
	[FL_ERR_UNSUPPORTED]          = {406, "UnsupportedOperationException"},
	[FL_ERR_ALREADY_EXISTS]       = {409, "AlreadyExistsException"},
	[FL_ERR_NAMESPACE_NOT_EMPTY]  = {409, "NamespaceNotEmptyException"},
	[FL_ERR_COMMIT_FAILED]        = {409, "CommitFailedException"},
	[FL_ERR_CONFLICT]             = {409, "ConflictException"},
	[FL_ERR_TOO_LARGE]            = {413, "RequestTooLargeException"},
	[FL_ERR_TOO_MANY_REQUESTS]    = {429, "TooManyRequestsException"},
	[FL_ERR_UNPROCESSABLE]        = {422, "UnprocessableEntityException"},
	[FL_ERR_COMMIT_STATE_UNKNOWN] = {500, "CommitStateUnknownException"},
	[FL_ERR_UNAVAILABLE]          = {503, "ServiceUnavailableException"},
	[FL_ERR_IO]                   = {500, "ServerErrorException"},
	[FL_ERR_INTERNAL]             = {500, "ServerErrorException"},
	[FL_ERR_NOMEM]                = {503, "ServiceUnavailableException"},
	[FL_ERR_WOULD_BLOCK]          = {503, "ServiceUnavailableException"}, /* handed to a worker, never sent */
};
/* clang-format on */

unsigned srv_err_status(enum fl_err_kind kind)
{
	if ((unsigned)kind >= FL_ERR_KIND_COUNT)
		return 500;
	return err_table[kind].status;
}

const char *srv_err_type(enum fl_err_kind kind)
{
	if ((unsigned)kind >= FL_ERR_KIND_COUNT)
		return "ServerErrorException";
	return err_table[kind].type;
}

/* The most a thread that must not wait codes for one response (about a
 * millisecond): a larger loadTable moves to a worker first
 * (srv_reply_codes_later), and anything else goes out as it is. */
#define CODE_INLINE_MAX (128 * 1024)

/* The largest body coded with gzip for one response.  zlib codes JSON at
 * ~320 MB/s at level 1 on an idle machine of BENCHMARKS.md (~110 MB/s when
 * the cores are shared), about a quarter of zstd's speed: 256 KiB is
 * 0.8-2.3 ms of a worker.  A larger body goes plain to a client that
 * accepts gzip only (one that accepts zstd gets zstd at any size), unless
 * it is a cached version's answer, whose copy is coded once and kept
 * (coding_for_version). */
#define GZIP_MAX (256 * 1024)

/* The coding r's body of n bytes goes out in, when it may be coded. */
static enum fl_coding coding_for(const struct srv_req *r, size_t n)
{
	return r->coding == FL_CODING_GZIP && n > GZIP_MAX ? FL_CODING_IDENTITY : r->coding;
}

/* The same for the answer of a table or view version t: gzip at any size
 * when t's version is cached, since its copy is then made once for every
 * load of the version (on a worker: srv_reply_codes_later). */
static enum fl_coding coding_for_version(const struct srv_req *r, const struct cat_table_bytes *t)
{
	if (r->coding == FL_CODING_GZIP && cat_table_bytes_cached(t))
		return FL_CODING_GZIP;
	return coding_for(r, t->answer_len);
}

/* Whether a body of n bytes with status may go out coded, and so varies
 * with Accept-Encoding (see struct srv_req for secret).  A HEAD is coded
 * like its GET: the same Content-Encoding, Content-Length and Vary. */
static bool codable(const struct srv_req *r, unsigned status, size_t n)
{
	return r->code_min > 0 && n >= r->code_min && !r->secret && status != MHD_HTTP_NO_CONTENT &&
	       status != MHD_HTTP_NOT_MODIFIED;
}

/* Installs resp (NULL: it could not be made) as the answer, whose body is
 * the n bytes at body, sent coded with c (varies: the body may be coded
 * for another client). */
static int install(struct srv_req *r, struct MHD_Response *resp, unsigned status, const char *ctype,
                   const char *body, size_t n, enum fl_coding c, size_t coded_len, bool varies)
{
	if (r->resp != NULL) {
		srv_libmhd()->destroy_response(r->resp);
		r->resp = NULL;
	}
	if (resp == NULL)
		return -1;
	if (ctype != NULL)
		srv_libmhd()->add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (c != FL_CODING_IDENTITY)
		srv_libmhd()->add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING,
		                                  fl_coding_name(c));
	if (varies)
		srv_libmhd()->add_response_header(resp, MHD_HTTP_HEADER_VARY,
		                                  MHD_HTTP_HEADER_ACCEPT_ENCODING);
	srv_libmhd()->add_response_header(resp, "X-Request-Id", r->id);
	r->resp = resp;
	r->status = status;
	r->out_body = body;
	r->out_len = n;
	r->out_ctype = ctype;
	r->out_etag = NULL;
	r->out_coding = c;
	r->out_coded_len = coded_len;
	return 0;
}

/* A coded body and what it was made from, freed with the response: the
 * plain body stays r->out_body (an idempotency record stores it), or it
 * is a cached version's answer (hold), which stays held until then. */
struct coded_body {
	char *bytes;
	char *plain;
	struct cat_shared *hold;
};

static void coded_body_free(void *cls)
{
	struct coded_body *k = cls;

	free(k->bytes);
	free(k->plain);
	cat_table_bytes_release(k->hold);
	free(k);
}

/* Installs a response taking ownership of a malloc'd body, coded when r
 * asks for it and it gains. */
static int set_response(struct srv_req *r, unsigned status, const char *ctype, char *body, size_t n)
{
	const struct srv_libmhd *mhd = srv_libmhd();
	bool varies = body != NULL && codable(r, status, n);
	enum fl_coding c = coding_for(r, n);
	struct MHD_Response *resp;
	struct coded_body *k = NULL;
	size_t zn = 0;
	bool coded;

	if (varies && c != FL_CODING_IDENTITY && !(fl_no_wait && n > CODE_INLINE_MAX) &&
	    (k = calloc(1, sizeof(*k))) != NULL &&
	    (fl_coding_encode(c, body, n, &k->bytes, &zn) != 0 || zn >= n)) {
		free(k->bytes);
		free(k);
		k = NULL;
	}
	coded = k != NULL;
	if (coded) {
		k->plain = body;
		resp = mhd->create_response_from_buffer_with_free_callback_cls(zn, k->bytes,
		                                                               coded_body_free, k);
		if (resp == NULL)
			coded_body_free(k);
	} else {
		resp = mhd->create_response_from_buffer(
		        n, body, body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
		if (resp == NULL)
			free(body);
	}
	return install(r, resp, status, ctype, body, n, coded ? c : FL_CODING_IDENTITY, zn, varies);
}

static int reply_json(struct srv_req *r, unsigned status, const json_t *v)
{
	size_t n;
	char *s = fl_json_dump(v, &n);

	if (s == NULL)
		return -1;
	return set_response(r, status, "application/json", s, n);
}

int srv_reply_ok(struct srv_req *r, const json_t *v)
{
	return reply_json(r, MHD_HTTP_OK, v);
}

int srv_reply_ok_private(struct srv_req *r, const json_t *v)
{
	r->secret = true;
	if (reply_json(r, MHD_HTTP_OK, v) != 0)
		return -1;
	srv_libmhd()->add_response_header(r->resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	return 0;
}

int srv_reply_created(struct srv_req *r, const json_t *v)
{
	return reply_json(r, MHD_HTTP_CREATED, v);
}

int srv_reply_no_content(struct srv_req *r)
{
	return set_response(r, MHD_HTTP_NO_CONTENT, NULL, NULL, 0);
}

struct srv_coded_copy {
	size_t len;
	char bytes[];
};

int srv_reply_static(struct srv_req *r, const char *ctype, const char *p, size_t n,
                     struct srv_static_coded *sc)
{
	const struct srv_libmhd *mhd = srv_libmhd();
	bool varies = codable(r, MHD_HTTP_OK, n);
	enum fl_coding c = varies ? coding_for(r, n) : FL_CODING_IDENTITY;
	struct srv_coded_copy *k = NULL, *mine;
	char *z;
	size_t zn;

	/* Made once per process and coding (a few hundred µs), never freed. */
	if (c != FL_CODING_IDENTITY) {
		k = atomic_load_explicit(&sc->copy[c], memory_order_acquire);
		if (k == NULL && fl_coding_encode(c, p, n, &z, &zn) == 0) {
			mine = malloc(sizeof(*mine) + zn);
			if (mine != NULL) {
				mine->len = zn;
				memcpy(mine->bytes, z, zn);
				if (atomic_compare_exchange_strong_explicit(&sc->copy[c], &k, mine,
				                                            memory_order_acq_rel,
				                                            memory_order_acquire))
					k = mine;
				else
					free(mine); /* another thread's came first */
			}
			free(z);
		}
		if (k == NULL)
			c = FL_CODING_IDENTITY;
	}
	/* libmicrohttpd only reads a PERSISTENT buffer: the cast is its API's. */
	return install(
	        r,
	        mhd->create_response_from_buffer(k != NULL ? k->len : n,
	                                         (void *)(uintptr_t)(k != NULL ? k->bytes : p),
	                                         MHD_RESPMEM_PERSISTENT),
	        MHD_HTTP_OK, ctype, p, n, c, k != NULL ? k->len : 0, varies);
}

int srv_reply_bytes(struct srv_req *r, const char *ctype, const char *p, size_t n)
{
	char *copy = malloc(n ? n : 1);

	if (copy == NULL)
		return -1;
	memcpy(copy, p, n);
	return set_response(r, MHD_HTTP_OK, ctype, copy, n);
}

/* Adds the ETag header etag to the installed response, made weak when
 * asked: a coded body's is (RFC 9110 §8.8.3: a strong tag names one
 * sequence of bytes, and the coded body is another; If-None-Match
 * compares weakly, so either form of the tag matches there).  Floe's tags
 * are 34 bytes. */
static void etag_header(struct srv_req *r, const char *etag, bool weak)
{
	char w[128];

	if (weak && strncmp(etag, "W/", 2) != 0 &&
	    (size_t)snprintf(w, sizeof(w), "W/%s", etag) < sizeof(w))
		etag = w;
	srv_libmhd()->add_response_header(r->resp, MHD_HTTP_HEADER_ETAG, etag);
}

/* Adds an ETag (none when NULL) to the installed response. */
static void add_etag(struct srv_req *r, const char *etag)
{
	if (etag != NULL) {
		etag_header(r, etag, r->out_coding != FL_CODING_IDENTITY);
		r->out_etag = fl_arena_strdup(r->arena, etag);
	}
}

int srv_reply_table(struct srv_req *r, char *body, size_t n, const char *etag)
{
	if (set_response(r, MHD_HTTP_OK, "application/json", body, n) != 0)
		return -1;
	add_etag(r, etag);
	return 0;
}

/* Ends a response's hold on the cache's bytes it sent. */
static void release_held(void *hold)
{
	cat_table_bytes_release(hold);
}

bool srv_reply_codes_later(const struct srv_req *r, const struct cat_table_bytes *t, bool held)
{
	enum fl_coding c = held ? coding_for_version(r, t) : coding_for(r, t->answer_len);

	if (!fl_no_wait || c == FL_CODING_IDENTITY || t->answer_len <= CODE_INLINE_MAX ||
	    !codable(r, MHD_HTTP_OK, t->answer_len))
		return false;
	/* A held block's kept copy is sent from here; one being made (or
	 * that gains nothing) means the plain answer, also from here.  An
	 * answer that may be made per request is coded by a worker. */
	return !held || cat_table_bytes_coded_state(t, c) == CAT_CODED_OPEN;
}

int srv_reply_table_held(struct srv_req *r, struct cat_table_bytes *t, const char *etag)
{
	const struct srv_libmhd *mhd = srv_libmhd();
	bool varies = codable(r, MHD_HTTP_OK, t->answer_len);
	enum fl_coding want = coding_for_version(r, t), c = FL_CODING_IDENTITY;
	const char *p = t->answer;
	size_t n = t->answer_len;
	struct MHD_Response *resp;
	struct coded_body *k = NULL;
	char *owned = NULL;

	/* The version's coded copy, made once (on a worker when it is large:
	 * srv_reply_codes_later), or this request's own when it is not kept
	 * (except gzip past GZIP_MAX, only ever made to be kept); while
	 * another thread makes it, or when it gains nothing, the answer goes
	 * as it is. */
	if (varies && want != FL_CODING_IDENTITY &&
	    !(fl_no_wait && n > CODE_INLINE_MAX &&
	      cat_table_bytes_coded_state(t, want) != CAT_CODED_KEPT) &&
	    cat_table_bytes_coded(r->ctx->db, t, want, &p, &n,
	                          want == coding_for(r, n) ? &owned : NULL) == 1)
		c = want;
	/* libmicrohttpd only reads the buffer (it is not MUST_FREE): the cast
	 * is its API's, not a licence to write.  An owned copy goes with the
	 * hold when the response is done. */
	if (owned != NULL && (k = calloc(1, sizeof(*k))) == NULL) {
		free(owned);
		owned = NULL;
		c = FL_CODING_IDENTITY;
		p = t->answer;
		n = t->answer_len;
	}
	if (k != NULL) {
		k->bytes = owned;
		k->hold = t->hold;
		resp = mhd->create_response_from_buffer_with_free_callback_cls(n, owned,
		                                                               coded_body_free, k);
		if (resp == NULL) {
			k->hold = NULL; /* t keeps it on failure */
			coded_body_free(k);
		}
	} else {
		resp = mhd->create_response_from_buffer_with_free_callback_cls(
		        n, (void *)(uintptr_t)p, release_held, t->hold);
	}
	if (install(r, resp, MHD_HTTP_OK, "application/json", t->answer, t->answer_len, c, n,
	            varies) != 0)
		return -1;
	t->hold = NULL; /* the response's now */
	add_etag(r, etag);
	return 0;
}

int srv_reply_not_modified(struct srv_req *r, const char *etag, const char *inm)
{
	const char *named = inm != NULL ? strstr(inm, etag) : NULL;

	if (set_response(r, MHD_HTTP_NOT_MODIFIED, NULL, NULL, 0) != 0)
		return -1;
	/* The form of the tag the client holds: W/ right before it (a coded
	 * 200's tag is weak). */
	etag_header(r, etag, named != NULL && named - inm >= 2 && strncmp(named - 2, "W/", 2) == 0);
	/* RFC 9110 §15.4.5: the Vary a 200 would have carried (a 304 answers a
	 * load, whose body is almost always large enough to be coded). */
	if (r->code_min > 0)
		srv_libmhd()->add_response_header(r->resp, MHD_HTTP_HEADER_VARY,
		                                  MHD_HTTP_HEADER_ACCEPT_ENCODING);
	return 0;
}

int srv_reply_stored(struct srv_req *r, int status, const char *ctype, const char *etag,
                     const char *body, size_t n)
{
	char *copy = NULL;

	if (n > 0) {
		copy = malloc(n);
		if (copy == NULL)
			return -1;
		memcpy(copy, body, n);
	}
	if (set_response(r, (unsigned)status, ctype, copy, n) != 0)
		return -1;
	if (etag != NULL)
		etag_header(r, etag, r->out_coding != FL_CODING_IDENTITY);
	return srv_reply_replayed(r, NULL);
}

int srv_reply_replayed(struct srv_req *r, struct fl_err *err)
{
	if (srv_libmhd()->add_response_header(r->resp, "Idempotent-Replayed", "true") == MHD_YES)
		return 0;
	return err != NULL ? fl_err_set(err, FL_ERR_NOMEM, "out of memory") : -1;
}

int srv_reply_not_ready(struct srv_req *r, const char *why)
{
	json_t *v = json_pack("{s:s, s:s}", "status", "not ready", "reason", why);
	int rc = reply_json(r, MHD_HTTP_SERVICE_UNAVAILABLE, v);

	json_decref(v);
	if (rc == 0)
		srv_libmhd()->add_response_header(r->resp, "Retry-After", "1");
	return rc;
}

int srv_reply_token(struct srv_req *r, const json_t *v)
{
	r->secret = true;
	if (reply_json(r, MHD_HTTP_OK, v) != 0)
		return -1;
	/* RFC 6749 §5.1: a response carrying a token must not be cached. */
	srv_libmhd()->add_response_header(r->resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	srv_libmhd()->add_response_header(r->resp, MHD_HTTP_HEADER_PRAGMA, "no-cache");
	return 0;
}

int srv_reply_oauth_error(struct srv_req *r, const struct fl_err *err, const char *code,
                          int retry_after, bool basic)
{
	unsigned status = srv_err_status(err->kind);
	json_t *v = json_pack("{s:s, s:s}", "error", code, "error_description",
	                      err->msg[0] ? err->msg : code);
	char ra[24];

	if (v == NULL || reply_json(r, status, v) != 0) {
		json_decref(v);
		return -1;
	}
	json_decref(v);
	srv_libmhd()->add_response_header(r->resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	/* RFC 6749 §5.2: a client that authenticated with Basic gets a 401
	 * with the scheme it used. */
	if (status == MHD_HTTP_UNAUTHORIZED)
		srv_libmhd()->add_response_header(r->resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
		                                  basic ? "Basic realm=\"floe\""
		                                        : "Bearer realm=\"floe\"");
	if (retry_after > 0) {
		snprintf(ra, sizeof(ra), "%d", retry_after);
		srv_libmhd()->add_response_header(r->resp, "Retry-After", ra);
	}
	return 0;
}

void srv_reply_error(struct srv_req *r, const struct fl_err *err, const char *allow)
{
	unsigned status = srv_err_status(err->kind);
	const char *msg = err->msg[0] ? err->msg : "internal error";
	json_t *v;

	if (status >= 500)
		fl_error(r->id, "%s %s -> %u %s: %s", r->method, r->route ? r->route->path : "-",
		         status, fl_err_kind_name(err->kind), msg);
	v = json_pack("{s:{s:s, s:s, s:i}}", "error", "message", msg, "type",
	              srv_err_type(err->kind), "code", (int)status);
	if (v == NULL || reply_json(r, status, v) != 0) {
		static const char fallback[] =
		        "{\"error\":{\"message\":\"out of memory\",\"type\":\"ServiceUnavailableException\",\"code\":503}}";
		char *copy = strdup(fallback);

		(void)set_response(r, 503, "application/json", copy, copy ? strlen(copy) : 0);
	}
	json_decref(v);
	if (r->resp == NULL)
		return;
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		srv_libmhd()->add_response_header(r->resp, "Retry-After", "1");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED && allow != NULL && allow[0])
		srv_libmhd()->add_response_header(r->resp, "Allow", allow);
	/* RFC 6750 §3: say how to authenticate, and whether the token sent was bad. */
	if (status == MHD_HTTP_UNAUTHORIZED)
		srv_libmhd()->add_response_header(
		        r->resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
		        srv_header(r, "Authorization") != NULL
		                ? "Bearer realm=\"floe\", error=\"invalid_token\""
		                : "Bearer realm=\"floe\"");
}

int srv_reply_accepted(struct srv_req *r, const json_t *v)
{
	return reply_json(r, MHD_HTTP_ACCEPTED, v);
}

void srv_reply_error_retry(struct srv_req *r, const struct fl_err *err, int seconds)
{
	char ra[16];

	srv_reply_error(r, err, NULL);
	if (r->resp == NULL || srv_err_status(err->kind) != MHD_HTTP_TOO_MANY_REQUESTS)
		return;
	snprintf(ra, sizeof(ra), "%d", seconds > 0 ? seconds : 1);
	srv_libmhd()->add_response_header(r->resp, "Retry-After", ra);
}
