/* router.c - every route in one table, and the matcher.
 *
 * Matching walks the table in order; a path matches a template when each
 * literal segment is equal and each {param} segment is non-empty.  After
 * /v1/, a segment that is one of the reserved words (namespaces, tables,
 * transactions, views, config, oauth) means "no prefix", so a namespace named
 * "namespaces" is never mistaken for a warehouse. */
#include "router.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "pct.h"

/* clang-format off */
const struct srv_route srv_routes[] = {
	{"GET",    "/v1/config",                                     srv_h_config,            SRV_PRIV_AUTHENTICATED,    false},
	{"POST",   "/v1/oauth/tokens",                               srv_h_oauth_tokens,      SRV_PRIV_PUBLIC,           false},
	{"GET",    "/v1/{prefix}/namespaces",                        srv_h_ns_list,           SRV_PRIV_CATALOG_READ,     true},
	{"POST",   "/v1/{prefix}/namespaces",                        srv_h_ns_create,         SRV_PRIV_NAMESPACE_CREATE, true},
	{"GET",    "/v1/{prefix}/namespaces/{namespace}",            srv_h_ns_load,           SRV_PRIV_NAMESPACE_READ,   true},
	{"HEAD",   "/v1/{prefix}/namespaces/{namespace}",            srv_h_ns_exists,         SRV_PRIV_NAMESPACE_READ,   true},
	{"DELETE", "/v1/{prefix}/namespaces/{namespace}",            srv_h_ns_drop,           SRV_PRIV_NAMESPACE_DROP,   true},
	{"POST",   "/v1/{prefix}/namespaces/{namespace}/properties", srv_h_ns_properties,     SRV_PRIV_NAMESPACE_WRITE,  true},
	{"GET",    "/v1/{prefix}/namespaces/{namespace}/tables",     srv_h_tbl_list,          SRV_PRIV_NAMESPACE_READ,   true},
	{"POST",   "/v1/{prefix}/namespaces/{namespace}/tables",     srv_h_tbl_create,        SRV_PRIV_TABLE_CREATE,     true},
	{"POST",   "/v1/{prefix}/namespaces/{namespace}/register",   srv_h_tbl_register,      SRV_PRIV_TABLE_CREATE,     true},
	{"GET",    "/v1/{prefix}/namespaces/{namespace}/tables/{table}", srv_h_tbl_load,      SRV_PRIV_TABLE_READ,       true},
	{"HEAD",   "/v1/{prefix}/namespaces/{namespace}/tables/{table}", srv_h_tbl_exists,    SRV_PRIV_TABLE_READ,       true},
	{"POST",   "/v1/{prefix}/namespaces/{namespace}/tables/{table}", srv_h_tbl_commit,    SRV_PRIV_TABLE_WRITE,      true},
	{"DELETE", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", srv_h_tbl_drop,      SRV_PRIV_TABLE_DROP,       true},
	{"POST",   "/v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister", srv_h_tbl_unregister, SRV_PRIV_TABLE_DROP, true},
	{"POST",   "/v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics", srv_h_tbl_metrics, SRV_PRIV_TABLE_READ, true},
	{"GET",    "/v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials", srv_h_tbl_credentials, SRV_PRIV_TABLE_READ, true},
	{"POST",   "/v1/{prefix}/namespaces/{namespace}/tables/{table}/sign", srv_h_tbl_sign, SRV_PRIV_TABLE_READ, true},
	/* The table is found by the object the body names; the handler checks the caller's access to it. */
	{"POST",   "/v1/aws/s3/sign",                                srv_h_s3_sign,           SRV_PRIV_AUTHENTICATED,    false},
	{"POST",   "/v1/{prefix}/tables/rename",                     srv_h_tbl_rename,        SRV_PRIV_TABLE_WRITE,      true},
	{"GET",    "/v1/{prefix}/namespaces/{namespace}/views",      srv_h_view_list,         SRV_PRIV_NAMESPACE_READ,   true},
	{"POST",   "/v1/{prefix}/namespaces/{namespace}/views",      srv_h_view_create,       SRV_PRIV_TABLE_CREATE,     true},
	{"POST",   "/v1/{prefix}/namespaces/{namespace}/register-view", srv_h_view_register,  SRV_PRIV_TABLE_CREATE,     true},
	{"GET",    "/v1/{prefix}/namespaces/{namespace}/views/{view}", srv_h_view_load,       SRV_PRIV_TABLE_READ,       true},
	{"HEAD",   "/v1/{prefix}/namespaces/{namespace}/views/{view}", srv_h_view_exists,     SRV_PRIV_TABLE_READ,       true},
	{"POST",   "/v1/{prefix}/namespaces/{namespace}/views/{view}", srv_h_view_commit,     SRV_PRIV_TABLE_WRITE,      true},
	{"DELETE", "/v1/{prefix}/namespaces/{namespace}/views/{view}", srv_h_view_drop,       SRV_PRIV_TABLE_DROP,       true},
	{"POST",   "/v1/{prefix}/views/rename",                      srv_h_view_rename,       SRV_PRIV_TABLE_WRITE,      true},
	{"POST",   "/v1/{prefix}/transactions/commit",               srv_h_transactions,      SRV_PRIV_TABLE_WRITE,      true},
	{"GET",    "/management/v1/warehouses",                      srv_h_wh_list,           SRV_PRIV_WAREHOUSE_ADMIN,  false},
	{"POST",   "/management/v1/warehouses",                      srv_h_wh_create,         SRV_PRIV_WAREHOUSE_ADMIN,  false},
	{"GET",    "/management/v1/warehouses/{name}",               srv_h_wh_get,            SRV_PRIV_WAREHOUSE_ADMIN,  false},
	{"PUT",    "/management/v1/warehouses/{name}",               srv_h_wh_update,         SRV_PRIV_WAREHOUSE_ADMIN,  false},
	{"DELETE", "/management/v1/warehouses/{name}",               srv_h_wh_delete,         SRV_PRIV_WAREHOUSE_ADMIN,  false},
	{"GET",    "/management/v1/principals",                      srv_h_principal_list,    SRV_PRIV_ACCESS_ADMIN,     false},
	{"POST",   "/management/v1/principals",                      srv_h_principal_create,  SRV_PRIV_ACCESS_ADMIN,     false},
	{"GET",    "/management/v1/principals/{name}",               srv_h_principal_get,     SRV_PRIV_ACCESS_ADMIN,     false},
	{"DELETE", "/management/v1/principals/{name}",               srv_h_principal_delete,  SRV_PRIV_ACCESS_ADMIN,     false},
	{"POST",   "/management/v1/principals/{name}/rotate",        srv_h_principal_rotate,  SRV_PRIV_ACCESS_ADMIN,     false},
	{"GET",    "/management/v1/principals/{name}/roles",         srv_h_principal_roles,   SRV_PRIV_ACCESS_ADMIN,     false},
	{"POST",   "/management/v1/principals/{name}/roles",         srv_h_principal_assign,  SRV_PRIV_ACCESS_ADMIN,     false},
	{"DELETE", "/management/v1/principals/{name}/roles/{role}",  srv_h_principal_unassign, SRV_PRIV_ACCESS_ADMIN,    false},
	{"GET",    "/management/v1/roles",                           srv_h_role_list,         SRV_PRIV_ACCESS_ADMIN,     false},
	{"POST",   "/management/v1/roles",                           srv_h_role_create,       SRV_PRIV_ACCESS_ADMIN,     false},
	{"GET",    "/management/v1/roles/{name}",                    srv_h_role_get,          SRV_PRIV_ACCESS_ADMIN,     false},
	{"DELETE", "/management/v1/roles/{name}",                    srv_h_role_delete,       SRV_PRIV_ACCESS_ADMIN,     false},
	{"GET",    "/management/v1/roles/{name}/grants",             srv_h_grant_list,        SRV_PRIV_ACCESS_ADMIN,     false},
	{"POST",   "/management/v1/roles/{name}/grants",             srv_h_grant_add,         SRV_PRIV_ACCESS_ADMIN,     false},
	{"DELETE", "/management/v1/roles/{name}/grants/{id}",        srv_h_grant_revoke,      SRV_PRIV_ACCESS_ADMIN,     false},
	{"GET",    "/management/v1/feeds",                           srv_h_feed_list,         SRV_PRIV_WAREHOUSE_ADMIN,  false},
	{"POST",   "/management/v1/feeds",                           srv_h_feed_create,       SRV_PRIV_WAREHOUSE_ADMIN,  false},
	{"GET",    "/management/v1/feeds/{name}",                    srv_h_feed_get,          SRV_PRIV_WAREHOUSE_ADMIN,  false},
	{"DELETE", "/management/v1/feeds/{name}",                    srv_h_feed_delete,       SRV_PRIV_WAREHOUSE_ADMIN,  false},
	{"POST",   "/management/v1/feeds/{name}/pause",              srv_h_feed_pause,        SRV_PRIV_WAREHOUSE_ADMIN,  false},
	{"POST",   "/management/v1/feeds/{name}/resume",             srv_h_feed_resume,       SRV_PRIV_WAREHOUSE_ADMIN,  false},
	{"POST",   "/management/v1/feeds/{name}/replay",             srv_h_feed_replay,       SRV_PRIV_WAREHOUSE_ADMIN,  false},
	{"POST",   "/management/v1/feeds/{name}/records",            srv_h_feed_push,         SRV_PRIV_WAREHOUSE_ADMIN,  false},
	{"GET",    "/management/v1/warehouses/{prefix}/namespaces/{namespace}/tables/{table}/maintenance", srv_h_maint_status, SRV_PRIV_TABLE_READ, false},
	{"POST",   "/management/v1/warehouses/{prefix}/namespaces/{namespace}/tables/{table}/maintenance", srv_h_maint_request, SRV_PRIV_TABLE_WRITE, false},
	{"GET",    "/healthz",                                       srv_h_healthz,           SRV_PRIV_PUBLIC,           false},
	{"GET",    "/readyz",                                        srv_h_readyz,            SRV_PRIV_PUBLIC,           false},
	{"GET",    "/metrics",                                       srv_h_metrics,           SRV_PRIV_METRICS,          false},
	{"GET",    "/openapi.yaml",                                  srv_h_openapi,           SRV_PRIV_PUBLIC,           false},
};
/* clang-format on */
const int srv_route_count = (int)(sizeof(srv_routes) / sizeof(srv_routes[0]));

bool srv_route_from_memory(const struct srv_route *route)
{
	return route->handler == srv_h_tbl_load || route->handler == srv_h_tbl_exists ||
	       route->handler == srv_h_view_load || route->handler == srv_h_view_exists ||
	       route->handler == srv_h_healthz;
}

bool srv_route_carries_secrets(const struct srv_route *route)
{
	return route->priv == SRV_PRIV_ACCESS_ADMIN || route->handler == srv_h_oauth_tokens ||
	       route->handler == srv_h_tbl_credentials || route->handler == srv_h_tbl_sign ||
	       route->handler == srv_h_s3_sign;
}

bool srv_route_claims_late(const struct srv_route *route)
{
	return route->handler == srv_h_tbl_commit;
}

bool srv_is_reserved_prefix(const char *s)
{
	static const char *const words[] = {"namespaces", "tables", "transactions",
	                                    "views",      "config", "oauth"};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(s, words[i]) == 0)
			return true;
	return false;
}

int srv_path_split(struct fl_arena *a, const char *raw, char **segs, int max, int *n,
                   struct fl_err *err)
{
	const char *p = raw;
	int count = 0;

	if (*p != '/')
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "request path must start with '/'");
	if (p[1] == '\0') {
		*n = 0;
		return 0;
	}
	while (*p == '/') {
		const char *s = p + 1, *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		size_t dlen;
		char *d;

		if (len == 0)
			return fl_err_set(err, FL_ERR_NOT_FOUND, "empty path segment in %.100s",
			                  raw);
		if (count == max)
			return fl_err_set(err, FL_ERR_NOT_FOUND, "path has more than %d segments",
			                  max);
		d = fl_arena_alloc(a, len + 1);
		if (d == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		if (fl_pct_decode(s, len, false, d, &dlen, err) != 0)
			return fl_err_prefix(err, "path segment %d", count + 1);
		segs[count++] = d;
		p = s + len;
	}
	*n = count;
	return 0;
}

/* Matches one template against the segments; binds parameters into r on
 * success (and only then).  no_prefix: the path names no prefix (see the
 * top), so a {prefix} segment matches nothing.  Runs for many templates on
 * every request, so it walks each template once and stops at the first
 * segment that differs. */
static bool match_template(const char *tpl, struct srv_req *r, bool no_prefix)
{
	const char *bind_prefix = NULL, *bind_ns = NULL, *bind_table = NULL, *bind_name = NULL;
	const char *p = tpl;
	int i = 0;

	while (*p == '/') {
		const char *s = p + 1;
		size_t len;

		for (p = s; *p != '/' && *p != '\0';)
			p++;
		len = (size_t)(p - s);
		if (len == 8 && memcmp(s, "{prefix}", 8) == 0 && no_prefix)
			continue;
		if (i >= r->nsegs)
			return false;
		if (s[0] == '{') {
			if (len == 8 && memcmp(s, "{prefix}", 8) == 0)
				bind_prefix = r->segs[i];
			else if (len == 11 && memcmp(s, "{namespace}", 11) == 0)
				bind_ns = r->segs[i];
			else if ((len == 7 && memcmp(s, "{table}", 7) == 0) ||
			         (len == 6 && memcmp(s, "{view}", 6) == 0))
				bind_table = r->segs[i];
			else
				bind_name = r->segs[i];
		} else if (strncmp(s, r->segs[i], len) != 0 || r->segs[i][len] != '\0') {
			return false;
		}
		i++;
	}
	if (i != r->nsegs)
		return false;
	r->prefix = bind_prefix;
	r->namespace_raw = bind_ns;
	r->table = bind_table;
	r->name = bind_name;
	return true;
}

/* Appends ", method" (or "method" first) to the Allow list if it fits. */
static size_t allow_add(char *allow, size_t alen, size_t cap, const char *method)
{
	size_t ml = strlen(method);

	if (alen + ml + 3 >= cap)
		return alen;
	if (alen > 0) {
		memcpy(allow + alen, ", ", 2);
		alen += 2;
	}
	memcpy(allow + alen, method, ml + 1);
	return alen + ml;
}

/* Each template's segment count with its {prefix} segment (if any) and
 * without it: a request is matched only against the templates of its own
 * length, which leaves a handful of the table's to walk. */
static signed char tpl_segs[sizeof(srv_routes) / sizeof(srv_routes[0])][2];
static pthread_once_t tpl_once = PTHREAD_ONCE_INIT;

static void tpl_count(void)
{
	for (int k = 0; k < srv_route_count; k++) {
		const char *p = srv_routes[k].path;
		int n = 0, prefix = 0;

		for (; *p != '\0'; p++)
			if (*p == '/') {
				n++;
				prefix += strncmp(p + 1, "{prefix}", 8) == 0 &&
				          (p[9] == '/' || p[9] == '\0');
			}
		tpl_segs[k][0] = (signed char)n;
		tpl_segs[k][1] = (signed char)(n - prefix);
	}
}

int srv_route_match(struct srv_req *r, char *allow, size_t allow_cap, struct fl_err *err)
{
	const struct srv_route *get_route = NULL;
	size_t alen = 0;
	bool path_found = false;
	bool no_prefix = r->nsegs >= 2 && strcmp(r->segs[0], "v1") == 0 &&
	                 srv_is_reserved_prefix(r->segs[1]);

	allow[0] = '\0';
	(void)pthread_once(&tpl_once, tpl_count);
	for (int k = 0; k < srv_route_count; k++) {
		const struct srv_route *rt = &srv_routes[k];

		if (tpl_segs[k][no_prefix] != r->nsegs || !match_template(rt->path, r, no_prefix))
			continue;
		path_found = true;
		if (strcmp(rt->method, r->method) == 0) {
			r->route = rt;
			return 0;
		}
		if (strcmp(rt->method, "GET") == 0)
			get_route = rt;
		/* HEAD is served for every GET resource: list it once, after GET. */
		if (strcmp(rt->method, "HEAD") != 0)
			alen = allow_add(allow, alen, allow_cap, rt->method);
		if (strcmp(rt->method, "GET") == 0)
			alen = allow_add(allow, alen, allow_cap, "HEAD");
	}
	if (get_route != NULL && strcmp(r->method, "HEAD") == 0) {
		/* HEAD of a GET resource: run GET and send only the headers. */
		(void)match_template(get_route->path, r, no_prefix);
		r->route = get_route;
		r->head = true;
		return 0;
	}
	if (path_found)
		return fl_err_set(err, FL_ERR_METHOD_NOT_ALLOWED,
		                  "method %s is not allowed here; allowed: %s", r->method, allow);
	return fl_err_set(err, FL_ERR_NOT_FOUND, "no route for %s %.200s", r->method,
	                  r->raw_path ? r->raw_path : "(path)");
}

const char *srv_priv_name(enum srv_priv p)
{
	static const char *const names[] = {
	        [SRV_PRIV_PUBLIC] = "public",
	        [SRV_PRIV_CATALOG_READ] = "catalog-read",
	        [SRV_PRIV_NAMESPACE_READ] = "namespace-read",
	        [SRV_PRIV_NAMESPACE_CREATE] = "namespace-create",
	        [SRV_PRIV_NAMESPACE_WRITE] = "namespace-write",
	        [SRV_PRIV_NAMESPACE_DROP] = "namespace-drop",
	        [SRV_PRIV_TABLE_CREATE] = "table-create",
	        [SRV_PRIV_TABLE_READ] = "table-read",
	        [SRV_PRIV_TABLE_WRITE] = "table-write",
	        [SRV_PRIV_TABLE_DROP] = "table-drop",
	        [SRV_PRIV_WAREHOUSE_ADMIN] = "warehouse-admin",
	        [SRV_PRIV_METRICS] = "metrics",
	        [SRV_PRIV_AUTHENTICATED] = "authenticated",
	        [SRV_PRIV_ACCESS_ADMIN] = "access-admin",
	};

	if ((unsigned)p < sizeof(names) / sizeof(names[0]) && names[p] != NULL)
		return names[p];
	return "unknown";
}

void srv_routes_json(FILE *f)
{
	json_t *arr = json_array();
	char *text;

	for (int k = 0; k < srv_route_count; k++)
		json_array_append_new(arr,
		                      json_pack("{s:s, s:s, s:s, s:b}", "method",
		                                srv_routes[k].method, "path", srv_routes[k].path,
		                                "privilege", srv_priv_name(srv_routes[k].priv),
		                                "advertised", srv_routes[k].advertised));
	text = json_dumps(arr, JSON_INDENT(1));
	if (text != NULL)
		fprintf(f, "%s\n", text);
	free(text);
	json_decref(arr);
}

int srv_route_index(const struct srv_route *route)
{
	if (route == NULL)
		return srv_route_count;
	return (int)(route - srv_routes);
}
