/* rest.c - the Iceberg REST client, over http1.c for an http:// catalog
 * and libcurl for any other.
 *
 * Paths are built as the spec says: /v1/{prefix}/namespaces/{levels joined
 * by %1F, each percent-encoded}/tables/{name}.  Error bodies are read as the
 * Iceberg error model; the status decides the error kind, so a caller can
 * tell "definitely not applied" (409, 4xx) from "maybe applied" (5xx, a
 * connection lost after sending). */
#include "rest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "http1.h"
#include "io/libcurl.h"
#include "json.h"
#include "pct.h"

struct st_rest {
	/* An http:// catalog is reached by h1 (http1.h says why), any other by
	 * libcurl: exactly one of h1 and curl is set. */
	struct st_http1 *h1;
	const struct st_libcurl *cu;
	CURL *curl;
	char *base; /* uri + "/v1/" + prefix segment (with trailing '/') */
	char *auth; /* "Authorization: Bearer …" or NULL */
	json_t *storage; /* storage settings of the last table response, or NULL */
};

static size_t collect(char *p, size_t size, size_t n, void *arg)
{
	struct fl_buf *b = arg;

	if (b->len + size * n > (64u << 20) || fl_buf_append(b, p, size * n) != 0)
		return 0;
	return size * n;
}

/* Sends one request; *status is the HTTP status; body holds the response. */
static int request(struct st_rest *c, const char *method, const char *url, const json_t *body,
                   const char *idem, long *status, struct fl_buf *out, bool *sent,
                   struct fl_err *err)
{
	const struct st_libcurl *cu = c->cu;
	struct curl_slist *h = NULL;
	/* A hint the catalog may ignore: credentials for the table's storage. */
	const char *hdr[5] = {"Accept: application/json",
	                      "X-Iceberg-Access-Delegation: vended-credentials"};
	char *payload = NULL, idem_h[128];
	size_t nh = 2;
	CURLcode cc;
	int rc = -1;

	*sent = false;
	fl_buf_reset(out);
	if (c->auth != NULL)
		hdr[nh++] = c->auth;
	if (idem != NULL) {
		snprintf(idem_h, sizeof(idem_h), "Idempotency-Key: %s", idem);
		hdr[nh++] = idem_h;
	}
	if (body != NULL) {
		payload = fl_json_dump(body, NULL);
		if (payload == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		hdr[nh++] = "Content-Type: application/json";
	}
	if (c->h1 != NULL) {
		struct st_http1_request r = {
		        .method = method,
		        .url = url,
		        .headers = hdr,
		        .nheaders = nh,
		        .body = payload,
		        .body_len = payload != NULL ? strlen(payload) : 0,
		        .retry_safe = strcmp(method, "GET") == 0 || idem != NULL,
		};

		rc = st_http1_do(c->h1, &r, status, out, sent, err);
		free(payload);
		return rc;
	}
	cu->easy_reset(c->curl);
	cu->easy_setopt(c->curl, CURLOPT_URL, url);
	cu->easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	cu->easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, collect);
	cu->easy_setopt(c->curl, CURLOPT_WRITEDATA, out);
	cu->easy_setopt(c->curl, CURLOPT_TIMEOUT, 120L);
	cu->easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
	cu->easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	for (size_t i = 0; i < nh; i++) {
		struct curl_slist *t = cu->slist_append(h, hdr[i]);

		if (t == NULL) {
			fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			goto out;
		}
		h = t;
	}
	if (payload != NULL)
		cu->easy_setopt(c->curl, CURLOPT_POSTFIELDS, payload);
	cu->easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
	cc = cu->easy_perform(c->curl);
	if (cc != CURLE_OK) {
		/* Connecting failed: nothing was sent.  Later failures: it may have been. */
		*sent = cc != CURLE_COULDNT_CONNECT && cc != CURLE_COULDNT_RESOLVE_HOST;
		fl_err_set(err, FL_ERR_UNAVAILABLE, "%s %s: %s", method, url,
		           cu->easy_strerror(cc));
		goto out;
	}
	*sent = true;
	cu->easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
	rc = 0;
out:
	cu->slist_free_all(h);
	free(payload);
	return rc;
}

/* The server's error message, or the status. */
static int http_error(long status, const struct fl_buf *b, enum fl_err_kind kind,
                      struct fl_err *err)
{
	json_t *v = b->len ? json_loadb(b->data, b->len, 0, NULL) : NULL;
	const char *msg =
	        json_string_value(json_object_get(json_object_get(v, "error"), "message"));
	const char *type = json_string_value(json_object_get(json_object_get(v, "error"), "type"));

	fl_err_set(err, kind, "catalog answered %ld %s: %s", status, type ? type : "",
	           msg ? msg : "(no message)");
	json_decref(v);
	return -1;
}

static char *table_url(struct st_rest *c, const char *const *ns, int n, const char *name)
{
	struct fl_buf b = FL_BUF_INIT;
	char enc[1024];

	if (fl_buf_printf(&b, "%snamespaces/", c->base) != 0)
		goto fail;
	for (int i = 0; i < n; i++) {
		if (fl_pct_encode(ns[i], strlen(ns[i]), enc, sizeof(enc)) < 0 ||
		    fl_buf_printf(&b, "%s%s", i ? "%1F" : "", enc) != 0)
			goto fail;
	}
	if (fl_buf_puts(&b, "/tables") != 0)
		goto fail;
	if (name != NULL && (fl_pct_encode(name, strlen(name), enc, sizeof(enc)) < 0 ||
	                     fl_buf_printf(&b, "/%s", enc) != 0))
		goto fail;
	return fl_buf_steal(&b);
fail:
	fl_buf_free(&b);
	return NULL;
}

int st_rest_open(const char *uri, const char *warehouse, const char *token, struct st_rest **out,
                 struct fl_err *err)
{
	struct st_rest *c = calloc(1, sizeof(*c));
	struct fl_buf b = FL_BUF_INIT, url = FL_BUF_INIT;
	char enc[512];
	const char *prefix;
	json_t *cfg = NULL;
	long status = 0;
	bool sent;
	size_t ul = strlen(uri);

	if (c == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	while (ul > 0 && uri[ul - 1] == '/')
		ul--;
	if (st_http1_usable(uri)) {
		if (st_http1_open(uri, &c->h1, err) != 0)
			goto fail;
	} else {
		if ((c->cu = st_libcurl_load(err)) == NULL)
			goto fail;
		c->curl = c->cu->easy_init();
		if (c->curl == NULL) {
			fl_err_set(err, FL_ERR_NOMEM, "cannot start libcurl");
			goto fail;
		}
	}
	if (token != NULL && token[0] != '\0') {
		size_t n = strlen(token) + 32;

		c->auth = malloc(n);
		if (c->auth == NULL)
			goto nomem;
		snprintf(c->auth, n, "Authorization: Bearer %s", token);
	}
	if (fl_buf_printf(&url, "%.*s/v1/config", (int)ul, uri) != 0)
		goto nomem;
	if (warehouse != NULL && warehouse[0] != '\0') {
		if (fl_pct_encode(warehouse, strlen(warehouse), enc, sizeof(enc)) < 0 ||
		    fl_buf_printf(&url, "?warehouse=%s", enc) != 0)
			goto nomem;
	}
	if (request(c, "GET", url.data, NULL, NULL, &status, &b, &sent, err) != 0)
		goto fail;
	if (status != 200) {
		http_error(status, &b,
		           status == 404 ? FL_ERR_NO_SUCH_WAREHOUSE : FL_ERR_BAD_REQUEST, err);
		goto fail;
	}
	cfg = json_loadb(b.data, b.len, 0, NULL);
	prefix = json_string_value(json_object_get(json_object_get(cfg, "overrides"), "prefix"));
	if (prefix == NULL)
		prefix = json_string_value(
		        json_object_get(json_object_get(cfg, "defaults"), "prefix"));
	fl_buf_reset(&url);
	if (fl_buf_printf(&url, "%.*s/v1/%s%s", (int)ul, uri, prefix ? prefix : "",
	                  prefix ? "/" : "") != 0)
		goto nomem;
	c->base = fl_buf_steal(&url);
	json_decref(cfg);
	fl_buf_free(&b);
	*out = c;
	return 0;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
fail:
	json_decref(cfg);
	fl_buf_free(&b);
	fl_buf_free(&url);
	st_rest_close(c);
	return -1;
}

void st_rest_close(struct st_rest *c)
{
	if (c == NULL)
		return;
	st_http1_close(c->h1);
	if (c->curl != NULL)
		c->cu->easy_cleanup(c->curl);
	free(c->base);
	free(c->auth);
	json_decref(c->storage);
	free(c);
}

json_t *st_rest_pick_credentials(const json_t *creds, const char *location)
{
	const json_t *best = NULL, *e;
	size_t best_len = 0, i;

	json_array_foreach((json_t *)creds, i, e)
	{
		const char *p = json_string_value(json_object_get(e, "prefix"));
		size_t pl = p ? strlen(p) : 0;

		if (p == NULL || !json_is_object(json_object_get(e, "config")) ||
		    strncmp(location, p, pl) != 0 ||
		    (pl > 0 && p[pl - 1] != '/' && location[pl] != '\0' && location[pl] != '/'))
			continue;
		if (best == NULL || pl > best_len) {
			best = e;
			best_len = pl;
		}
	}
	return best ? json_object_get(best, "config") : NULL;
}

/* config overlaid with the best storage credential for location. */
static json_t *storage_of(const json_t *result, const char *location)
{
	json_t *cfg = json_object_get(result, "config"), *out = json_object(), *pick;

	if (out == NULL)
		return NULL;
	if (json_is_object(cfg))
		json_object_update(out, cfg);
	pick = st_rest_pick_credentials(json_object_get(result, "storage-credentials"),
	                                location ? location : "");
	if (pick != NULL)
		json_object_update(out, pick);
	return out;
}

json_t *st_rest_storage(struct st_rest *c)
{
	return c->storage ? json_incref(c->storage) : json_object();
}

/* Parses a LoadTableResult / CommitTableResponse body; a load or create
 * answer's storage settings replace the client's. */
static int table_result(struct st_rest *c, const struct fl_buf *b, json_t **metadata, char **mloc,
                        struct fl_err *err)
{
	json_t *v = json_loadb(b->data ? b->data : "", b->len, 0, NULL);
	json_t *m = json_object_get(v, "metadata");
	const char *loc = json_string_value(json_object_get(v, "metadata-location"));

	if (!json_is_object(m)) {
		json_decref(v);
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "catalog response has no metadata");
	}
	if (json_object_get(v, "config") != NULL ||
	    json_object_get(v, "storage-credentials") != NULL) {
		json_t *st = storage_of(v, json_string_value(json_object_get(m, "location")));

		if (st != NULL) {
			json_decref(c->storage);
			c->storage = st;
		}
	}
	*metadata = json_incref(m);
	*mloc = loc ? strdup(loc) : NULL;
	json_decref(v);
	return 0;
}

int st_rest_load_table(struct st_rest *c, const char *const *ns, int nlevels, const char *name,
                       json_t **metadata, char **metadata_location, struct fl_err *err)
{
	struct fl_buf b = FL_BUF_INIT;
	char *url = table_url(c, ns, nlevels, name);
	long status = 0;
	bool sent;
	int rc = -1;

	if (url == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (request(c, "GET", url, NULL, NULL, &status, &b, &sent, err) != 0)
		goto out;
	if (status == 200)
		rc = table_result(c, &b, metadata, metadata_location, err);
	else
		http_error(status, &b, status == 404 ? FL_ERR_NO_SUCH_TABLE : FL_ERR_BAD_REQUEST,
		           err);
out:
	free(url);
	fl_buf_free(&b);
	return rc;
}

int st_rest_create_table(struct st_rest *c, const char *const *ns, int nlevels, const char *name,
                         const json_t *schema, const json_t *properties, json_t **metadata,
                         char **metadata_location, struct fl_err *err)
{
	struct fl_buf b = FL_BUF_INIT;
	char *url = table_url(c, ns, nlevels, NULL);
	json_t *body = json_pack("{s:s, s:O}", "name", name, "schema", schema);
	long status = 0;
	bool sent;
	int rc = -1;

	if (url == NULL || body == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (properties != NULL)
		json_object_set(body, "properties", (json_t *)properties);
	if (request(c, "POST", url, body, NULL, &status, &b, &sent, err) != 0)
		goto out;
	if (status == 200)
		rc = table_result(c, &b, metadata, metadata_location, err);
	else
		http_error(status, &b,
		           status == 409   ? FL_ERR_ALREADY_EXISTS
		           : status == 404 ? FL_ERR_NO_SUCH_NAMESPACE
		                           : FL_ERR_BAD_REQUEST,
		           err);
out:
	free(url);
	json_decref(body);
	fl_buf_free(&b);
	return rc;
}

int st_rest_commit(struct st_rest *c, const char *const *ns, int nlevels, const char *name,
                   const json_t *requirements, const json_t *updates, const char *idempotency_key,
                   json_t **metadata, char **metadata_location, struct fl_err *err)
{
	struct fl_buf b = FL_BUF_INIT;
	char *url = table_url(c, ns, nlevels, name);
	json_t *body = json_pack("{s:O, s:O}", "requirements", requirements, "updates", updates);
	long status = 0;
	bool sent = false;
	int rc = -1;

	if (url == NULL || body == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (request(c, "POST", url, body, idempotency_key, &status, &b, &sent, err) != 0) {
		if (sent)
			err->kind = FL_ERR_COMMIT_STATE_UNKNOWN;
		goto out;
	}
	if (status == 200)
		rc = table_result(c, &b, metadata, metadata_location, err);
	else if (status == 409)
		http_error(status, &b, FL_ERR_COMMIT_FAILED, err);
	else if (status == 422)
		http_error(status, &b, FL_ERR_UNPROCESSABLE, err);
	else if (status >= 500 || status == 0)
		http_error(status, &b, FL_ERR_COMMIT_STATE_UNKNOWN, err);
	else
		http_error(status, &b, status == 404 ? FL_ERR_NO_SUCH_TABLE : FL_ERR_BAD_REQUEST,
		           err);
out:
	free(url);
	json_decref(body);
	fl_buf_free(&b);
	return rc;
}

int st_rest_load_credentials(struct st_rest *c, const char *const *ns, int nlevels,
                             const char *name, const char *location, json_t **config,
                             struct fl_err *err)
{
	struct fl_buf b = FL_BUF_INIT, url = FL_BUF_INIT;
	char *t = table_url(c, ns, nlevels, name);
	json_t *v = NULL, *pick, *out = NULL;
	long status = 0;
	bool sent;
	int rc = -1;

	if (t == NULL || fl_buf_printf(&url, "%s/credentials", t) != 0) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (request(c, "GET", url.data, NULL, NULL, &status, &b, &sent, err) != 0)
		goto out;
	if (status != 200) {
		http_error(status, &b, status == 404 ? FL_ERR_NO_SUCH_TABLE : FL_ERR_BAD_REQUEST,
		           err);
		goto out;
	}
	v = json_loadb(b.data ? b.data : "", b.len, 0, NULL);
	pick = st_rest_pick_credentials(json_object_get(v, "storage-credentials"), location);
	if (pick == NULL) {
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "the catalog returned no credentials for %.200s", location);
		goto out;
	}
	out = st_rest_storage(c);
	if (out == NULL || json_object_update(out, pick) != 0) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	json_decref(c->storage);
	c->storage = json_incref(out);
	*config = out;
	out = NULL;
	rc = 0;
out:
	json_decref(out);
	json_decref(v);
	free(t);
	fl_buf_free(&url);
	fl_buf_free(&b);
	return rc;
}
