/* h_warehouses.c - the management API for warehouses (/management/v1/). */
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "io/io.h"
#include "clock.h"
#include "json.h"
#include "maintenance.h"
#include "reply.h"
#include "router.h"
#include "whcache.h"

static int reply_json(struct srv_req *r, json_t *v, bool created, struct fl_err *err)
{
	int rc = created ? srv_reply_created(r, v) : srv_reply_ok(r, v);

	json_decref(v);
	return rc == 0 ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

int srv_h_wh_list(struct srv_req *r, struct fl_err *err)
{
	json_t *out;

	if (cat_warehouse_list(r->ctx->db, &out, err) != 0)
		return -1;
	return reply_json(r, out, false, err);
}

/* Checks that the profile reaches a working store before it is saved:
 * writes, reads back and deletes a marker object.  Any failure is the
 * client's to fix (a bucket, a key, an endpoint, a clock): 400 naming it. */
static int probe(const json_t *profile, struct fl_err *err)
{
	struct st_profile *p = calloc(1, sizeof(*p));
	struct st_io *io = NULL;
	int rc = -1;

	if (p == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (st_profile_parse(profile, p, NULL, err) != 0)
		goto out;
	if (st_io_open(p, &io, err) != 0 || st_io_probe(io, err) != 0) {
		if (err->kind != FL_ERR_NOMEM)
			err->kind = FL_ERR_BAD_REQUEST;
		fl_err_prefix(err, "storage-profile");
		goto out;
	}
	rc = 0;
out:
	st_io_release(io);
	free(p);
	return rc;
}

int srv_h_wh_create(struct srv_req *r, struct fl_err *err)
{
	json_t *body, *out;
	const char *name;

	if (srv_body_json(r, &body, err) != 0)
		return -1;
	name = json_string_value(json_object_get(body, "name"));
	if (name != NULL && srv_is_reserved_prefix(name))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "'%s' is a reserved word and cannot name a warehouse", name);
	if (json_is_object(json_object_get(body, "storage-profile")) &&
	    json_is_string(json_object_get(body, "name")) &&
	    probe(json_object_get(body, "storage-profile"), err) != 0)
		return -1;
	if (cat_warehouse_create(r->ctx->db, body, &out, err) != 0)
		return -1;
	return reply_json(r, out, true, err);
}

int srv_h_wh_get(struct srv_req *r, struct fl_err *err)
{
	json_t *out;

	if (cat_warehouse_get_json(r->ctx->db, r->name, &out, err) != 0)
		return -1;
	return reply_json(r, out, false, err);
}

int srv_h_wh_delete(struct srv_req *r, struct fl_err *err)
{
	if (cat_warehouse_delete(r->ctx->db, r->name, err) != 0)
		return -1;
	srv_whcache_clear(r->ctx->whcache);
	return srv_reply_no_content(r) == 0 ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* Warehouse properties: a string map within the configured bounds, whose
 * floe.maintenance.* defaults (catalog/maintenance.h) must make sense. */
static int check_properties(struct srv_req *r, const json_t *props, struct fl_err *err)
{
	const char *k, *v;
	json_t *val, *acts = NULL;

	if (fl_json_check_str_map(props, "UpdateWarehouseRequest: properties", err) != 0)
		return -1;
	if (json_object_size(props) > (size_t)r->ctx->cfg->max_properties)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "UpdateWarehouseRequest: more than %lld properties",
		                  (long long)r->ctx->cfg->max_properties);
	json_object_foreach((json_t *)props, k, val)
	{
		v = json_string_value(val);
		if (strlen(k) > 255)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "UpdateWarehouseRequest: properties: key '%.64s...' of %zu "
			        "bytes is over 255",
			        k, strlen(k));
		if (strlen(v) > 4096)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "UpdateWarehouseRequest: properties: value of '%.64s' is %zu "
			        "bytes, over 4096",
			        k, strlen(v));
		if (strcmp(k, "floe.maintenance.enabled") == 0 && strcmp(v, "true") != 0 &&
		    strcmp(v, "false") != 0)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "UpdateWarehouseRequest: floe.maintenance.enabled must be "
			        "true or false, got '%.40s'",
			        v);
		if (strcmp(k, "floe.maintenance.interval") == 0 && fl_duration_parse(v) <= 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "floe.maintenance.interval '%.40s' is not an ISO-8601 "
			                  "duration (e.g. P1D, PT6H)",
			                  v);
		if (strcmp(k, "floe.maintenance.actions") == 0) {
			if (cat_maintain_actions_parse(v, &acts, err) != 0)
				return fl_err_prefix(err, "floe.maintenance.actions");
			json_decref(acts);
			acts = NULL;
		}
	}
	return 0;
}

int srv_h_wh_update(struct srv_req *r, struct fl_err *err)
{
	json_t *body, *profile = NULL, *props = NULL, *out = NULL;
	const char *k;
	json_t *v;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_obj(body, "storage-profile", false, "UpdateWarehouseRequest", &profile,
	                    err) != 0 ||
	    fl_json_get_obj(body, "properties", false, "UpdateWarehouseRequest", &props, err) != 0)
		return -1;
	json_object_foreach(body, k, v)
	{
		if (strcmp(k, "storage-profile") != 0 && strcmp(k, "properties") != 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "UpdateWarehouseRequest: only storage-profile and "
			                  "properties can change, not %.64s",
			                  k);
	}
	if (profile == NULL && props == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "UpdateWarehouseRequest: give storage-profile or properties");
	if (props != NULL && check_properties(r, props, err) != 0)
		return -1;
	if (profile != NULL) {
		if (probe(profile, err) != 0 ||
		    cat_warehouse_update_profile(r->ctx->db, r->name, profile, &out, err) != 0)
			return -1;
		/* Lookups and storage handles of the old profile are not reused. */
		srv_whcache_clear(r->ctx->whcache);
	}
	if (props != NULL) {
		json_decref(out);
		out = NULL;
		if (cat_warehouse_update_properties(r->ctx->db, r->name, props, &out, err) != 0)
			return -1;
	}
	return reply_json(r, out, false, err);
}
