/* srv.h - what the server's files share: the daemon context, the per-request
 * state and the handler signature.
 *
 * Lifetime: one struct srv_ctx for the process (immutable after startup,
 * except the counters in metrics); one struct srv_req per HTTP request, whose
 * arena frees everything the handler allocated when the response is sent. */
#ifndef SRV_SRV_H
#define SRV_SRV_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "arena.h"
#include "buf.h"
#include "catalog.h"
#include "err.h"
#include "settings.h"

struct srv_config {
	char *host;
	int64_t port;
	char *data_dir;
	char *database_url;
	char *warehouse;
	char *warehouse_location;
	int64_t threads;
	int64_t http_threads;
	int64_t db_pool_size;
	int64_t max_body_bytes;
	int64_t max_json_depth;
	int64_t max_identifier_bytes;
	int64_t max_namespace_levels;
	int64_t max_properties;
	int64_t max_page_size;
	int64_t max_commit_updates;
	int64_t max_commit_tables;
	int64_t max_metadata_bytes;
	int64_t idempotency_lifetime;
	char *log_level;
	char *pg_bin_dir;
	int64_t shutdown_grace;
	/* authentication and authorization (auth.h) */
	char *auth;
	char *token_signing_key;
	char *token_verify_keys;
	int64_t token_lifetime;
	char *token_issuer;
	char *token_audience;
	int64_t token_clock_skew;
	char *oidc_issuer;
	char *oidc_audience;
	char *oidc_jwks;
	int64_t oidc_jwks_refresh;
	int64_t auth_cache_ttl;
	int64_t table_cache_bytes;
	int64_t metadata_inline_max_bytes;
	int64_t response_compress_min_bytes;
	int64_t auth_max_failures;
	char *bootstrap_client_id;
	char *bootstrap_client_secret;
	int metrics_public;
	/* table maintenance (caretaker.h) */
	int64_t maintenance_workers;
	int64_t maintenance_poll;
};

/* Loads the settings table (defaults < FLOE_* env < flags from argv[*argi]). */
int srv_config_load(struct srv_config *cfg, int argc, char **argv, int *argi,
                    struct fl_err *err) FL_MUST_CHECK;
void srv_config_help(FILE *f);

/* The setting named by the len bytes at name, or NULL. */
const struct fl_setting *srv_config_find(const char *name, size_t len);
void srv_config_free(struct srv_config *cfg);

struct srv_metrics;
struct srv_route;

struct srv_ctx {
	const struct srv_config *cfg;
	struct cat_db *db;
	struct srv_metrics *metrics;
	const char *default_warehouse; /* NULL when none */
	struct srv_whcache *whcache; /* warehouse lookups; may be NULL */
	struct srv_auth *auth; /* NULL = auth none */
	struct srv_vend *vend; /* vended-credential cache (vend.h) */
	struct srv_httpd *httpd; /* set once the HTTP front runs; NULL before */
};

#define SRV_MAX_SEGS 32
/* Body limits below max-body-bytes (httpd.c body_limit): a GET, HEAD or
 * DELETE; a request without credentials where they are required (above the
 * token endpoint's own bound, h_access.c FORM_MAX_BYTES, which answers in
 * OAuth's error form). */
#define SRV_BODYLESS_MAX ((size_t)65536)
#define SRV_ANON_BODY_MAX ((size_t)65536)

struct srv_httpd;

struct srv_req {
	struct srv_ctx *ctx;
	struct fl_arena *arena;
	struct MHD_Connection *conn;
	const char *method; /* "GET", …; HEAD is served by GET handlers */
	bool head;
	const char *raw_path; /* as received, still percent-encoded */
	char id[40]; /* request id, echoed as X-Request-Id */
	char *segs[SRV_MAX_SEGS]; /* decoded path segments */
	int nsegs;
	const struct srv_route *route;
	struct cat_tx *tx; /* the idempotency transaction, or NULL */
	/* The warehouse looked up before tx began (srv_warehouse_prefetch), or NULL. */
	const struct cat_warehouse *wh_pre;
	struct srv_principal *principal; /* the caller; NULL with auth none or on public routes */
	/* Path parameters captured by the router (decoded; NULL when absent). */
	const char *prefix;
	const char *namespace_raw; /* the {namespace} segment, decoded */
	const char *table;
	const char *name;
	struct fl_buf body;
	bool body_too_large;
	/* The most of a body this request may send (httpd.c body_limit), and
	 * why it is below max-body-bytes (NULL when it is not). */
	size_t body_max;
	const char *body_why;
	struct fl_err token_err; /* why body_limit refused the token, if it did */
	int64_t start_ns;
	/* The response, built by reply.c; a copy of its body is kept so that an
	 * idempotency record can store it. */
	struct MHD_Response *resp;
	unsigned status;
	const char *out_body;
	size_t out_len;
	const char *out_ctype;
	const char *out_etag;
	/* What an idempotency record stores instead of out_body when the
	 * response carries secrets (vended credentials), so that they never
	 * reach PostgreSQL; NULL = out_body. */
	const char *idem_body;
	size_t idem_len;
	/* The content coding the client accepts best (httpd.c, from
	 * Accept-Encoding), and the smallest body worth coding (0: none is);
	 * secret: the response carries a credential, a token or a signature,
	 * and is never coded (a compressed secret beside text an attacker
	 * chooses leaks through the length: BREACH); out_coding: what the
	 * installed response went out in, out_coded_len: its body's bytes so. */
	enum fl_coding coding, out_coding;
	size_t code_min, out_coded_len;
	bool secret;
	/* Set by a commit once its 200 is made: its record keeps this metadata
	 * location instead of any body, and a replay answers from it
	 * (srv_replay_commit). */
	const char *idem_ref;
	/* A request parked while its table is read (srv_park_table_load), or
	 * handed to a worker thread (httpd.c); next links the workers' queue. */
	struct srv_httpd *httpd; /* NULL outside the HTTP front */
	bool parked, resumed, worked;
	struct srv_req *next;
	struct cat_table_bytes loaded; /* the bytes read meanwhile; hold NULL if none */
};

typedef int (*srv_handler_fn)(struct srv_req *r, struct fl_err *err);

/* Query argument `key`, percent-decoded into the arena; NULL when absent.
 * Invalid encoding is an error (FL_ERR_BAD_REQUEST). */
int srv_query(struct srv_req *r, const char *key, const char **out,
              struct fl_err *err) FL_MUST_CHECK;

/* Parks r until a loader thread has read the table (cat_table_load_queue):
 * its connection is suspended, no worker is held, and the route's handler
 * runs again once the read is over, with r->resumed set and the bytes in
 * r->loaded (hold NULL when the read found nothing or failed: the handler
 * then reads the table itself).  Returns 0; the handler returns it without
 * a response.  srv_can_park says whether r may be parked (only once, never
 * inside a transaction, never while the front is stopping). */
bool srv_can_park(const struct srv_req *r);
int srv_park_table_load(struct srv_req *r, const char *wh, const struct cat_ns *ns,
                        const char *name);

/* Request header (as sent) or NULL. */
const char *srv_header(struct srv_req *r, const char *name);

/* Parses the request body as JSON (strict; limits from the config).  The
 * value is owned by the request arena. */
int srv_body_json(struct srv_req *r, json_t **out, struct fl_err *err) FL_MUST_CHECK;

#endif
