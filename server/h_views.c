/* h_views.c - the Iceberg view routes: list, create, register, load,
 * exists, replace (commit), drop and rename.
 *
 * Views live beside tables (one name space per namespace) and are
 * authorized with the table privileges of the same resource.  Responses are
 * LoadViewResult {metadata-location, metadata, config} around the stored
 * metadata JSON. */
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "json.h"
#include "reply.h"

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* The warehouse, namespace and view of the path. */
static int path_view(struct srv_req *r, struct cat_warehouse *wh, struct cat_ns *ns,
                     struct fl_err *err)
{
	if (srv_namespace(r, r->namespace_raw, ns, err) != 0 ||
	    (r->table != NULL && srv_check_name(r, r->table, "view name", err) != 0))
		return -1;
	return srv_warehouse(r, wh, err);
}

/* 200 LoadViewResult; mloc and metadata are freed. */
static int reply_view(struct srv_req *r, char *mloc, char *metadata, struct fl_err *err)
{
	json_t *meta = json_loads(metadata, 0, NULL), *out = NULL;
	int rc = -1;

	if (meta == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "stored view metadata is not JSON");
		goto out;
	}
	out = json_pack("{s:s, s:O, s:{}}", "metadata-location", mloc, "metadata", meta, "config");
	if (out == NULL || srv_reply_ok(r, out) != 0) {
		nomem(err);
		goto out;
	}
	rc = 0;
out:
	json_decref(out);
	json_decref(meta);
	free(mloc);
	free(metadata);
	return rc;
}

int srv_h_view_list(struct srv_req *r, struct fl_err *err)
{
	return srv_list_entries(r, true, err);
}

int srv_h_view_create(struct srv_req *r, struct fl_err *err)
{
	static const char what[] = "CreateViewRequest";
	json_t *body, *v = NULL;
	const char *name = NULL, *loc = NULL;
	char *mloc = NULL, *meta = NULL;
	struct cat_warehouse wh;
	struct cat_ns ns;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_str(body, "name", true, what, &name, err) != 0 ||
	    fl_json_get_str(body, "location", false, what, &loc, err) != 0 ||
	    fl_json_get_obj(body, "schema", true, what, &v, err) != 0 ||
	    fl_json_get_obj(body, "view-version", true, what, &v, err) != 0 ||
	    srv_check_name(r, name, "view name", err) != 0)
		return -1;
	v = NULL;
	if (fl_json_get_obj(body, "properties", false, what, &v, err) != 0)
		return -1;
	if (v != NULL && srv_check_properties(r, v, what, err) != 0)
		return -1;
	if (path_view(r, &wh, &ns, err) != 0 || srv_warehouse_io(r, &wh, err) != 0 ||
	    cat_view_create(r->ctx->db, r->tx, &wh, &ns, body, &mloc, &meta, err) != 0)
		return -1;
	return reply_view(r, mloc, meta, err);
}

/* The path's view as the cache's bytes: on an HTTP thread a view that is
 * not cached is FL_ERR_WOULD_BLOCK (the read would wait), and a worker reads
 * it (views are loaded far less often than tables: no parked batch). */
static int load(struct srv_req *r, struct cat_table_bytes *t, struct fl_err *err)
{
	struct cat_ns ns;
	const char *wh;

	if (srv_namespace(r, r->namespace_raw, &ns, err) != 0 ||
	    srv_check_name(r, r->table, "view name", err) != 0 ||
	    srv_warehouse_name(r, &wh, err) != 0)
		return -1;
	return cat_view_load_bytes(r->ctx->db, r->tx, wh, &ns, r->table, t, err);
}

int srv_h_view_register(struct srv_req *r, struct fl_err *err)
{
	static const char what[] = "RegisterViewRequest";
	const char *name = NULL, *mloc = NULL;
	struct cat_limits lim = {(size_t)r->ctx->cfg->max_commit_updates,
	                         (size_t)r->ctx->cfg->max_metadata_bytes};
	struct cat_warehouse wh;
	struct cat_ns ns;
	char *meta = NULL, *loc;
	json_t *body;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_str(body, "name", true, what, &name, err) != 0 ||
	    fl_json_get_str(body, "metadata-location", true, what, &mloc, err) != 0 ||
	    srv_check_name(r, name, "view name", err) != 0 || path_view(r, &wh, &ns, err) != 0 ||
	    srv_warehouse_io(r, &wh, err) != 0 ||
	    cat_view_register(r->ctx->db, r->tx, &wh, &ns, name, mloc, &lim, &meta, err) != 0)
		return -1;
	loc = strdup(mloc);
	if (loc == NULL) {
		free(meta);
		return nomem(err);
	}
	return reply_view(r, loc, meta, err);
}

int srv_h_view_load(struct srv_req *r, struct fl_err *err)
{
	struct cat_table_bytes t = {0};

	if (load(r, &t, err) != 0)
		return -1;
	if (srv_reply_codes_later(r, &t, true)) {
		cat_table_bytes_release(t.hold);
		return fl_err_set(err, FL_ERR_WOULD_BLOCK,
		                  "the view's coded answer is made by a worker");
	}
	/* The cache's block is the whole LoadViewResult: sent without a copy. */
	if (srv_reply_table_held(r, &t, NULL) != 0) {
		cat_table_bytes_release(t.hold);
		return nomem(err);
	}
	return 0;
}

int srv_h_view_exists(struct srv_req *r, struct fl_err *err)
{
	struct cat_table_bytes t = {0};

	if (load(r, &t, err) != 0)
		return -1;
	cat_table_bytes_release(t.hold);
	return srv_reply_no_content(r) == 0 ? 0 : nomem(err);
}

int srv_h_view_commit(struct srv_req *r, struct fl_err *err)
{
	static const char what[] = "CommitViewRequest";
	struct cat_limits lim = {(size_t)r->ctx->cfg->max_commit_updates,
	                         (size_t)r->ctx->cfg->max_metadata_bytes};
	struct cat_change ch = {0};
	struct cat_warehouse wh;
	json_t *body, *reqs = NULL, *ups = NULL, *id = NULL;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_obj(body, "identifier", false, what, &id, err) != 0 ||
	    fl_json_get_arr(body, "requirements", false, what, &reqs, err) != 0 ||
	    fl_json_get_arr(body, "updates", true, what, &ups, err) != 0 ||
	    path_view(r, &wh, &ch.ns, err) != 0 || srv_warehouse_io(r, &wh, err) != 0)
		return -1;
	ch.name = r->table;
	ch.requirements = reqs != NULL ? reqs : json_array();
	ch.updates = ups;
	if (reqs == NULL && ch.requirements == NULL)
		return nomem(err);
	if (cat_view_commit(r->ctx->db, r->tx, &wh, &ch, &lim, err) != 0) {
		if (reqs == NULL)
			json_decref((json_t *)ch.requirements);
		return -1;
	}
	if (reqs == NULL)
		json_decref((json_t *)ch.requirements);
	return reply_view(r, ch.metadata_location, ch.metadata, err);
}

int srv_h_view_drop(struct srv_req *r, struct fl_err *err)
{
	struct cat_warehouse wh;
	struct cat_ns ns;

	if (path_view(r, &wh, &ns, err) != 0 ||
	    cat_view_drop(r->ctx->db, r->tx, wh.id, &ns, r->table, err) != 0)
		return -1;
	return srv_reply_no_content(r) == 0 ? 0 : nomem(err);
}

int srv_h_view_rename(struct srv_req *r, struct fl_err *err)
{
	return srv_rename_entry(r, true, err);
}
