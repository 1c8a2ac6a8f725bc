/* h_access.c - the token endpoint (POST /v1/oauth/tokens) and the access
 * management API (/management/v1/principals, /management/v1/roles).
 *
 * The token endpoint speaks OAuth 2.0 (RFC 6749 §4.4): a form body with
 * grant_type=client_credentials, the client id and secret either in the body
 * (PyIceberg) or in HTTP Basic (DuckDB) but not both, an optional scope
 * (echoed back); errors are {"error","error_description"}.  Secrets created
 * here are returned once, in the response that creates or rotates them, and
 * are stored only as hashes.  Every change calls srv_auth_changed so that it
 * takes effect on the next request. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "access.h"
#include "auth.h"
#include "b64.h"
#include "handlers.h"
#include "json.h"
#include "jose.h"
#include "pct.h"
#include "reply.h"

#define FORM_MAX_FIELDS 16
#define FORM_MAX_BYTES 16384 /* a token request: a few fields of at most ~1,000 bytes */

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* Answers v (a new reference, consumed) with 200 or 201. */
static int answer(struct srv_req *r, json_t *v, bool created, struct fl_err *err)
{
	int rc;

	if (v == NULL)
		return nomem(err);
	rc = created ? srv_reply_created(r, v) : srv_reply_ok(r, v);
	json_decref(v);
	return rc == 0 ? 0 : nomem(err);
}

static int no_content(struct srv_req *r, struct fl_err *err)
{
	srv_auth_changed(r->ctx->auth);
	return srv_reply_no_content(r) == 0 ? 0 : nomem(err);
}

/* ---- POST /v1/oauth/tokens ---- */

struct form {
	const char *key[FORM_MAX_FIELDS];
	const char *val[FORM_MAX_FIELDS];
	int n;
};

/* Parses an application/x-www-form-urlencoded body; a repeated field is an
 * error (RFC 6749 §3.2). */
static int form_parse(struct srv_req *r, struct form *f, struct fl_err *err)
{
	const char *p = r->body.data ? r->body.data : "", *end = p + r->body.len;
	int segments = 0;

	f->n = 0;
	/* A token request is a few short fields: its body has a bound of its own. */
	if (r->body.len > FORM_MAX_BYTES)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "form body of %zu bytes is over %d",
		                  r->body.len, FORM_MAX_BYTES);
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p)), *e = amp ? amp : end;
		const char *eq = memchr(p, '=', (size_t)(e - p));
		size_t kl = (size_t)((eq ? eq : e) - p), vl = eq ? (size_t)(e - eq - 1) : 0, dn;
		char *k, *v;

		/* Empty segments ("&&") count too: each one costs a pass. */
		if (++segments > 4 * FORM_MAX_FIELDS)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "too many form fields");
		if (kl > 0) {
			if (f->n == FORM_MAX_FIELDS)
				return fl_err_set(err, FL_ERR_BAD_REQUEST, "too many form fields");
			k = fl_arena_alloc(r->arena, kl + 1);
			v = fl_arena_alloc(r->arena, vl + 1);
			if (k == NULL || v == NULL)
				return nomem(err);
			if (fl_pct_decode(p, kl, true, k, &dn, err) != 0 ||
			    fl_pct_decode(eq ? eq + 1 : "", vl, true, v, &dn, err) != 0)
				return fl_err_prefix(err, "form body");
			for (int i = 0; i < f->n; i++)
				if (strcmp(f->key[i], k) == 0)
					return fl_err_set(err, FL_ERR_BAD_REQUEST,
					                  "form field %.40s appears twice", k);
			f->key[f->n] = k;
			f->val[f->n++] = v;
		}
		p = e + (amp ? 1 : 0);
	}
	return 0;
}

static const char *form_get(const struct form *f, const char *key)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->key[i], key) == 0)
			return f->val[i];
	return NULL;
}

/* Basic credentials "id:secret" (each form-urlencoded, RFC 6749 §2.3.1). */
static int basic_parse(struct srv_req *r, const char *hdr, const char **id, const char **secret,
                       struct fl_err *err)
{
	unsigned char buf[1024];
	size_t n, dn;
	char *colon, *d;

	for (hdr += 6; *hdr == ' ';)
		hdr++;
	if (fl_b64_decode(hdr, strlen(hdr), buf, sizeof(buf) - 1, &n) != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "Basic credentials are not base64");
	buf[n] = '\0';
	if (memchr(buf, '\0', n) != NULL || (colon = strchr((char *)buf, ':')) == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "Basic credentials must be client_id:client_secret");
	*colon = '\0';
	for (int i = 0; i < 2; i++) {
		const char *s = i == 0 ? (char *)buf : colon + 1;

		d = fl_arena_alloc(r->arena, strlen(s) + 1);
		if (d == NULL)
			return nomem(err);
		/* Clients that do not form-encode send the raw text; keep it then. */
		if (fl_pct_decode(s, strlen(s), true, d, &dn, err) != 0) {
			memcpy(d, s, strlen(s) + 1);
			fl_err_clear(err);
		}
		*(i == 0 ? id : secret) = d;
	}
	return 0;
}

int srv_h_oauth_tokens(struct srv_req *r, struct fl_err *err)
{
	const char *hdr = srv_header(r, "Authorization"), *ctype = srv_header(r, "Content-Type");
	const char *grant, *id = NULL, *secret = NULL, *scope, *code = "invalid_request";
	bool basic = hdr != NULL && strncasecmp(hdr, "Basic ", 6) == 0;
	struct form f;
	json_t *out = NULL;
	int retry = 0;

	if (!srv_auth_enabled(r->ctx->auth)) {
		fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "this server runs with auth none and issues no tokens; call it without Authorization");
		goto oauth;
	}
	if (ctype != NULL && strncasecmp(ctype, "application/x-www-form-urlencoded", 33) != 0) {
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "the token request must be application/x-www-form-urlencoded");
		goto oauth;
	}
	if (form_parse(r, &f, err) != 0)
		goto oauth;
	grant = form_get(&f, "grant_type");
	if (grant == NULL) {
		fl_err_set(err, FL_ERR_BAD_REQUEST, "grant_type is required");
		goto oauth;
	}
	if (strcmp(grant, "client_credentials") != 0) {
		code = "unsupported_grant_type";
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "grant_type %.60s is not supported (client_credentials only)", grant);
		goto oauth;
	}
	if (basic) {
		if (form_get(&f, "client_secret") != NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "send the client credentials in Basic or in the body, not both");
			goto oauth;
		}
		if (basic_parse(r, hdr, &id, &secret, err) != 0)
			goto oauth;
	} else {
		id = form_get(&f, "client_id");
		secret = form_get(&f, "client_secret");
	}
	if (id == NULL || secret == NULL || id[0] == '\0') {
		code = "invalid_client";
		fl_err_set(err, FL_ERR_NOT_AUTHORIZED,
		           "client_id and client_secret are required (form body or Basic)");
		goto oauth;
	}
	if (strlen(id) > 255 || strlen(secret) > 255) {
		code = "invalid_client";
		fl_err_set(err, FL_ERR_NOT_AUTHORIZED, "unknown client or wrong secret");
		goto oauth;
	}
	scope = form_get(&f, "scope");
	if (scope == NULL || scope[0] == '\0')
		scope = "catalog";
	if (strlen(scope) > 1000 || !fl_utf8_valid(scope, strlen(scope))) {
		code = "invalid_scope";
		if (strlen(scope) > 1000)
			fl_err_set(err, FL_ERR_BAD_REQUEST, "scope of %zu bytes is over 1000",
			           strlen(scope));
		else
			fl_err_set(err, FL_ERR_BAD_REQUEST, "scope is not valid UTF-8 text");
		goto oauth;
	}
	if (srv_auth_token(r, id, secret, scope, &out, &retry, err) != 0) {
		if (err->kind == FL_ERR_NOT_AUTHORIZED || err->kind == FL_ERR_TOO_MANY_REQUESTS)
			code = "invalid_client";
		else
			return -1; /* the database or the signer failed: the error model */
		goto oauth;
	}
	if (srv_reply_token(r, out) != 0) {
		json_decref(out);
		return nomem(err);
	}
	json_decref(out);
	return 0;
oauth:
	if (srv_reply_oauth_error(r, err, code, retry, basic) != 0)
		return nomem(err);
	return 0;
}

/* ---- principals ---- */

static int check_name(const char *name, const char *what, struct fl_err *err)
{
	size_t n = strlen(name);

	if (n == 0 || n > 255 ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-") != n)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s must be 1-255 characters of A-Z a-z 0-9 . _ @ -", what);
	return 0;
}

/* The path segment at index i (management paths have fixed shapes). */
static const char *seg(struct srv_req *r, int i)
{
	return i < r->nsegs ? r->segs[i] : "";
}

int srv_h_principal_list(struct srv_req *r, struct fl_err *err)
{
	json_t *out;

	if (cat_principal_list(r->ctx->db, &out, err) != 0)
		return -1;
	return answer(r, out, false, err);
}

/* {name} of a new client (its secret is generated and returned once), or
 * {name, subject, issuer?} of an external subject (issuer defaults to
 * oidc-issuer). */
int srv_h_principal_create(struct srv_req *r, struct fl_err *err)
{
	static const char what[] = "CreatePrincipalRequest";
	const char *name = NULL, *subject = NULL, *issuer = NULL;
	char secret[64], *hash = NULL;
	json_t *body, *out = NULL;
	int rc;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_str(body, "name", true, what, &name, err) != 0 ||
	    fl_json_get_str(body, "subject", false, what, &subject, err) != 0 ||
	    fl_json_get_str(body, "issuer", false, what, &issuer, err) != 0 ||
	    check_name(name, "principal name", err) != 0)
		return -1;
	if (subject != NULL) {
		if (issuer == NULL && r->ctx->auth != NULL)
			issuer = srv_auth_external_issuer(r->ctx->auth);
		if (issuer == NULL)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "%s: an external principal needs an issuer (this server has "
			        "no oidc-issuer to default to)",
			        what);
		if (subject[0] == '\0' || strlen(subject) > 255)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: subject must be 1 to 255 bytes, got %zu", what,
			                  strlen(subject));
		if (issuer[0] == '\0' || strlen(issuer) > 255)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: issuer must be 1 to 255 bytes, got %zu", what,
			                  strlen(issuer));
		rc = cat_principal_create(r->ctx->db, name, NULL, issuer, subject, &out, err);
	} else {
		if (issuer != NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: issuer needs subject",
			                  what);
		if (cat_secret_new(secret, err) != 0 || cat_secret_hash(secret, &hash, err) != 0)
			return -1;
		rc = cat_principal_create(r->ctx->db, name, hash, NULL, NULL, &out, err);
		free(hash);
		if (rc == 0) {
			json_object_set_new(out, "client-id", json_string(name));
			json_object_set_new(out, "client-secret", json_string(secret));
		}
	}
	if (rc != 0)
		return -1;
	srv_auth_changed(r->ctx->auth);
	return answer(r, out, true, err);
}

int srv_h_principal_get(struct srv_req *r, struct fl_err *err)
{
	json_t *out;

	if (cat_principal_get(r->ctx->db, seg(r, 3), &out, err) != 0)
		return -1;
	return answer(r, out, false, err);
}

int srv_h_principal_delete(struct srv_req *r, struct fl_err *err)
{
	if (cat_principal_delete(r->ctx->db, seg(r, 3), err) != 0)
		return -1;
	return no_content(r, err);
}

int srv_h_principal_rotate(struct srv_req *r, struct fl_err *err)
{
	char secret[64], *hash = NULL;
	int rc;

	if (cat_secret_new(secret, err) != 0 || cat_secret_hash(secret, &hash, err) != 0)
		return -1;
	rc = cat_principal_rotate(r->ctx->db, seg(r, 3), hash, err);
	free(hash);
	if (rc != 0)
		return -1;
	srv_auth_changed(r->ctx->auth);
	return answer(r, json_pack("{s:s, s:s}", "client-id", seg(r, 3), "client-secret", secret),
	              false, err);
}

int srv_h_principal_roles(struct srv_req *r, struct fl_err *err)
{
	json_t *out, *v;

	if (cat_principal_get(r->ctx->db, seg(r, 3), &out, err) != 0)
		return -1;
	v = json_pack("{s:O}", "roles", json_object_get(out, "roles"));
	json_decref(out);
	return answer(r, v, false, err);
}

int srv_h_principal_assign(struct srv_req *r, struct fl_err *err)
{
	const char *role = NULL;
	json_t *body;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_str(body, "role", true, "AssignRoleRequest", &role, err) != 0 ||
	    cat_principal_role_set(r->ctx->db, seg(r, 3), role, true, err) != 0)
		return -1;
	return no_content(r, err);
}

int srv_h_principal_unassign(struct srv_req *r, struct fl_err *err)
{
	if (cat_principal_role_set(r->ctx->db, seg(r, 3), seg(r, 5), false, err) != 0)
		return -1;
	return no_content(r, err);
}

/* ---- roles and grants ---- */

int srv_h_role_list(struct srv_req *r, struct fl_err *err)
{
	json_t *out;

	if (cat_role_list(r->ctx->db, &out, err) != 0)
		return -1;
	return answer(r, out, false, err);
}

int srv_h_role_create(struct srv_req *r, struct fl_err *err)
{
	const char *name = NULL;
	json_t *body, *out;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_str(body, "name", true, "CreateRoleRequest", &name, err) != 0 ||
	    check_name(name, "role name", err) != 0 ||
	    cat_role_create(r->ctx->db, name, &out, err) != 0)
		return -1;
	return answer(r, out, true, err);
}

int srv_h_role_get(struct srv_req *r, struct fl_err *err)
{
	json_t *out;

	if (cat_role_get(r->ctx->db, seg(r, 3), &out, err) != 0)
		return -1;
	return answer(r, out, false, err);
}

int srv_h_role_delete(struct srv_req *r, struct fl_err *err)
{
	if (cat_role_delete(r->ctx->db, seg(r, 3), err) != 0)
		return -1;
	return no_content(r, err);
}

int srv_h_grant_list(struct srv_req *r, struct fl_err *err)
{
	json_t *out;

	if (cat_grant_list(r->ctx->db, seg(r, 3), &out, err) != 0)
		return -1;
	return answer(r, out, false, err);
}

/* {privilege, warehouse ("*" = all), namespace?: [levels], table?}. */
int srv_h_grant_add(struct srv_req *r, struct fl_err *err)
{
	static const char what[] = "AddGrantRequest";
	const char *priv = NULL, *wh = NULL, *table = NULL;
	json_t *body, *levels = NULL, *out, *v;
	struct cat_ns ns, *nsp = NULL;
	const char **lv;
	size_t i;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_str(body, "privilege", true, what, &priv, err) != 0 ||
	    fl_json_get_str(body, "warehouse", true, what, &wh, err) != 0 ||
	    fl_json_get_arr(body, "namespace", false, what, &levels, err) != 0 ||
	    fl_json_get_str(body, "table", false, what, &table, err) != 0)
		return -1;
	if (!srv_auth_privilege_known(priv))
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "%s: unknown privilege '%.60s' (read, write, all, catalog-read, namespace-read, namespace-create, namespace-write, namespace-drop, table-create, table-read, table-write, table-drop, warehouse-admin, access-admin, metrics)",
		        what, priv);
	if (wh[0] == '\0' || strlen(wh) > 255)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: warehouse must be a name or \"*\"",
		                  what);
	if (levels != NULL && json_array_size(levels) > 0) {
		if (strcmp(wh, "*") == 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: a namespace grant needs a named warehouse", what);
		if ((int64_t)json_array_size(levels) > r->ctx->cfg->max_namespace_levels)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: namespace has %zu levels, over the limit of %lld "
			                  "(max-namespace-levels)",
			                  what, json_array_size(levels),
			                  (long long)r->ctx->cfg->max_namespace_levels);
		lv = fl_arena_alloc(r->arena, sizeof(char *) * json_array_size(levels));
		if (lv == NULL)
			return nomem(err);
		json_array_foreach(levels, i, v)
		{
			if (!json_is_string(v) || json_string_length(v) == 0)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "%s: namespace[%zu] must be a non-empty string",
				                  what, i);
			if ((int64_t)json_string_length(v) > r->ctx->cfg->max_identifier_bytes)
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "%s: namespace[%zu] of %zu bytes exceeds the limit of "
				        "%lld (max-identifier-bytes)",
				        what, i, json_string_length(v),
				        (long long)r->ctx->cfg->max_identifier_bytes);
			lv[i] = json_string_value(v);
		}
		ns.levels = lv;
		ns.n = (int)json_array_size(levels);
		nsp = &ns;
	}
	if (table != NULL && (nsp == NULL || table[0] == '\0'))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: a table grant needs a namespace and a table name", what);
	if (table != NULL && (int64_t)strlen(table) > r->ctx->cfg->max_identifier_bytes)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: table of %zu bytes exceeds the limit of %lld "
		                  "(max-identifier-bytes)",
		                  what, strlen(table),
		                  (long long)r->ctx->cfg->max_identifier_bytes);
	if (cat_grant_add(r->ctx->db, seg(r, 3), wh, nsp, table, priv, &out, err) != 0)
		return -1;
	srv_auth_changed(r->ctx->auth);
	return answer(r, out, true, err);
}

int srv_h_grant_revoke(struct srv_req *r, struct fl_err *err)
{
	const char *s = seg(r, 5);
	char *end;
	long long id = strtoll(s, &end, 10);

	if (s[0] == '\0' || *end != '\0' || id <= 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "grant id must be a positive integer");
	if (cat_grant_revoke(r->ctx->db, seg(r, 3), id, err) != 0)
		return -1;
	return no_content(r, err);
}
