/* h_maintenance.c - the management API of a table's maintenance:
 *   POST /management/v1/warehouses/{wh}/namespaces/{ns}/tables/{t}/maintenance
 *        {"actions": [...], "dry-run": false} queues a run and answers 202
 *        {job-id, state: "queued", actions, dry-run}: the actions may take
 *        minutes (a compaction rewrites data), so the run is never held in
 *        the request; a maintenance worker of any replica runs it.
 *   GET  the same path: the last outcome of each action on the table and its
 *        ten newest jobs (catalog/maintenance.h cat_maint_status).
 * The router requires table-write on the table for POST and table-read for
 * GET; errors are the Iceberg error model. */
#include <string.h>

#include "auth.h"
#include "handlers.h"
#include "json.h"
#include "maintenance.h"
#include "reply.h"

/* The warehouse, namespace and table of the path. */
static int path_table(struct srv_req *r, struct cat_warehouse *wh, struct cat_ns *ns,
                      struct fl_err *err)
{
	if (srv_namespace(r, r->namespace_raw, ns, err) != 0)
		return -1;
	if (srv_check_name(r, r->table != NULL ? r->table : "", "table name", err) != 0)
		return -1;
	return srv_warehouse(r, wh, err);
}

/* The actions of a MaintenanceRequest as a canonical array (new reference). */
static int parse_actions(const json_t *arr, json_t **out, struct fl_err *err)
{
	char list[128] = "";
	size_t i, len = 0;
	const json_t *a;

	if (!json_is_array(arr) || json_array_size(arr) == 0 ||
	    json_array_size(arr) > CAT_MAINT_MAX_ACTIONS)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "MaintenanceRequest: actions must be an array of 1 to %d of "
		                  "expire, orphans, compact, manifests",
		                  CAT_MAINT_MAX_ACTIONS);
	json_array_foreach(arr, i, a)
	{
		const char *s = json_string_value(a);

		if (s == NULL || !cat_maintain_known(s))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "MaintenanceRequest: actions[%zu] is not one of expire, "
			                  "orphans, compact, manifests",
			                  i);
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? "," : "", s);
	}
	return cat_maintain_actions_parse(list, out, err);
}

int srv_h_maint_request(struct srv_req *r, struct fl_err *err)
{
	struct cat_warehouse wh;
	struct cat_ns ns;
	json_t *body, *actions = NULL, *out = NULL;
	bool dry_run = false;
	const char *k;
	json_t *v;
	int rc = -1;

	if (path_table(r, &wh, &ns, err) != 0 || srv_body_json(r, &body, err) != 0)
		return -1;
	if (!json_is_object(body))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "MaintenanceRequest must be an object");
	json_object_foreach(body, k, v)
	{
		if (strcmp(k, "actions") != 0 && strcmp(k, "dry-run") != 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "MaintenanceRequest: unknown field '%.64s'", k);
	}
	if (fl_json_get_bool(body, "dry-run", false, "MaintenanceRequest", &dry_run, err) != 0 ||
	    parse_actions(json_object_get(body, "actions"), &actions, err) != 0)
		return -1;
	if (cat_maint_request(r->ctx->db, &wh, &ns, r->table, actions, dry_run, srv_actor(r), &out,
	                      err) != 0)
		goto out;
	rc = srv_reply_accepted(r, out) == 0 ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	json_decref(actions);
	json_decref(out);
	return rc;
}

int srv_h_maint_status(struct srv_req *r, struct fl_err *err)
{
	struct cat_warehouse wh;
	struct cat_ns ns;
	json_t *out = NULL;
	int rc;

	if (path_table(r, &wh, &ns, err) != 0 ||
	    cat_maint_status(r->ctx->db, &wh, &ns, r->table, &out, err) != 0)
		return -1;
	rc = srv_reply_ok(r, out) == 0 ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	json_decref(out);
	return rc;
}
