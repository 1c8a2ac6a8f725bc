/* h_config.c - GET /v1/config: where a client learns the prefix, the
 * namespace separator and exactly which endpoints exist. */
#include <string.h>

#include "clock.h"
#include "handlers.h"
#include "pct.h"
#include "reply.h"
#include "router.h"

int srv_h_config(struct srv_req *r, struct fl_err *err)
{
	const char *name = NULL;
	struct cat_warehouse wh;
	char life[32];
	json_t *defaults = json_object(), *overrides = json_object(), *endpoints = json_array(), *v;
	int rc;

	if (srv_query(r, "warehouse", &name, err) != 0)
		goto fail;
	if (name == NULL || name[0] == '\0')
		name = r->ctx->default_warehouse;
	if (name != NULL) {
		char enc[800];

		if (cat_warehouse_get(r->ctx->db, NULL, name, &wh, err) != 0)
			goto fail;
		if (fl_pct_encode(wh.name, strlen(wh.name), enc, sizeof(enc)) < 0) {
			fl_err_set(err, FL_ERR_INTERNAL, "warehouse name too long to encode");
			goto fail;
		}
		json_object_set_new(overrides, "prefix", json_string(enc));
	}
	json_object_set_new(overrides, "namespace-separator", json_string("%1F"));
	/* PyIceberg calls the view routes only when this is set. */
	json_object_set_new(defaults, "view-endpoints-supported", json_string("true"));
	for (int i = 0; i < srv_route_count; i++) {
		const struct srv_route *rt = &srv_routes[i];
		char line[160];

		if (!rt->advertised)
			continue;
		snprintf(line, sizeof(line), "%s %s", rt->method, rt->path);
		json_array_append_new(endpoints, json_string(line));
	}
	/* Advertising the lifetime tells clients that every mutation accepts an
	 * Idempotency-Key. */
	fl_duration_format(r->ctx->cfg->idempotency_lifetime, life, sizeof(life));
	v = json_pack("{s:o, s:o, s:o, s:s}", "defaults", defaults, "overrides", overrides,
	              "endpoints", endpoints, "idempotency-key-lifetime", life);
	rc = srv_reply_ok(r, v);
	json_decref(v);
	return rc == 0 ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
fail:
	json_decref(defaults);
	json_decref(overrides);
	json_decref(endpoints);
	return -1;
}
