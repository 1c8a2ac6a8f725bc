/* h_feeds.c - the management API for feeds (/management/v1/feeds): define,
 * list, show, pause, resume, delete, and push records.  Validation lives in
 * catalog/feed.h so that the CLI and the API refuse the same definitions
 * with the same words.
 *
 * A push is durable before its 202: the body is spooled in PostgreSQL (in
 * the Idempotency-Key's transaction when the request has one) and the feed's
 * worker group-commits what waits at each interval.  A full spool is a 429
 * with Retry-After (the feed's interval) and is never stored under the key. */
#include <string.h>
#include <strings.h>

#include "feed.h"
#include "handlers.h"
#include "json.h"
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

int srv_h_feed_replay(struct srv_req *r, struct fl_err *err)
{
	json_t *body = NULL, *empty = NULL, *out;
	int rc;

	/* No body replays everything missing from the ledger. */
	if (r->body.len > 0) {
		if (srv_body_json(r, &body, err) != 0)
			return -1;
	} else if ((body = empty = json_object()) == NULL) {
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	rc = cat_feed_replay(r->ctx->db, r->name, body, &out, err);
	json_decref(empty);
	return rc == 0 ? answer(r, out, false, err) : -1;
}

/* The spooled format of a Content-Type: "text/csv" or "application/x-ndjson"
 * (parameters such as charset=utf-8 are allowed); NULL when unsupported. */
static const char *push_format(const char *ct)
{
	static const struct {
		const char *type, *spooled;
	} types[] = {
	        {"text/csv", "text/csv"},
	        {"application/x-ndjson", "application/x-ndjson"},
	        {"application/ndjson", "application/x-ndjson"},
	        {"application/jsonl", "application/x-ndjson"},
	};
	size_t n;

	if (ct == NULL)
		return NULL;
	n = strcspn(ct, "; \t");
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i].type) == n && strncasecmp(ct, types[i].type, n) == 0)
			return types[i].spooled;
	return NULL;
}

int srv_h_feed_push(struct srv_req *r, struct fl_err *err)
{
	const char *fmt = push_format(srv_header(r, "Content-Type"));
	const char *body = r->body.data ? r->body.data : "";
	struct cat_feed_push res;
	json_t *out;
	int rc;

	if (fmt == NULL)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "Content-Type must be text/csv or application/x-ndjson, got '%.80s'",
		        srv_header(r, "Content-Type") ? srv_header(r, "Content-Type") : "(none)");
	if (r->body.len == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "the request body holds no records");
	if (memchr(body, '\0', r->body.len) != NULL || !fl_utf8_valid(body, r->body.len))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "the request body must be UTF-8 text without NUL bytes");
	if (cat_feed_spool_add(r->ctx->db, r->tx, r->name, fmt, body, r->body.len,
	                       srv_header(r, "Idempotency-Key"), &res, err) != 0)
		return -1;
	if (res.full) {
		fl_err_set(err, FL_ERR_TOO_MANY_REQUESTS,
		           "feed '%.128s': the spool holds %lld bytes waiting to be committed"
		           " (spool-max-bytes); retry after the next commit",
		           r->name, (long long)res.spooled_bytes);
		srv_reply_error_retry(r, err, (int)res.interval_s);
		return 0;
	}
	out = json_pack("{s:s, s:I, s:b, s:I}", "feed", r->name, "accepted-bytes",
	                (json_int_t)(res.duplicate ? 0 : r->body.len), "duplicate", res.duplicate,
	                "spooled-bytes", (json_int_t)res.spooled_bytes);
	if (out == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	rc = srv_reply_accepted(r, out);
	json_decref(out);
	return rc == 0 ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}
