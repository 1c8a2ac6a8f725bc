/* vend.c - the config, storage credentials and signer settings of a table
 * response, and the cache of vended credentials.
 *
 * Keys written (rest-spec-and-clients.md §B: what PyIceberg and DuckDB
 * read): s3.endpoint, s3.region, client.region, s3.path-style-access for s3
 * warehouses whenever a delegation mode is asked for; s3.access-key-id, s3.secret-access-key,
 * s3.session-token, s3.session-token-expires-at-ms when vending (in
 * storage-credentials[0].config with prefix = the table location, and the
 * same in config for clients that read only config); s3.remote-signing-
 * enabled, s3.signer, s3.signer.uri, s3.signer.endpoint for remote signing.
 *
 * The cache is a fixed array under one mutex, searched linearly (it is
 * small: one entry per table and access level in use); the least recently
 * used entry makes room.  STS is called outside the lock, so two first
 * loads of one table may both call it; the later answer wins. */
#include "vend.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "clock.h"
#include "io/profile.h"
#include "log.h"
#include "metrics.h"
#include "pct.h"
#include "io/sigv4.h"
#include "sts.h"

#define WARNED_MAX 1024

struct vend_entry {
	char key[1200]; /* warehouse id, location, access */
	struct st_sts_creds creds;
	int64_t fetched_ms;
	int64_t used_ms;
	bool live;
};

struct srv_vend {
	pthread_mutex_t mu;
	struct vend_entry *e;
	size_t cap;
	uint64_t warned[WARNED_MAX]; /* hashes of tables logged as "no STS" */
	size_t nwarned;
};

struct srv_vend *srv_vend_new(size_t cap)
{
	struct srv_vend *v = calloc(1, sizeof(*v));

	if (v == NULL)
		return NULL;
	v->e = calloc(cap, sizeof(*v->e));
	if (v->e == NULL) {
		free(v);
		return NULL;
	}
	v->cap = cap;
	pthread_mutex_init(&v->mu, NULL);
	return v;
}

void srv_vend_free(struct srv_vend *v)
{
	if (v == NULL)
		return;
	memset(v->e, 0, v->cap * sizeof(*v->e));
	free(v->e);
	pthread_mutex_destroy(&v->mu);
	free(v);
}

int srv_object_access(struct srv_req *r, const char *wh, const struct cat_ns *ns, const char *table,
                      enum st_access *out, struct fl_err *err)
{
	char nsb[256];

	switch (srv_access_level(r, wh, ns, table)) {
	case SRV_ACCESS_READ_WRITE: *out = ST_ACCESS_READ_WRITE; return 0;
	case SRV_ACCESS_READ: *out = ST_ACCESS_READ; return 0;
	case SRV_ACCESS_NONE: break;
	}
	return fl_err_set(err, FL_ERR_FORBIDDEN,
	                  "the caller may not read table %s.%s: no storage access to give",
	                  cat_ns_str(ns, nsb, sizeof(nsb)), table);
}

int srv_server_keys(const struct cat_warehouse *wh, struct st_creds **keys, struct fl_err *err)
{
	struct st_creds *k = calloc(1, sizeof(*k));

	if (k == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (st_profile_credentials(&wh->profile, k, err) != 0) {
		srv_server_keys_free(k);
		fl_err_prefix(err, "warehouse '%s': the server's own S3 credentials", wh->name);
		err->kind = FL_ERR_UNAVAILABLE;
		return -1;
	}
	*keys = k;
	return 0;
}

void srv_server_keys_free(struct st_creds *keys)
{
	if (keys == NULL)
		return;
	memset(keys, 0, sizeof(*keys));
	free(keys);
}

/* Still good: less than 80% of its lifetime has passed. */
static bool fresh(const struct vend_entry *e, int64_t now)
{
	return e->live && now < e->fetched_ms + (e->creds.expires_at_ms - e->fetched_ms) * 8 / 10;
}

bool srv_vend_cached(struct srv_vend *v, const char *key, int64_t now, struct st_sts_creds *out)
{
	bool hit = false;

	pthread_mutex_lock(&v->mu);
	for (size_t i = 0; i < v->cap; i++)
		if (v->e[i].live && strcmp(v->e[i].key, key) == 0) {
			if (fresh(&v->e[i], now)) {
				*out = v->e[i].creds;
				v->e[i].used_ms = now;
				hit = true;
			} else {
				memset(&v->e[i], 0, sizeof(v->e[i]));
			}
			break;
		}
	pthread_mutex_unlock(&v->mu);
	return hit;
}

void srv_vend_remember(struct srv_vend *v, const char *key, const struct st_sts_creds *c,
                       int64_t fetched)
{
	size_t slot = 0;

	pthread_mutex_lock(&v->mu);
	for (size_t i = 0; i < v->cap; i++) {
		if (v->e[i].live && strcmp(v->e[i].key, key) == 0) {
			slot = i;
			break;
		}
		if (!v->e[i].live || v->e[i].used_ms < v->e[slot].used_ms ||
		    (v->e[slot].live && !v->e[i].live))
			slot = i;
	}
	snprintf(v->e[slot].key, sizeof(v->e[slot].key), "%s", key);
	v->e[slot].creds = *c;
	v->e[slot].fetched_ms = fetched;
	v->e[slot].used_ms = fetched;
	v->e[slot].live = true;
	pthread_mutex_unlock(&v->mu);
}

/* True the first time a table is seen (bounded: forgets all when full). */
static bool first_warning(struct srv_vend *v, const char *location)
{
	uint64_t h = 1469598103934665603ULL;
	bool first = true;

	for (const char *p = location; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	pthread_mutex_lock(&v->mu);
	for (size_t i = 0; i < v->nwarned && first; i++)
		first = v->warned[i] != h;
	if (first) {
		if (v->nwarned == WARNED_MAX)
			v->nwarned = 0;
		v->warned[v->nwarned++] = h;
	}
	pthread_mutex_unlock(&v->mu);
	return first;
}

/* True when the comma list of the delegation header names mode. */
static bool asks(const char *header, const char *mode)
{
	size_t ml = strlen(mode);

	for (const char *p = header; p != NULL && *p != '\0';) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		while (n > 0 && (*p == ' ' || *p == '\t')) {
			p++;
			n--;
		}
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == ml && strncasecmp(p, mode, n) == 0)
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

/* AssumeRole for the table (or the cached answer). */
static int vend(struct srv_req *r, const struct cat_warehouse *wh, const char *location,
                enum st_access access, struct st_sts_creds *out, struct fl_err *err)
{
	const struct st_profile *p = &wh->profile;
	struct st_creds *server = NULL;
	struct st_sts_assume a;
	struct st_s3_loc loc;
	char key[1200], hash[65], session[40];
	const char *endpoint;
	char *policy = NULL;
	size_t plen;
	int64_t t0;
	int rc = -1;

	snprintf(key, sizeof(key), "%s\n%s\n%s", wh->id, location, st_access_name(access));
	if (srv_vend_cached(r->ctx->vend, key, fl_now_ms(), out))
		return 0;
	/* Before anything is counted or logged: on an HTTP thread this stops
	 * here, and a worker vends. */
	if (fl_may_wait(err) != 0)
		return -1;
	if (st_s3_loc_parse(location, &loc, err) != 0 ||
	    st_policy_session(&loc, access, &policy, &plen, err) != 0)
		return -1;
	if (srv_server_keys(wh, &server, err) != 0)
		goto out;
	endpoint = p->sts_endpoint[0] ? p->sts_endpoint
	           : p->endpoint[0]   ? p->endpoint
	                              : "https://sts.amazonaws.com";
	/* The session name shows in the store's audit log: "floe-" and a hash
	 * of the table location (names have a narrow alphabet). */
	st_sigv4_sha256_hex(location, strlen(location), hash);
	snprintf(session, sizeof(session), "floe-%.24s", hash);
	a = (struct st_sts_assume){
	        .endpoint = endpoint,
	        .region = p->region[0] ? p->region : "us-east-1",
	        .creds = server,
	        .role_arn = p->sts_role_arn,
	        .session_name = session,
	        .external_id = p->sts_external_id[0] ? p->sts_external_id : NULL,
	        .policy = policy,
	        .duration_s = p->credential_lifetime_s > 0 ? p->credential_lifetime_s : 3600,
	        .timeout_s = 10,
	};
	t0 = fl_now_ms();
	srv_metrics_vend(r->ctx->metrics, SRV_VEND_STS_CALL);
	if (st_sts_assume_role(&a, out, err) != 0) {
		fl_warn(r->id, "credential vending for %s failed: %s", location, err->msg);
		fl_err_prefix(err, "cannot vend credentials for %.200s", location);
		err->kind = FL_ERR_UNAVAILABLE;
		goto out;
	}
	srv_vend_remember(r->ctx->vend, key, out, t0);
	rc = 0;
out:
	srv_server_keys_free(server);
	free(policy);
	return rc;
}

static int set_str(json_t *o, const char *k, const char *v)
{
	return json_object_set_new(o, k, json_string(v));
}

/* "v1/{prefix}/namespaces/{ns}/tables/{t}/sign", each part encoded. */
static int sign_endpoint(const struct cat_warehouse *wh, const struct cat_ns *ns, const char *table,
                         struct fl_buf *b)
{
	char enc[1024];

	if (fl_pct_encode(wh->name, strlen(wh->name), enc, sizeof(enc)) < 0 ||
	    fl_buf_printf(b, "v1/%s/namespaces/", enc) != 0)
		return -1;
	for (int i = 0; i < ns->n; i++)
		if (fl_pct_encode(ns->levels[i], strlen(ns->levels[i]), enc, sizeof(enc)) < 0 ||
		    fl_buf_printf(b, "%s%s", i ? "%1F" : "", enc) != 0)
			return -1;
	if (fl_pct_encode(table, strlen(table), enc, sizeof(enc)) < 0 ||
	    fl_buf_printf(b, "/tables/%s/sign", enc) != 0)
		return -1;
	return 0;
}

bool srv_vend_nothing(struct srv_req *r, const char *storage_type)
{
	return strcmp(storage_type, "s3") != 0 ||
	       srv_header(r, "X-Iceberg-Access-Delegation") == NULL;
}

int srv_vend_table(struct srv_req *r, const struct cat_warehouse *wh, const struct cat_ns *ns,
                   const char *table, const char *location, enum srv_vend_mode mode,
                   json_t **config, json_t **creds, struct fl_err *err)
{
	const struct st_profile *p = &wh->profile;
	const char *hdr = srv_header(r, "X-Iceberg-Access-Delegation");
	const char *region = p->region[0] ? p->region : "us-east-1";
	bool want_vend = mode == SRV_VEND_DEMAND || asks(hdr, "vended-credentials");
	bool want_sign = asks(hdr, "remote-signing");
	struct st_sts_creds *c = NULL;
	enum st_access access;
	struct fl_buf ep = FL_BUF_INIT;
	json_t *cfg = json_object(), *cc = NULL, *arr = NULL;
	char ms[24];
	int rc = -1;

	if (cfg == NULL)
		goto nomem;
	if (p->type != ST_STORAGE_S3 ||
	    (mode == SRV_VEND_HINT && srv_vend_nothing(r, wh->storage_type))) {
		/* A file warehouse has nothing to vend, and DuckDB needs its config
		 * empty; a client that asks for no delegation gets none. */
		*config = cfg;
		*creds = NULL;
		return 0;
	}
	if ((p->endpoint[0] && set_str(cfg, "s3.endpoint", p->endpoint) != 0) ||
	    set_str(cfg, "s3.region", region) != 0 || set_str(cfg, "client.region", region) != 0 ||
	    set_str(cfg, "s3.path-style-access", p->path_style ? "true" : "false") != 0)
		goto nomem;
	if (want_sign && p->remote_signing) {
		const char *host = srv_header(r, "Host");

		if (sign_endpoint(wh, ns, table, &ep) != 0 ||
		    set_str(cfg, "s3.remote-signing-enabled", "true") != 0 ||
		    set_str(cfg, "s3.signer", "S3V4RestSigner") != 0 ||
		    set_str(cfg, "s3.signer.endpoint", ep.data) != 0)
			goto nomem;
		if (host != NULL && strpbrk(host, "/\\@ \t\r\n") == NULL) {
			fl_buf_reset(&ep);
			if (fl_buf_printf(&ep, "http://%s", host) != 0 ||
			    set_str(cfg, "s3.signer.uri", ep.data) != 0)
				goto nomem;
		}
	}
	if (want_vend && p->sts_role_arn[0] == '\0') {
		if (mode == SRV_VEND_DEMAND) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "credential vending is not configured for warehouse '%s': its "
			           "storage profile has no sts-role-arn",
			           wh->name);
			goto out;
		}
		srv_metrics_vend(r->ctx->metrics, SRV_VEND_UNAVAILABLE);
		if (first_warning(r->ctx->vend, location))
			fl_warn(r->id,
			        "table %s: vended-credentials asked, but warehouse '%s' has no "
			        "sts-role-arn; answering without credentials",
			        location, wh->name);
		want_vend = false;
	}
	if (want_vend) {
		c = calloc(1, sizeof(*c));
		if (c == NULL)
			goto nomem;
		if (srv_object_access(r, wh->name, ns, table, &access, err) != 0 ||
		    vend(r, wh, location, access, c, err) != 0)
			goto out;
		snprintf(ms, sizeof(ms), "%lld", (long long)c->expires_at_ms);
		cc = json_deep_copy(cfg);
		if (cc == NULL)
			goto nomem;
		for (int k = 0; k < 2; k++) {
			json_t *o = k == 0 ? cfg : cc;

			if (set_str(o, "s3.access-key-id", c->access_key_id) != 0 ||
			    set_str(o, "s3.secret-access-key", c->secret_access_key) != 0 ||
			    set_str(o, "s3.session-token", c->session_token) != 0 ||
			    set_str(o, "s3.session-token-expires-at-ms", ms) != 0)
				goto nomem;
		}
		/* Credentials are for the objects; signer settings stay in config. */
		json_object_del(cc, "s3.remote-signing-enabled");
		json_object_del(cc, "s3.signer");
		json_object_del(cc, "s3.signer.uri");
		json_object_del(cc, "s3.signer.endpoint");
		arr = json_pack("[{s:s,s:O}]", "prefix", location, "config", cc);
		if (arr == NULL)
			goto nomem;
		srv_metrics_vend(r->ctx->metrics, SRV_VEND_VENDED);
		r->secret = true; /* never coded (struct srv_req) */
	}
	*config = cfg;
	*creds = arr;
	cfg = NULL;
	arr = NULL;
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	if (c != NULL) {
		memset(c, 0, sizeof(*c));
		free(c);
	}
	fl_buf_free(&ep);
	json_decref(cfg);
	json_decref(cc);
	json_decref(arr);
	return rc;
}

/* A table location that vending and signing can scope: NULL (with the
 * error) when there is none or it is longer than cap - 1. */
static const char *usable_location(const char *loc, size_t cap, struct fl_err *err)
{
	if (loc == NULL || strlen(loc) >= cap) {
		fl_err_set(err, FL_ERR_INTERNAL, "stored metadata has no usable location");
		return NULL;
	}
	return loc;
}

int srv_metadata_location(const char *metadata, char *out, size_t cap, struct fl_err *err)
{
	json_t *m = json_loads(metadata, 0, NULL);
	const char *loc =
	        usable_location(json_string_value(json_object_get(m, "location")), cap, err);

	if (loc != NULL)
		memcpy(out, loc, strlen(loc) + 1);
	json_decref(m);
	return loc != NULL ? 0 : -1;
}

const char *srv_table_location(const struct cat_table_bytes *t, struct fl_err *err)
{
	return usable_location(cat_table_bytes_location(t), SRV_LOCATION_MAX, err);
}
