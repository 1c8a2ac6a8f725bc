/* router.h - the route table and path handling.
 *
 * Every route Floe serves is one row of srv_routes[] in router.c: method,
 * path template, handler, required privilege, and whether /v1/config lists
 * it.  Templates use {prefix}, {namespace}, {table}, {name}; a template with
 * {prefix} also matches without that segment (the default warehouse) when
 * it starts with /v1/; the management API always names the warehouse. */
#ifndef SRV_ROUTER_H
#define SRV_ROUTER_H

#include "srv.h"

enum srv_priv {
	SRV_PRIV_PUBLIC, /* health, discovery */
	SRV_PRIV_CATALOG_READ, /* config, list namespaces */
	SRV_PRIV_NAMESPACE_READ,
	SRV_PRIV_NAMESPACE_CREATE,
	SRV_PRIV_NAMESPACE_WRITE, /* properties */
	SRV_PRIV_NAMESPACE_DROP,
	SRV_PRIV_TABLE_CREATE,
	SRV_PRIV_TABLE_READ,
	SRV_PRIV_TABLE_WRITE, /* commit, rename */
	SRV_PRIV_TABLE_DROP,
	SRV_PRIV_WAREHOUSE_ADMIN, /* management API */
	SRV_PRIV_METRICS,
	SRV_PRIV_AUTHENTICATED, /* any principal (discovery) */
	SRV_PRIV_ACCESS_ADMIN, /* principals, roles and grants */
};

struct srv_route {
	const char *method;
	const char *path; /* template, e.g. "/v1/{prefix}/namespaces/{namespace}" */
	srv_handler_fn handler;
	enum srv_priv priv;
	bool advertised; /* listed in /v1/config "endpoints" */
};

extern const struct srv_route srv_routes[];
extern const int srv_route_count;

/* Splits a raw path ("/v1/a%2Fb/x") on '/' and percent-decodes each segment
 * into the arena: {"v1", "a/b", "x"}.  The path must start with '/'; empty
 * segments (a doubled or trailing '/') and more than max segments are errors,
 * as is invalid percent-encoding. */
int srv_path_split(struct fl_arena *a, const char *raw, char **segs, int max, int *n,
                   struct fl_err *err) FL_MUST_CHECK;

/* Finds the route for method + segments and binds its parameters into r.
 * FL_ERR_NOT_FOUND when no template matches the path; FL_ERR_METHOD_NOT_ALLOWED
 * when the path matches with another method (allow receives "GET, POST"). */
int srv_route_match(struct srv_req *r, char *allow, size_t allow_cap,
                    struct fl_err *err) FL_MUST_CHECK;

/* The privilege's name as grants and `floe routes` spell it ("table-read"). */
const char *srv_priv_name(enum srv_priv p);

/* Prints the route table as JSON [{method, path, privilege, advertised}]
 * (`floe routes --json`), so tests can cover every route. */
void srv_routes_json(FILE *f);

/* Whether the route is usually answered from memory, and so is run on the
 * HTTP thread that read it (httpd.c): loadTable and tableExists, from the
 * table cache, and the liveness probe.  Any route may be given; every other goes to a worker. */
bool srv_route_from_memory(const struct srv_route *route);

/* Whether the route's answers carry a token, a client secret, a signature or
 * storage credentials: the token endpoint, remote signing, GET …/credentials
 * and the access management API.  They are never content-coded (reply.c;
 * a loadTable that vends credentials is marked where it does). */
bool srv_route_carries_secrets(const struct srv_route *route);

/* Whether the route's Idempotency-Key claim may wait for the route's first
 * statement and ride with it (httpd.c, cat_idem_claim_defer): a table
 * commit, whose first act with an effect is its read of the table row, or
 * its pointer move when it holds the row's version. */
bool srv_route_claims_late(const struct srv_route *route);

/* Index of r->route in srv_routes (for metrics); srv_route_count when none. */
int srv_route_index(const struct srv_route *route);

/* True for the words that follow /v1/ in prefix-less routes; such names
 * cannot be warehouse names. */
bool srv_is_reserved_prefix(const char *s);

#endif
