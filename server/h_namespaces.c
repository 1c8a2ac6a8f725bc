/* h_namespaces.c - the Iceberg namespace routes.
 *
 * A namespace travels in the path as its levels joined by 0x1F (sent as
 * %1F, the separator /v1/config advertises); each level is bounded by
 * max-identifier-bytes, must be valid UTF-8 and non-empty, and there are at
 * most max-namespace-levels of them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "handlers.h"
#include "io/io.h"
#include "json.h"
#include "reply.h"
#include "whcache.h"

int srv_warehouse_name(struct srv_req *r, const char **name, struct fl_err *err)
{
	*name = r->prefix ? r->prefix : r->ctx->default_warehouse;
	if (*name == NULL)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "no warehouse: use the prefix from GET /v1/config?warehouse=NAME");
	return 0;
}

/* Warehouse name from the lookup cache, or read (through tx when not NULL)
 * and cached. */
static int lookup(struct srv_req *r, const char *name, struct cat_tx *tx, struct cat_warehouse *wh,
                  struct fl_err *err)
{
	if (srv_whcache_get(r->ctx->whcache, name, wh))
		return 0;
	if (cat_warehouse_get(r->ctx->db, tx, name, wh, err) != 0)
		return -1;
	srv_whcache_put(r->ctx->whcache, wh);
	return 0;
}

int srv_warehouse(struct srv_req *r, struct cat_warehouse *wh, struct fl_err *err)
{
	const char *name;

	if (srv_warehouse_name(r, &name, err) != 0)
		return -1;
	/* A recent lookup will do (whcache.h says why that is safe), inside an
	 * idempotency transaction too: the warehouse row is not part of what
	 * the transaction changes, and a lookup through it would cost every
	 * keyed mutation one more round trip: such a mutation looked it up
	 * before its transaction began (srv_warehouse_prefetch). */
	if (r->wh_pre != NULL && strcmp(r->wh_pre->name, name) == 0) {
		*wh = *r->wh_pre;
		return 0;
	}
	return lookup(r, name, r->tx, wh, err);
}

void srv_warehouse_prefetch(struct srv_req *r)
{
	struct cat_warehouse *wh;
	struct fl_err err = {0};
	const char *name;

	if (strncmp(r->route->path, "/v1/", 4) == 0 && srv_warehouse_name(r, &name, &err) == 0 &&
	    (wh = fl_arena_alloc(r->arena, sizeof(*wh))) != NULL &&
	    lookup(r, name, NULL, wh, &err) == 0)
		r->wh_pre = wh;
}

static void io_release(void *p)
{
	st_io_release(p);
}

int srv_warehouse_io(struct srv_req *r, struct cat_warehouse *wh, struct fl_err *err)
{
	if (srv_whcache_io(r->ctx->whcache, wh, err) != 0)
		return fl_err_prefix(err, "warehouse '%.200s'", wh->name);
	if (fl_arena_defer(r->arena, io_release, wh->io) != 0) {
		st_io_release(wh->io);
		wh->io = NULL;
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	return 0;
}

static int check_level(struct srv_req *r, const char *s, size_t n, struct fl_err *err)
{
	if (n == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "namespace levels must not be empty");
	if ((int64_t)n > r->ctx->cfg->max_identifier_bytes)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "namespace level of %zu bytes exceeds the limit of %lld (max-identifier-bytes)",
		        n, (long long)r->ctx->cfg->max_identifier_bytes);
	if (!fl_utf8_valid(s, n))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "namespace level is not valid UTF-8 text");
	if (memchr(s, '\x1f', n) != NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "namespace level must not contain the unit separator U+001F "
		                  "(it separates levels in URLs)");
	return 0;
}

static int check_depth(struct srv_req *r, int n, struct fl_err *err)
{
	if (n > r->ctx->cfg->max_namespace_levels)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "namespace has %d levels, over the limit of %lld (max-namespace-levels)", n,
		        (long long)r->ctx->cfg->max_namespace_levels);
	return 0;
}

int srv_namespace(struct srv_req *r, const char *raw, struct cat_ns *ns, struct fl_err *err)
{
	const char **levels;
	int n = 1;

	for (const char *p = raw; *p; p++)
		n += *p == '\x1f';
	if (check_depth(r, n, err) != 0)
		return -1;
	levels = fl_arena_alloc(r->arena, sizeof(char *) * (size_t)n);
	if (levels == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		const char *e = strchr(raw, '\x1f');
		size_t len = e ? (size_t)(e - raw) : strlen(raw);

		if (check_level(r, raw, len, err) != 0)
			return -1;
		levels[i] = fl_arena_strndup(r->arena, raw, len);
		if (levels[i] == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		raw += len + (e ? 1 : 0);
	}
	ns->levels = levels;
	ns->n = n;
	return 0;
}

/* The warehouse and the {namespace} of the path. */
static int path_ns(struct srv_req *r, struct cat_warehouse *wh, struct cat_ns *ns,
                   struct fl_err *err)
{
	if (srv_namespace(r, r->namespace_raw, ns, err) != 0)
		return -1;
	return srv_warehouse(r, wh, err);
}

int srv_check_properties(struct srv_req *r, const json_t *props, const char *what,
                         struct fl_err *err)
{
	const char *k;
	json_t *v;

	if ((int64_t)json_object_size(props) > r->ctx->cfg->max_properties)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: %zu properties exceed the limit of %lld (max-properties)",
		                  what, json_object_size(props),
		                  (long long)r->ctx->cfg->max_properties);
	if (fl_json_check_str_map(props, what, err) != 0)
		return -1;
	json_object_foreach((json_t *)props, k, v)
	{
		if (strlen(k) == 0 || (int64_t)strlen(k) > r->ctx->cfg->max_identifier_bytes * 4)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: property keys must be 1-%lld bytes", what,
			                  (long long)r->ctx->cfg->max_identifier_bytes * 4);
	}
	return cat_property_values_check(props, what, err);
}

static int reply_or_nomem(int rc, struct fl_err *err)
{
	return rc == 0 ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

int srv_page_size(struct srv_req *r, const char *value, long *page, struct fl_err *err)
{
	char *end;
	long v;

	if (value == NULL)
		return 0;
	errno = 0;
	v = strtol(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || v < 1)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "pageSize must be a positive integer, got '%.40s'", value);
	*page = v > r->ctx->cfg->max_page_size ? (long)r->ctx->cfg->max_page_size : v;
	return 0;
}

int srv_h_ns_list(struct srv_req *r, struct fl_err *err)
{
	const char *parent = NULL, *token = NULL, *size = NULL;
	struct cat_warehouse wh;
	struct cat_ns ns = {NULL, 0};
	long page = (long)r->ctx->cfg->max_page_size;
	json_t *out;
	int rc;

	if (srv_query(r, "parent", &parent, err) != 0 ||
	    srv_query(r, "pageToken", &token, err) != 0 ||
	    srv_query(r, "pageSize", &size, err) != 0)
		return -1;
	if (srv_page_size(r, size, &page, err) != 0)
		return -1;
	if (token != NULL && token[0] == '\0')
		token = NULL; /* an empty token asks for the first page */
	if (parent != NULL && parent[0] != '\0' && srv_namespace(r, parent, &ns, err) != 0)
		return -1;
	if (srv_warehouse(r, &wh, err) != 0 ||
	    cat_namespace_list(r->ctx->db, r->tx, wh.id, &ns, token, page, &out, err) != 0)
		return -1;
	srv_auth_filter(r, wh.name, json_object_get(out, "namespaces"), false);
	if (json_is_null(json_object_get(out, "next-page-token")))
		json_object_del(out, "next-page-token");
	rc = srv_reply_ok(r, out);
	json_decref(out);
	return reply_or_nomem(rc, err);
}

int srv_h_ns_create(struct srv_req *r, struct fl_err *err)
{
	static const char what[] = "CreateNamespaceRequest";
	json_t *body, *arr = NULL, *props = NULL, *out, *v;
	struct cat_warehouse wh;
	struct cat_ns ns, parent;
	const char *whn;
	const char **levels;
	size_t i;
	int rc;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_arr(body, "namespace", true, what, &arr, err) != 0 ||
	    fl_json_get_obj(body, "properties", false, what, &props, err) != 0)
		return -1;
	if (json_array_size(arr) == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: namespace must have at least one level", what);
	if (check_depth(r, (int)json_array_size(arr), err) != 0)
		return -1;
	levels = fl_arena_alloc(r->arena, sizeof(char *) * json_array_size(arr));
	if (levels == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	json_array_foreach(arr, i, v)
	{
		if (!json_is_string(v))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: namespace levels must be strings", what);
		if (check_level(r, json_string_value(v), json_string_length(v), err) != 0)
			return -1;
		levels[i] = json_string_value(v);
	}
	ns.levels = levels;
	ns.n = (int)json_array_size(arr);
	if (props != NULL && srv_check_properties(r, props, what, err) != 0)
		return -1;
	/* Creating a namespace is a privilege on its parent (or the warehouse). */
	parent.levels = ns.levels;
	parent.n = ns.n - 1;
	if (srv_warehouse_name(r, &whn, err) != 0 ||
	    srv_authorize(r, SRV_PRIV_NAMESPACE_CREATE, whn, &parent, NULL, err) != 0)
		return -1;
	if (srv_warehouse(r, &wh, err) != 0 ||
	    cat_namespace_create(r->ctx->db, r->tx, wh.id, &ns, props, &out, err) != 0)
		return -1;
	rc = srv_reply_ok(r, out);
	json_decref(out);
	return reply_or_nomem(rc, err);
}

int srv_h_ns_load(struct srv_req *r, struct fl_err *err)
{
	struct cat_warehouse wh;
	struct cat_ns ns;
	json_t *out;
	int rc;

	if (path_ns(r, &wh, &ns, err) != 0 ||
	    cat_namespace_load(r->ctx->db, r->tx, wh.id, &ns, &out, err) != 0)
		return -1;
	rc = srv_reply_ok(r, out);
	json_decref(out);
	return reply_or_nomem(rc, err);
}

int srv_h_ns_exists(struct srv_req *r, struct fl_err *err)
{
	struct cat_warehouse wh;
	struct cat_ns ns;
	json_t *out;

	if (path_ns(r, &wh, &ns, err) != 0 ||
	    cat_namespace_load(r->ctx->db, r->tx, wh.id, &ns, &out, err) != 0)
		return -1;
	json_decref(out);
	return reply_or_nomem(srv_reply_no_content(r), err);
}

int srv_h_ns_drop(struct srv_req *r, struct fl_err *err)
{
	struct cat_warehouse wh;
	struct cat_ns ns;

	if (path_ns(r, &wh, &ns, err) != 0 ||
	    cat_namespace_drop(r->ctx->db, r->tx, wh.id, &ns, err) != 0)
		return -1;
	return reply_or_nomem(srv_reply_no_content(r), err);
}

int srv_h_ns_properties(struct srv_req *r, struct fl_err *err)
{
	static const char what[] = "UpdateNamespacePropertiesRequest";
	json_t *body, *removals = NULL, *updates = NULL, *out, *v;
	struct cat_warehouse wh;
	struct cat_ns ns;
	size_t i;
	int rc;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_arr(body, "removals", false, what, &removals, err) != 0 ||
	    fl_json_get_obj(body, "updates", false, what, &updates, err) != 0)
		return -1;
	if (removals == NULL)
		removals = json_array();
	else
		json_incref(removals);
	if (fl_arena_defer(r->arena, fl_json_decref, removals) != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (updates == NULL) {
		updates = json_object();
		if (fl_arena_defer(r->arena, fl_json_decref, updates) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	if ((int64_t)json_array_size(removals) > r->ctx->cfg->max_properties)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: %zu removals exceed the limit of %lld (max-properties)",
		                  what, json_array_size(removals),
		                  (long long)r->ctx->cfg->max_properties);
	json_array_foreach(removals, i, v)
	{
		if (!json_is_string(v))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: removals[%zu] must be a string", what, i);
	}
	if (srv_check_properties(r, updates, what, err) != 0 || path_ns(r, &wh, &ns, err) != 0 ||
	    cat_namespace_update_props(r->ctx->db, r->tx, wh.id, &ns, removals, updates,
	                               (long)r->ctx->cfg->max_properties, &out, err) != 0)
		return -1;
	rc = srv_reply_ok(r, out);
	json_decref(out);
	return reply_or_nomem(rc, err);
}
