/* h_feeds.c - the management API for feeds (/management/v1/feeds): define,
 * list, show, pause, resume and delete.  Validation lives in catalog/feed.h
 * so that the CLI and the API refuse the same definitions with the same
 * words. */
#include "feed.h"
#include "handlers.h"
#include "reply.h"

/* Answers v (a new reference, consumed) with 200 or 201. */
static int answer(struct srv_req *r, json_t *v, bool created, struct fl_err *err)
{
	int rc = created ? srv_reply_created(r, v) : srv_reply_ok(r, v);

	json_decref(v);
	return rc == 0 ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

int srv_h_feed_list(struct srv_req *r, struct fl_err *err)
{
	json_t *out;

	if (cat_feed_list(r->ctx->db, &out, err) != 0)
		return -1;
	return answer(r, out, false, err);
}

int srv_h_feed_create(struct srv_req *r, struct fl_err *err)
{
	json_t *body, *out;

	if (srv_body_json(r, &body, err) != 0 ||
	    cat_feed_create(r->ctx->db, body, r->ctx->default_warehouse, &out, err) != 0)
		return -1;
	return answer(r, out, true, err);
}

int srv_h_feed_get(struct srv_req *r, struct fl_err *err)
{
	json_t *out;

	if (cat_feed_get(r->ctx->db, r->name, &out, err) != 0)
		return -1;
	return answer(r, out, false, err);
}

int srv_h_feed_pause(struct srv_req *r, struct fl_err *err)
{
	json_t *out;

	if (cat_feed_set_paused(r->ctx->db, r->name, true, &out, err) != 0)
		return -1;
	return answer(r, out, false, err);
}

int srv_h_feed_resume(struct srv_req *r, struct fl_err *err)
{
	json_t *out;

	if (cat_feed_set_paused(r->ctx->db, r->name, false, &out, err) != 0)
		return -1;
	return answer(r, out, false, err);
}

int srv_h_feed_delete(struct srv_req *r, struct fl_err *err)
{
	if (cat_feed_delete(r->ctx->db, r->name, err) != 0)
		return -1;
	return srv_reply_no_content(r) == 0 ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}
