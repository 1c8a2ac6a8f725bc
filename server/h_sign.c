/* h_sign.c - remote signing: POST …/tables/{table}/sign (the spec's
 * RemoteSignRequest → RemoteSignResult) and the older POST /v1/aws/s3/sign
 * that PyIceberg's S3V4RestSigner calls, whose table is found from the
 * object the request names.
 *
 * Floe signs with the warehouse's own credentials, so a request is signed
 * only after st_signcheck has proven it stays inside the table (every
 * escape is a 403).  The answer carries only the headers the client must
 * add (Authorization, x-amz-date, x-amz-content-sha256 when it sent none,
 * x-amz-security-token): PyIceberg appends what it gets, so repeating a
 * header it already has would send that header twice. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "handlers.h"
#include "io/profile.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "reply.h"
#include "signcheck.h"
#include "io/sigv4.h"
#include "vend.h"

#define MAX_CLIENT_HEADERS 48

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* Client headers worth signing: stable ones the store interprets.  Hop-by-
 * hop and per-attempt headers (user-agent, amz-sdk-request, …) are left out
 * so a retry does not break the signature. */
static bool signable(const char *name)
{
	static const char *const keep[] = {
	        "content-md5", "content-type",  "content-encoding",  "content-disposition", "range",
	        "if-match",    "if-none-match", "if-modified-since", "if-unmodified-since"};

	if (strncasecmp(name, "x-amz-", 6) == 0)
		return strcasecmp(name, "x-amz-date") != 0 &&
		       strcasecmp(name, "x-amz-security-token") != 0;
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (strcasecmp(name, keep[i]) == 0)
			return true;
	return false;
}

struct sign_req {
	const char *method, *uri, *body;
	json_t *headers;
	bool body_checked; /* the check read the body: the signature binds it */
};

static int parse_body(struct srv_req *r, struct sign_req *s, struct fl_err *err)
{
	static const char what[] = "RemoteSignRequest";
	const char *region = NULL, *provider = NULL;
	json_t *body, *props = NULL, *v;
	const char *k;

	memset(s, 0, sizeof(*s));
	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_str(body, "region", true, what, &region, err) != 0 ||
	    fl_json_get_str(body, "uri", true, what, &s->uri, err) != 0 ||
	    fl_json_get_str(body, "method", true, what, &s->method, err) != 0 ||
	    fl_json_get_obj(body, "headers", true, what, &s->headers, err) != 0 ||
	    fl_json_get_obj(body, "properties", false, what, &props, err) != 0 ||
	    fl_json_get_str(body, "body", false, what, &s->body, err) != 0 ||
	    fl_json_get_str(body, "provider", false, what, &provider, err) != 0)
		return -1;
	if (provider != NULL && strcmp(provider, "s3") != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: provider '%.20s' is not supported",
		                  what, provider);
	if (json_object_size(s->headers) > MAX_CLIENT_HEADERS)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: more than %d headers", what,
		                  MAX_CLIENT_HEADERS);
	json_object_foreach(s->headers, k, v)
	{
		size_t i;
		json_t *e;

		if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > 8)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: header '%.60s' must be a list of 1 to 8 strings",
			                  what, k);
		json_array_foreach(v, i, e)
		{
			if (!json_is_string(e))
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "%s: header '%.60s' must be a list of strings",
				                  what, k);
		}
	}
	return 0;
}

/* Signs s for the table at location of wh (after the boundary check) and
 * answers the RemoteSignResult. */
static int sign_checked(struct srv_req *r, const struct cat_warehouse *wh, const struct sign_req *s,
                        struct fl_err *err)
{
	const struct st_profile *p = &wh->profile;
	struct st_sigv4_header h[ST_SIGV4_MAX_HEADERS];
	struct fl_buf auth = FL_BUF_INIT;
	struct st_creds *server = NULL;
	const char *client_sha = NULL, *payload, *token, *k,
	           *region = p->region[0] ? p->region : "us-east-1";
	char date[17], body_sha[65];
	struct st_sigv4_req req;
	struct st_url u;
	json_t *out = NULL, *hv, *v;
	size_t nh = 0;
	int rc = -1;

	if (st_url_split(s->uri, &u, err) != 0)
		return -1;
	h[nh++] = (struct st_sigv4_header){"host", u.host};
	json_object_foreach(s->headers, k, hv)
	{
		size_t i;

		if (strcasecmp(k, "x-amz-content-sha256") == 0) {
			client_sha = json_string_value(json_array_get(hv, 0));
			continue;
		}
		if (!signable(k))
			continue;
		json_array_foreach(hv, i, v)
		{
			/* Room for host and the four headers added below. */
			if (nh + 5 > sizeof(h) / sizeof(h[0])) {
				fl_err_set(err, FL_ERR_BAD_REQUEST,
				           "RemoteSignRequest: more than %zu header values to sign",
				           sizeof(h) / sizeof(h[0]) - 5);
				goto out;
			}
			h[nh++] = (struct st_sigv4_header){k, json_string_value(v)};
		}
	}
	if (s->body_checked) {
		/* A request the check judged by its body (a DeleteObjects,
		 * however its name is spelled) is signed for that body only. */
		st_sigv4_sha256_hex(s->body ? s->body : "", s->body ? strlen(s->body) : 0,
		                    body_sha);
		if (client_sha != NULL && strcmp(client_sha, body_sha) != 0) {
			fl_err_set(err, FL_ERR_FORBIDDEN,
			           "x-amz-content-sha256 of a DeleteObjects request must be the "
			           "SHA-256 of the body that was checked");
			goto out;
		}
	}
	st_sigv4_date(fl_now_ms() / 1000, date);
	if (srv_server_keys(wh, &server, err) != 0)
		goto out;
	payload = s->body_checked ? body_sha : client_sha ? client_sha : "UNSIGNED-PAYLOAD";
	h[nh++] = (struct st_sigv4_header){"x-amz-date", date};
	h[nh++] = (struct st_sigv4_header){"x-amz-content-sha256", payload};
	token = server->session_token[0] ? server->session_token : NULL;
	if (token != NULL)
		h[nh++] = (struct st_sigv4_header){"x-amz-security-token", token};
	req = (struct st_sigv4_req){.method = s->method,
	                            .path = u.path,
	                            .query = u.query,
	                            .headers = h,
	                            .n_headers = nh,
	                            .payload_hash = payload,
	                            .region = region,
	                            .service = "s3",
	                            .amz_date = date,
	                            .access_key_id = server->access_key_id,
	                            .secret_access_key = server->secret_access_key};
	if (st_sigv4_authorization(&req, &auth, err) != 0)
		goto out;
	out = json_pack("{s:s,s:{s:[s],s:[s]}}", "uri", s->uri, "headers", "Authorization",
	                auth.data, "x-amz-date", date);
	if (out == NULL)
		goto nomem;
	hv = json_object_get(out, "headers");
	if ((client_sha == NULL &&
	     json_object_set_new(hv, "x-amz-content-sha256", json_pack("[s]", payload)) != 0) ||
	    (token != NULL &&
	     json_object_set_new(hv, "x-amz-security-token", json_pack("[s]", token)) != 0))
		goto nomem;
	srv_metrics_vend(r->ctx->metrics, SRV_VEND_SIGNED);
	rc = srv_reply_ok_private(r, out) == 0 ? 0 : nomem(err);
	goto out;
nomem:
	nomem(err);
out:
	srv_server_keys_free(server);
	json_decref(out);
	fl_buf_free(&auth);
	return rc;
}

/* The boundary check for s against the table at location, for a caller
 * with the given access to its objects; when it passes, s->body_checked
 * says whether it rested on the body. */
static int check(const struct cat_warehouse *wh, const char *location, enum st_access access,
                 struct sign_req *s, struct fl_err *err)
{
	struct st_sigv4_header h[MAX_CLIENT_HEADERS * 8];
	struct st_signcheck_scope scope;
	struct st_signcheck_req req;
	struct st_s3_loc loc;
	const char *k, *ep = wh->profile.endpoint;
	char aws[128];
	json_t *hv, *v;
	size_t nh = 0;
	bool body_checked;

	if (!wh->profile.remote_signing)
		return fl_err_set(
		        err, FL_ERR_FORBIDDEN,
		        "remote signing is not enabled for warehouse '%s' (storage-profile "
		        "remote-signing)",
		        wh->name);
	if (st_s3_loc_parse(location, &loc, err) != 0)
		return -1;
	if (ep[0] == '\0') {
		snprintf(aws, sizeof(aws), "https://s3.%s.amazonaws.com",
		         wh->profile.region[0] ? wh->profile.region : "us-east-1");
		ep = aws;
	}
	json_object_foreach(s->headers, k, hv)
	{
		size_t i;

		json_array_foreach(hv, i, v)
		{
			h[nh++] = (struct st_sigv4_header){k, json_string_value(v)};
		}
	}
	scope = (struct st_signcheck_scope){&loc, ep, wh->profile.path_style, access};
	req = (struct st_signcheck_req){s->method, s->uri,  h,
	                                nh,        s->body, s->body ? strlen(s->body) : 0};
	/* Set only by a check that passes: a table that refuses the request
	 * must not unset what the one that passed said. */
	if (st_signcheck(&scope, &req, &body_checked, err) == 0) {
		s->body_checked = body_checked;
		return 0;
	}
	/* AWS without an endpoint: clients also use the global host. */
	if (ep != aws || err->kind != FL_ERR_FORBIDDEN)
		return -1;
	scope.endpoint = "https://s3.amazonaws.com";
	{
		struct fl_err first = *err;

		if (st_signcheck(&scope, &req, &body_checked, err) == 0) {
			s->body_checked = body_checked;
			return 0;
		}
		if (strstr(err->msg, "is not <bucket>.") != NULL ||
		    strstr(err->msg, "endpoint") != NULL)
			*err = first; /* the regional host's reason is the useful one */
		return -1;
	}
}

static int refused(struct srv_req *r, struct fl_err *err)
{
	srv_metrics_vend(r->ctx->metrics, SRV_VEND_REFUSED);
	fl_info(r->id, "remote signing refused: %s", err->msg);
	return -1;
}

int srv_h_tbl_sign(struct srv_req *r, struct fl_err *err)
{
	struct cat_warehouse wh;
	struct cat_ns ns;
	struct sign_req s;
	enum st_access access;
	struct cat_table_bytes t = {0};
	const char *loc;
	int rc = -1;

	/* The table's bytes come from the loadTable cache when it has them, and
	 * its location is parsed once per version: a client signs every
	 * request it sends to the store. */
	if (parse_body(r, &s, err) != 0 || srv_namespace(r, r->namespace_raw, &ns, err) != 0 ||
	    srv_warehouse(r, &wh, err) != 0 ||
	    cat_table_load_bytes(r->ctx->db, r->tx, wh.name, &ns, r->table, &t, err) != 0)
		goto out;
	if (wh.profile.type != ST_STORAGE_S3) {
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "warehouse '%s' is not on S3: there is nothing to sign", wh.name);
		goto out;
	}
	if ((loc = srv_table_location(&t, err)) == NULL)
		goto out;
	if (srv_object_access(r, wh.name, &ns, r->table, &access, err) != 0 ||
	    check(&wh, loc, access, &s, err) != 0) {
		refused(r, err);
		goto out;
	}
	rc = sign_checked(r, &wh, &s, err);
out:
	cat_table_bytes_release(t.hold);
	return rc;
}

/* The object "s3://bucket/key" a request names when its store is
 * addressed path-style (vhost false) or virtual-host style; "" when the URI
 * cannot name one that way. */
static void object_of(const struct st_url *u, bool vhost, char *out, size_t cap)
{
	const char *path = u->path + 1;
	size_t bl;

	out[0] = '\0';
	if (vhost) {
		bl = strcspn(u->host, ".:");
		if (u->host[bl] != '.')
			return;
		snprintf(out, cap, "s3://%.*s/%s", (int)bl, u->host, path);
		return;
	}
	bl = strcspn(path, "/");
	if (bl == 0 || path[bl] != '/')
		return;
	snprintf(out, cap, "s3://%s", path);
}

/* The namespace of a table found by its location, levels in the arena. */
static int ref_namespace(struct srv_req *r, const struct cat_table_ref *ref, struct cat_ns *ns,
                         struct fl_err *err)
{
	json_t *a = json_loads(ref->namespace_json, 0, NULL), *v;
	const char **lv = NULL;
	size_t i, n = json_array_size(a);
	int rc = -1;

	if (n == 0 || n > 64 || (lv = fl_arena_alloc(r->arena, n * sizeof(*lv))) == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "table at %.200s: unreadable namespace",
		           ref->location);
		goto out;
	}
	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v) ||
		    (lv[i] = fl_arena_strdup(r->arena, json_string_value(v))) == NULL) {
			fl_err_set(err, FL_ERR_INTERNAL, "table at %.200s: unreadable namespace",
			           ref->location);
			goto out;
		}
	}
	*ns = (struct cat_ns){lv, (int)n};
	rc = 0;
out:
	json_decref(a);
	return rc;
}

int srv_h_s3_sign(struct srv_req *r, struct fl_err *err)
{
	struct cat_table_ref refs[8];
	struct cat_warehouse wh, chosen;
	struct sign_req s;
	struct st_url u;
	char obj[4200];
	const char *chosen_loc = NULL;
	int found, eligible = 0;
	struct fl_err first = {0};

	if (parse_body(r, &s, err) != 0 || st_url_split(s.uri, &u, err) != 0)
		return -1;
	/* The table is the one whose location contains the object, read both
	 * ways; each candidate's own profile then decides (st_signcheck), so a
	 * request is signed only for a table it provably stays inside. */
	for (int style = 0; style < 2; style++) {
		object_of(&u, style == 1, obj, sizeof(obj));
		if (obj[0] == '\0')
			continue;
		if (cat_table_find_by_object(r->ctx->db, obj, refs, 8, &found, err) != 0)
			return -1;
		for (int i = 0; i < found; i++) {
			struct fl_err e = {0};
			enum st_access access;
			struct cat_ns ns;

			if (ref_namespace(r, &refs[i], &ns, &e) != 0 ||
			    cat_warehouse_get(r->ctx->db, NULL, refs[i].warehouse, &wh, &e) != 0 ||
			    srv_object_access(r, wh.name, &ns, refs[i].name, &access, &e) != 0 ||
			    check(&wh, refs[i].location, access, &s, &e) != 0) {
				if (first.kind == FL_ERR_NONE)
					first = e;
				continue;
			}
			if (chosen_loc != NULL && strcmp(chosen.id, wh.id) == 0 &&
			    strcmp(chosen_loc, refs[i].location) == 0)
				continue;
			if (++eligible > 1) {
				fl_err_set(err, FL_ERR_FORBIDDEN,
				           "%.200s lies in more than one table's location; use the "
				           "table's own sign endpoint",
				           s.uri);
				return refused(r, err);
			}
			chosen = wh;
			chosen_loc = fl_arena_strdup(r->arena, refs[i].location);
			if (chosen_loc == NULL)
				return nomem(err);
		}
	}
	if (eligible == 0) {
		if (first.kind != FL_ERR_NONE)
			*err = first;
		else
			fl_err_set(err, FL_ERR_FORBIDDEN,
			           "%.200s lies in no table's location: refusing to sign", s.uri);
		return refused(r, err);
	}
	return sign_checked(r, &chosen, &s, err);
}
