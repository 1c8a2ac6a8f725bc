/* httpd.c - the HTTP front: libmicrohttpd's epoll threads, and workers.
 *
 * Two kinds of threads.  libmicrohttpd's (http-threads, one per CPU) read
 * requests, write responses and answer what is served from memory; they
 * never wait (fl_no_wait, err.h).  The workers (threads) run everything
 * else: whatever waits on PostgreSQL, storage, a lock held across a
 * commit.  So a commit holding a worker for milliseconds never delays a
 * cached loadTable, and the cores serve cached reads with as few threads
 * as mhd_hello, the ceiling, does.
 *
 * Request life: the first access-handler call allocates struct srv_req (and
 * its arena) and returns; later calls append upload data to the body, which
 * is bounded by max-body-bytes (past it the data is dropped and the request
 * answered 413); the final call routes it.  A loadTable (or /healthz) then
 * runs there; any other route, or a loadTable that would wait after all
 * (FL_ERR_WOULD_BLOCK: its warehouse, principal or credentials not cached),
 * is handed to a worker: the connection is suspended and queued, and the
 * worker's response is queued once the worker has resumed it.  A loadTable
 * that misses the cache parks instead: its connection is suspended until a
 * loader thread has read the table, then the handler runs again on the
 * resumed call.  A response is queued on a call after the first, never on
 * the first one, which would cost keep-alive.  The completion callback
 * records metrics and frees the arena.
 *
 * Paths arrive raw (the unescape callback is a no-op) and are split on '/'
 * before each segment is percent-decoded, so "%2F" inside a name is data. */
#include "httpd.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcrypto.h"
#include "auth.h"
#include "clock.h"
#include "handlers.h"
#include "json.h"
#include "libmhd.h"
#include "log.h"
#include "metrics.h"
#include "pct.h"
#include "random.h"
#include "reply.h"
#include "router.h"
#include "uuid.h"

struct srv_httpd {
	struct MHD_Daemon *d;
	struct srv_ctx *ctx;
	atomic_int active;
	atomic_int parked; /* connections suspended for a read or a worker */
	atomic_bool stopping;
	atomic_uint_least64_t next_id; /* request ids: a random start, then counted */
	/* The workers and their queue, oldest first. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct srv_req *head, *tail;
	bool quit;
	pthread_t *workers;
	unsigned nworkers, busy, queued;
};

static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

/* A request id: the caller's, or the next number of this process, mixed by
 * a bijection (SplitMix64's finaliser) so that ids are distinct within the
 * process, look unrelated and, from a random start, differ between
 * replicas — without a getrandom call per request (it showed in profiles). */
static void make_request_id(struct srv_httpd *h, struct srv_req *r)
{
	const char *given =
	        srv_libmhd()->lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Request-Id");
	uint64_t x;

	/* A caller's id is kept when it is short and plain, so traces join up. */
	if (given != NULL && strlen(given) > 0 && strlen(given) < sizeof(r->id) &&
	    strspn(given, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
	            strlen(given)) {
		memcpy(r->id, given, strlen(given) + 1);
		return;
	}
	x = atomic_fetch_add_explicit(&h->next_id, 0x9e3779b97f4a7c15ULL, memory_order_relaxed);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	/* Hex by table: this runs on every request (snprintf showed in profiles). */
	for (int i = 0; i < 16; i++)
		r->id[i] = "0123456789abcdef"[(x >> (60 - 4 * i)) & 15];
	r->id[16] = '\0';
}

int srv_query(struct srv_req *r, const char *key, const char **out, struct fl_err *err)
{
	const char *raw =
	        srv_libmhd()->lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
	size_t n, dn;
	char *d;

	if (raw == NULL)
		return 0;
	n = strlen(raw);
	d = fl_arena_alloc(r->arena, n + 1);
	if (d == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (fl_pct_decode(raw, n, true, d, &dn, err) != 0)
		return fl_err_prefix(err, "query parameter %s", key);
	*out = d;
	return 0;
}

const char *srv_header(struct srv_req *r, const char *name)
{
	return srv_libmhd()->lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

int srv_body_json(struct srv_req *r, json_t **out, struct fl_err *err)
{
	json_t *v;

	if (fl_json_parse(r->body.data, r->body.len, (int)r->ctx->cfg->max_json_depth, &v, err) !=
	    0)
		return -1;
	if (fl_arena_defer(r->arena, fl_json_decref, v) != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	*out = v;
	return 0;
}

static bool mutating(const char *method)
{
	return strcmp(method, "POST") == 0 || strcmp(method, "DELETE") == 0 ||
	       strcmp(method, "PUT") == 0;
}

/* Parked only from an HTTP thread: a worker's connection is suspended
 * already, and a worker may wait for the read. */
bool srv_can_park(const struct srv_req *r)
{
	return r->httpd != NULL && fl_no_wait && !r->resumed && r->tx == NULL &&
	       !atomic_load(&r->httpd->stopping);
}

/* The loader's answer: the bytes kept for the handler's second run, then
 * the connection resumed.  r may end as soon as it is resumed. */
static void on_loaded(void *arg, const struct cat_table_bytes *t)
{
	struct srv_req *r = arg;
	struct srv_httpd *h = r->httpd;

	if (t != NULL)
		r->loaded = *t;
	srv_libmhd()->resume_connection(r->conn);
	atomic_fetch_sub(&h->parked, 1);
}

int srv_park_table_load(struct srv_req *r, const char *wh, const struct cat_ns *ns,
                        const char *name)
{
	struct srv_httpd *h = r->httpd;

	/* Counted before stopping is checked again, so that srv_httpd_stop,
	 * which sets stopping before it waits for the count, sees this one. */
	atomic_fetch_add(&h->parked, 1);
	r->parked = true;
	/* Suspended before the read is queued: the loader may resume it at once. */
	srv_libmhd()->suspend_connection(r->conn);
	if (atomic_load(&h->stopping) ||
	    cat_table_load_queue(r->ctx->db, wh, ns, name, on_loaded, r) != 0)
		on_loaded(r, NULL);
	return 0;
}

/* Runs the route's handler; a failure becomes the error model, except
 * FL_ERR_WOULD_BLOCK, which leaves r without a response for a worker. */
static void run_handler(struct srv_req *r)
{
	struct fl_err err = {0};

	if (r->route->handler(r, &err) == 0 && (r->resp != NULL || r->parked))
		return;
	if (err.kind == FL_ERR_WOULD_BLOCK) {
		if (r->resp != NULL)
			srv_libmhd()->destroy_response(r->resp);
		r->resp = NULL;
		return;
	}
	if (err.kind == FL_ERR_NONE)
		fl_err_set(&err, r->resp == NULL ? FL_ERR_NOMEM : FL_ERR_INTERNAL,
		           "handler failed without a reason");
	srv_reply_error(r, &err, NULL);
}

/* Answers r with the stored response of its key (rec). */
static void replay(struct srv_req *r, struct cat_idem *rec)
{
	struct fl_err err = {0};

	if (rec->metadata_location != NULL) {
		if (srv_replay_commit(r, rec->metadata_location, &err) == 0)
			srv_metrics_replay(r->ctx->metrics);
	} else if (srv_reply_stored(r, rec->status, rec->content_type, rec->etag, rec->body,
	                            rec->body_len) != 0) {
		fl_err_set(&err, FL_ERR_NOMEM, "out of memory");
	} else {
		srv_metrics_replay(r->ctx->metrics);
	}
	if (err.kind != FL_ERR_NONE)
		srv_reply_error(r, &err, NULL);
}

/* Runs a mutation under an Idempotency-Key (DESIGN §3): the key is claimed,
 * the handler runs, and its response (2xx or 4xx) is stored, all in one
 * transaction; a repeated key replays the stored response without running
 * anything, and 5xx and 429 outcomes are never stored.
 *
 * A table commit's claim is deferred: it rides in front of the commit's
 * first statement, its read of the table row, saving the claim a round
 * trip of its own.  That handler does nothing with an effect before that
 * statement, and nothing after it unless the key is its own (tx.c refuses
 * every use of the transaction until then); its answer is replaced by the
 * replay when the key turns out to have one. */
static void run_idempotent(struct srv_req *r, const char *key)
{
	struct fl_err err = {0};
	struct cat_idem rec = {0};
	struct cat_tx *tx = NULL;
	unsigned char fp[32];
	unsigned int fpl = 0;
	bool deferred = srv_route_claims_late(r->route);
	EVP_MD_CTX *md;

	if (!fl_uuid_is_v7(key)) {
		fl_err_set(&err, FL_ERR_BAD_REQUEST,
		           "Idempotency-Key must be a UUIDv7 (RFC 9562), got '%.60s'", key);
		goto fail;
	}
	/* The fingerprint covers what the request asks for: method, resource, body. */
	md = EVP_MD_CTX_new();
	if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(md, r->method, strlen(r->method) + 1) != 1 ||
	    EVP_DigestUpdate(md, r->raw_path, strlen(r->raw_path) + 1) != 1 ||
	    EVP_DigestUpdate(md, r->body.data ? r->body.data : "", r->body.len) != 1 ||
	    EVP_DigestFinal_ex(md, fp, &fpl) != 1) {
		EVP_MD_CTX_free(md);
		fl_err_set(&err, FL_ERR_INTERNAL, "cannot fingerprint the request");
		goto fail;
	}
	EVP_MD_CTX_free(md);
	/* Its warehouse expired from the cache (every few seconds) would be
	 * read inside the transaction, one round trip more with the claim
	 * held: it is read now, on a connection given back before the
	 * transaction takes one. */
	srv_warehouse_prefetch(r);
	if (cat_tx_begin(r->ctx->db, &tx, &err) != 0 ||
	    cat_idem_claim_defer(tx, key, r->method, r->route->path, fp,
	                         r->ctx->cfg->idempotency_lifetime, &err) != 0)
		goto fail;
	if (!deferred) {
		if (cat_idem_claimed(tx, &rec, &err) != 0)
			goto fail;
		if (rec.status != 0)
			goto replayed;
	}
	r->tx = tx;
	run_handler(r);
	r->tx = NULL;
	/* Judged before the answer is: a key with a stored response replays
	 * it, whatever the handler made of the refusal it met. */
	if (deferred) {
		if (cat_idem_claimed(tx, &rec, &err) != 0)
			goto fail;
		if (rec.status != 0)
			goto replayed;
	}
	/* A 429 did nothing and asks to come back: a retry with the same key
	 * must run, not replay the refusal. */
	if (r->status >= 500 || r->status == 429) {
		cat_tx_abort(tx);
		return;
	}
	if (cat_idem_store_commit(tx, key, (int)r->status, r->out_ctype, r->out_etag,
	                          r->idem_body ? r->idem_body : r->out_body,
	                          r->idem_body ? r->idem_len : r->out_len, r->idem_ref, &err) != 0)
		srv_reply_error(r, &err, NULL);
	return;
replayed:
	cat_tx_abort(tx);
	replay(r, &rec);
	cat_idem_free(&rec);
	return;
fail:
	cat_tx_abort(tx);
	srv_reply_error(r, &err, NULL);
}

/* The most of a body r may send, decided before any of it is read: a GET,
 * HEAD or DELETE has no use for one, and a request without valid
 * credentials (when they are required) is held to a small bound, above what
 * the token endpoint takes, so that a client without them cannot make the
 * daemon buffer max-body-bytes per connection.  A Bearer token is judged
 * here by its signature and claims (its principal later, by dispatch); one
 * refused is answered as such if the body goes over the bound. */
static void body_limit(const struct srv_httpd *h, struct srv_req *r)
{
	size_t max = (size_t)h->ctx->cfg->max_body_bytes;
	const char *auth;

	r->body_max = max;
	r->body_why = NULL;
	if (strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0 ||
	    strcmp(r->method, "DELETE") == 0) {
		if (SRV_BODYLESS_MAX < max) {
			r->body_max = SRV_BODYLESS_MAX;
			r->body_why = "for a GET, HEAD or DELETE";
		}
		return;
	}
	if (!srv_auth_enabled(h->ctx->auth) || SRV_ANON_BODY_MAX >= max)
		return;
	auth = srv_libmhd()->lookup_connection_value(r->conn, MHD_HEADER_KIND,
	                                             MHD_HTTP_HEADER_AUTHORIZATION);
	if (auth == NULL) {
		r->body_max = SRV_ANON_BODY_MAX;
		r->body_why = "without an Authorization header";
	} else if (srv_auth_token_refused(h->ctx->auth, auth, &r->token_err)) {
		r->body_max = SRV_ANON_BODY_MAX;
		r->body_why = "with a token that is refused";
	}
}

/* Routes r; an error (413, 404, 405, a malformed path) is its response. */
static void route(struct srv_req *r)
{
	struct fl_err err = {0};
	char allow[64];

	if (r->body_too_large && r->token_err.kind != FL_ERR_NONE) {
		fl_info(r->id, "auth: rejected a token: %s", r->token_err.msg);
		srv_reply_error(r, &r->token_err, NULL);
	} else if (r->body_too_large) {
		if (r->body_why != NULL)
			fl_err_set(&err, FL_ERR_TOO_LARGE,
			           "request body exceeds the limit of %zu bytes %s", r->body_max,
			           r->body_why);
		else
			fl_err_set(&err, FL_ERR_TOO_LARGE,
			           "request body exceeds the limit of %zu bytes (max-body-bytes)",
			           r->body_max);
		srv_reply_error(r, &err, NULL);
	} else if (srv_path_split(r->arena, r->raw_path, r->segs, SRV_MAX_SEGS, &r->nsegs, &err) !=
	           0) {
		srv_reply_error(r, &err, NULL);
	} else if (srv_route_match(r, allow, sizeof(allow), &err) != 0) {
		srv_reply_error(r, &err, allow);
	}
}

/* Authorizes and runs a routed request (on an HTTP thread, it may end
 * without a response: see run_handler). */
static void dispatch(struct srv_req *r)
{
	struct fl_err err = {0};
	const char *key;

	if (srv_auth_request(r, &err) != 0) {
		if (err.kind == FL_ERR_NONE)
			fl_err_set(&err, FL_ERR_INTERNAL, "authorization failed without a reason");
		if (err.kind != FL_ERR_WOULD_BLOCK)
			srv_reply_error(r, &err, NULL);
		return;
	}
	r->secret = r->secret || srv_route_carries_secrets(r->route);
	key = srv_header(r, "Idempotency-Key");
	/* Responses of the token endpoint, of the access management API and of
	 * remote signing carry a token, a secret or a signature with the
	 * server's session token, which must never be stored: those routes
	 * ignore the key (signing changes nothing, so a retry signs again). */
	if (key != NULL && mutating(r->method) && r->route->priv != SRV_PRIV_PUBLIC &&
	    r->route->priv != SRV_PRIV_ACCESS_ADMIN && r->route->handler != srv_h_tbl_sign &&
	    r->route->handler != srv_h_s3_sign)
		run_idempotent(r, key);
	else
		run_handler(r);
}

/* Suspends r's connection and queues r for a worker. */
static enum MHD_Result hand_over(struct srv_req *r)
{
	struct srv_httpd *h = r->httpd;

	atomic_fetch_add(&h->parked, 1);
	srv_libmhd()->suspend_connection(r->conn);
	pthread_mutex_lock(&h->mu);
	r->next = NULL;
	if (h->tail != NULL)
		h->tail->next = r;
	else
		h->head = r;
	h->tail = r;
	h->queued++;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	return MHD_YES;
}

/* A worker: runs what was handed over (the handler alone when it had run
 * once already, after a park), then resumes the connection, whose next
 * access-handler call queues the response.  r may end once resumed. */
static void *worker_main(void *arg)
{
	struct srv_httpd *h = arg;
	struct srv_req *r;
	bool answered = false;

	pthread_setname_np(pthread_self(), "floe-worker");
	for (;;) {
		pthread_mutex_lock(&h->mu);
		if (answered)
			h->busy--; /* counted with the next take, one lock per request */
		while (h->head == NULL && !h->quit)
			pthread_cond_wait(&h->cv, &h->mu);
		r = h->head;
		if (r != NULL && (h->head = r->next) == NULL)
			h->tail = NULL;
		if (r != NULL) {
			h->queued--;
			h->busy++;
		}
		pthread_mutex_unlock(&h->mu);
		if (r == NULL)
			return NULL;
		if (r->resumed)
			run_handler(r);
		else
			dispatch(r);
		r->worked = true;
		srv_libmhd()->resume_connection(r->conn);
		atomic_fetch_sub(&h->parked, 1);
		answered = true;
	}
}

void srv_httpd_workers(struct srv_httpd *h, unsigned *threads, unsigned *busy, unsigned *queued)
{
	pthread_mutex_lock(&h->mu);
	*threads = h->nworkers;
	*busy = h->busy;
	*queued = h->queued;
	pthread_mutex_unlock(&h->mu);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
	struct srv_httpd *h = cls;
	struct srv_req *r = *con_cls;
	enum MHD_Result ret;

	(void)version;
	fl_no_wait = true;
	if (r == NULL) {
		struct fl_arena *a = fl_arena_new();

		if (a == NULL)
			return MHD_NO;
		r = fl_arena_alloc(a, sizeof(*r));
		if (r == NULL) {
			fl_arena_free(a);
			return MHD_NO;
		}
		r->arena = a;
		r->ctx = h->ctx;
		r->conn = conn;
		r->httpd = h;
		r->method = fl_arena_strdup(a, method);
		r->raw_path = fl_arena_strdup(a, url);
		r->start_ns = fl_mono_ns();
		make_request_id(h, r);
		atomic_fetch_add(&h->active, 1);
		*con_cls = r;
		body_limit(h, r);
		if (h->ctx->cfg->response_compress_min_bytes > 0) {
			r->code_min = (size_t)h->ctx->cfg->response_compress_min_bytes;
			r->coding = fl_coding_accepted(srv_libmhd()->lookup_connection_value(
			        conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
		}
		/* A declared body over the limit is refused before it is sent; the
		 * connection closes, which costs nothing on an error path. */
		const char *cl = srv_libmhd()->lookup_connection_value(
		        conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl != NULL && strtoull(cl, NULL, 10) > (unsigned long long)r->body_max) {
			r->body_too_large = true;
			route(r);
			return r->resp ? srv_libmhd()->queue_response(conn, r->status, r->resp)
			               : MHD_NO;
		}
		return MHD_YES;
	}
	if (*upload_size > 0) {
		if (!r->body_too_large) {
			if (r->body.len + *upload_size > r->body_max) {
				r->body_too_large = true;
				fl_buf_free(&r->body);
			} else if (fl_buf_append(&r->body, upload, *upload_size) != 0) {
				return MHD_NO;
			}
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (r->worked) {
		/* Resumed by the worker that answered it. */
	} else if (r->parked) {
		/* Resumed: routed and authorized already, the handler runs again. */
		r->parked = false;
		r->resumed = true;
		run_handler(r);
		if (r->resp == NULL)
			return hand_over(r);
	} else {
		route(r);
		if (r->resp == NULL) {
			if (!srv_route_from_memory(r->route))
				return hand_over(r);
			dispatch(r);
			if (r->parked)
				return MHD_YES;
			if (r->resp == NULL)
				return hand_over(r);
		}
	}
	if (r->resp == NULL)
		return MHD_NO;
	ret = srv_libmhd()->queue_response(conn, r->status, r->resp);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct srv_httpd *h = cls;
	struct srv_req *r = *con_cls;
	int64_t ns;

	(void)conn;
	if (r == NULL)
		return;
	ns = fl_mono_ns() - r->start_ns;
	srv_metrics_request(h->ctx->metrics, srv_route_index(r->route), r->method, r->status, ns);
	if (r->out_coding != FL_CODING_IDENTITY && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		srv_metrics_coded(h->ctx->metrics, r->out_coding, r->out_len, r->out_coded_len);
	if (r->status >= 500 || toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		fl_info(r->id, "%s %s -> %u in %.1f ms%s", r->method,
		        r->route ? r->route->path : "-", r->status, (double)ns / 1e6,
		        toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? ""
		                                                   : " (connection closed early)");
	else
		fl_debug(r->id, "%s %s -> %u in %.1f ms", r->method,
		         r->route ? r->route->path : "-", r->status, (double)ns / 1e6);
	if (r->resp != NULL)
		srv_libmhd()->destroy_response(r->resp);
	cat_table_bytes_release(r->loaded.hold);
	fl_buf_free(&r->body);
	fl_arena_free(r->arena);
	*con_cls = NULL;
	atomic_fetch_sub(&h->active, 1);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	fl_warn(NULL, "http: %s", msg);
}

/* The worker threads: the setting, or by default one per pooled database
 * connection but 4, which stay for the background work (feeds, maintenance,
 * collection), and never fewer than 4.  A worker blocks for a whole commit
 * (PostgreSQL round trips and fsyncs; an idempotent request pins its
 * connection throughout), so fewer workers than connections queue requests
 * behind blocked ones while connections sit idle, and more only queue them
 * on the pool. */
static unsigned worker_threads(const struct srv_config *cfg)
{
	int64_t n = cfg->threads > 0 ? cfg->threads : cfg->db_pool_size - 4;

	return n < 4 && cfg->threads == 0 ? 4u : n > 256 ? 256u : (unsigned)n;
}

/* libmicrohttpd's threads: the setting, or one per CPU this process may
 * run on, at most 8 (they never wait, so more than the cores only adds
 * switches). */
static unsigned http_threads(const struct srv_config *cfg)
{
	cpu_set_t set;
	int n;

	if (cfg->http_threads > 0)
		return (unsigned)cfg->http_threads;
	n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
	return n < 1 ? 1u : n > 8 ? 8u : (unsigned)n;
}

/* Tells the workers to leave once the queue is empty, and joins them. */
static void workers_stop(struct srv_httpd *h)
{
	pthread_mutex_lock(&h->mu);
	h->quit = true;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	for (unsigned i = 0; i < h->nworkers; i++)
		pthread_join(h->workers[i], NULL);
	free(h->workers);
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
}

static int workers_start(struct srv_httpd *h, unsigned n, struct fl_err *err)
{
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	h->workers = calloc(n, sizeof(*h->workers));
	for (; h->workers != NULL && h->nworkers < n; h->nworkers++)
		if (pthread_create(&h->workers[h->nworkers], NULL, worker_main, h) != 0)
			break;
	if (h->nworkers == n)
		return 0;
	workers_stop(h);
	return fl_err_set(err, FL_ERR_NOMEM, "cannot start %u worker threads", n);
}

int srv_httpd_start(struct srv_ctx *ctx, struct srv_httpd **out, unsigned *port, struct fl_err *err)
{
	struct srv_httpd *h = calloc(1, sizeof(*h));
	struct sockaddr_in sa = {0};
	const union MHD_DaemonInfo *info;
	uint64_t seed;

	if (h == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (srv_libmhd_load(err) == NULL) {
		free(h);
		return -1;
	}
	h->ctx = ctx;
	if (fl_random_bytes(&seed, sizeof(seed)) != 0)
		seed = (uint64_t)fl_mono_ns() ^ (uint64_t)getpid() << 32;
	atomic_init(&h->next_id, seed);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)ctx->cfg->port);
	if (inet_pton(AF_INET, ctx->cfg->host, &sa.sin_addr) != 1) {
		free(h);
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "setting host: '%s' is not an IPv4 address", ctx->cfg->host);
	}
	if (workers_start(h, worker_threads(ctx->cfg), err) != 0) {
		free(h);
		return -1;
	}
	h->d = srv_libmhd()->start_daemon(
	        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
	        (uint16_t)ctx->cfg->port, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER,
	        mhd_log, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	        MHD_OPTION_THREAD_POOL_SIZE, http_threads(ctx->cfg), MHD_OPTION_CONNECTION_LIMIT,
	        4096u, MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
	        MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL, MHD_OPTION_NOTIFY_COMPLETED,
	        on_completed, h, MHD_OPTION_END);
	if (h->d == NULL) {
		workers_stop(h);
		free(h);
		return fl_err_set(err, FL_ERR_UNAVAILABLE, "cannot listen on %s:%lld (in use?)",
		                  ctx->cfg->host, (long long)ctx->cfg->port);
	}
	info = srv_libmhd()->get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	*port = info ? info->port : (unsigned)ctx->cfg->port;
	ctx->httpd = h;
	*out = h;
	return 0;
}

void srv_httpd_stop(struct srv_httpd *h, int64_t grace_s)
{
	int64_t until;
	MHD_socket s;

	if (h == NULL)
		return;
	/* Stop accepting, let the requests being served finish, then close.
	 * shutdown refuses new connections at once, while the descriptor
	 * stays valid: the HTTP threads drop the listening socket from their
	 * epoll sets with some delay, and libmicrohttpd says it must not be
	 * closed while in use (ThreadSanitizer saw close race epoll_ctl), so
	 * it is closed once the daemon has stopped. */
	s = srv_libmhd()->quiesce_daemon(h->d);
	if (s != MHD_INVALID_SOCKET)
		shutdown(s, SHUT_RDWR);
	atomic_store(&h->stopping, true);
	until = fl_mono_ns() + grace_s * 1000000000LL;
	while (atomic_load(&h->active) > 0 && fl_mono_ns() < until)
		usleep(10000);
	/* A suspended connection is resumed by a loader or a worker, which
	 * must not find the daemon gone; a read ends within the statement
	 * timeout, a worker's request as it would have on an HTTP thread. */
	while (atomic_load(&h->parked) > 0)
		usleep(1000);
	srv_libmhd()->stop_daemon(h->d);
	if (s != MHD_INVALID_SOCKET)
		close(s);
	workers_stop(h);
	h->ctx->httpd = NULL;
	free(h);
}
