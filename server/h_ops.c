/* h_ops.c - probes, metrics and the OpenAPI document. */
#include "handlers.h"
#include "metrics.h"
#include "openapi_doc.h"
#include "reply.h"

int srv_h_healthz(struct srv_req *r, struct fl_err *err)
{
	json_t *v = json_pack("{s:s}", "status", "ok");
	int rc = srv_reply_ok(r, v);

	json_decref(v);
	return rc == 0 ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

int srv_h_readyz(struct srv_req *r, struct fl_err *err)
{
	struct fl_err why = {0};
	json_t *v;
	int rc;

	if (cat_db_ready(r->ctx->db, &why) != 0)
		rc = srv_reply_not_ready(r, why.msg);
	else {
		v = json_pack("{s:s}", "status", "ready");
		rc = srv_reply_ok(r, v);
		json_decref(v);
	}
	return rc == 0 ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

int srv_h_metrics(struct srv_req *r, struct fl_err *err)
{
	struct fl_buf b = FL_BUF_INIT;
	int rc = srv_metrics_render(r->ctx->metrics, r->ctx, &b);

	if (rc == 0)
		rc = srv_reply_bytes(r, "text/plain; version=0.0.4; charset=utf-8",
		                     b.data ? b.data : "", b.len);
	fl_buf_free(&b);
	return rc == 0 ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

int srv_h_openapi(struct srv_req *r, struct fl_err *err)
{
	/* A public route: the document is coded once, not per request. */
	static struct srv_static_coded coded;

	if (srv_reply_static(r, "application/yaml", srv_openapi_yaml, srv_openapi_yaml_len,
	                     &coded) != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	return 0;
}
