/* committer.c - the REST implementation of the write path's committer
 * (ingest/committer.h): any Iceberg REST catalog, optimistically.
 *
 * A commit asserts the state build saw (main's snapshot, the table uuid, and
 * the current schema when the updates add one).  409 means "reload and
 * build again on the new parent"; a 422 for this attempt's Idempotency-Key
 * means a concurrent run of the same batch used it, which is handled like a
 * conflict; 5xx means "maybe": reload and look for the batch before anything
 * else.  Each attempt has its own key (a hash of the batch, the table and
 * the attempt number shaped as a UUIDv7) because each attempt's body differs;
 * reusing one would replay the stored 409.
 *
 * Files go where the table's location says: a file:// location needs no
 * credentials; an s3:// one is written with the credentials the catalog
 * vends (storage-credentials, or config: s3.access-key-id,
 * s3.secret-access-key, s3.session-token, s3.endpoint, s3.region /
 * client.region, s3.path-style-access, s3.session-token-expires-at-ms),
 * fetched again (GET …/credentials) when they expire within refresh_s. */
#include "rest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libcrypto.h"
#include "batch.h"
#include "clock.h"
#include "io/io.h"

struct rest_committer {
	struct st_committer base; /* first: the interface pointer is this struct's */
	struct st_rest *rest;
	char **levels; /* one block with the strings */
	int nlevels;
	char *name;
	json_t *meta; /* the latest metadata seen */
	struct st_io *io;
	int64_t creds_expire_ms; /* 0 = they do not expire (or none) */
	int64_t refresh_s;
};

static void set_meta(struct rest_committer *k, json_t *meta)
{
	json_decref(k->meta);
	k->meta = meta;
}

static int load(struct st_committer *c, json_t **meta, struct fl_err *err)
{
	struct rest_committer *k = (struct rest_committer *)c;
	char *mloc = NULL;
	json_t *m = NULL;

	if (st_rest_load_table(k->rest, (const char *const *)k->levels, k->nlevels, k->name, &m,
	                       &mloc, err) != 0)
		return -1;
	free(mloc);
	set_meta(k, json_incref(m));
	*meta = m;
	return 0;
}

static int create(struct st_committer *c, const json_t *schema, json_t **meta, struct fl_err *err)
{
	struct rest_committer *k = (struct rest_committer *)c;
	char *mloc = NULL;
	json_t *m = NULL;

	if (st_rest_create_table(k->rest, (const char *const *)k->levels, k->nlevels, k->name,
	                         schema, NULL, &m, &mloc, err) != 0)
		return -1;
	free(mloc);
	set_meta(k, json_incref(m));
	*meta = m;
	return 0;
}

/* Opens the storage handle for the table's location from the storage
 * settings cfg (a file location needs none). */
static int open_io(struct rest_committer *k, const json_t *meta, const json_t *cfg,
                   struct fl_err *err)
{
	const char *location = json_string_value(json_object_get(meta, "location"));
	const char *ak, *sk, *tok, *ep, *region, *ps, *exp, *key;
	struct st_profile p = {0};
	struct st_creds *c = NULL;
	struct st_io *io = NULL;
	int rc = -1;

	if (location != NULL && strncmp(location, "file:///", 8) == 0) {
		p.type = ST_STORAGE_FILE;
		snprintf(p.location, sizeof(p.location), "%s", location);
		if (st_io_open(&p, &io, err) != 0)
			return -1;
		st_io_release(k->io);
		k->io = io;
		k->creds_expire_ms = 0;
		return 0;
	}
	if (location == NULL || strncmp(location, "s3://", 5) != 0)
		return fl_err_set(
		        err, FL_ERR_UNSUPPORTED,
		        "--catalog-uri: table location %.200s is neither file:// nor s3://",
		        location ? location : "(none)");
	ak = json_string_value(json_object_get(cfg, "s3.access-key-id"));
	sk = json_string_value(json_object_get(cfg, "s3.secret-access-key"));
	tok = json_string_value(json_object_get(cfg, "s3.session-token"));
	ep = json_string_value(json_object_get(cfg, "s3.endpoint"));
	region = json_string_value(json_object_get(cfg, "s3.region"));
	if (region == NULL)
		region = json_string_value(json_object_get(cfg, "client.region"));
	ps = json_string_value(json_object_get(cfg, "s3.path-style-access"));
	exp = json_string_value(json_object_get(cfg, "s3.session-token-expires-at-ms"));
	if (ak == NULL || sk == NULL)
		return fl_err_set(err, FL_ERR_UNSUPPORTED,
		                  "--catalog-uri: the catalog vended no credentials for %.200s "
		                  "(asked with X-Iceberg-Access-Delegation: vended-credentials)",
		                  location);
	if (strlen(ak) >= sizeof(c->access_key_id) || strlen(sk) >= sizeof(c->secret_access_key) ||
	    (tok != NULL && strlen(tok) >= sizeof(c->session_token)) ||
	    (ep != NULL && strlen(ep) >= sizeof(p.endpoint)) ||
	    (region != NULL && strlen(region) >= sizeof(p.region)) ||
	    strlen(location) >= sizeof(p.location))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "--catalog-uri: a vended credential value is too long");
	p.type = ST_STORAGE_S3;
	snprintf(p.location, sizeof(p.location), "%s", location);
	if (st_s3_uri_split(location, p.bucket, sizeof(p.bucket), &key, err) != 0)
		return -1;
	snprintf(p.prefix, sizeof(p.prefix), "%s", key);
	snprintf(p.endpoint, sizeof(p.endpoint), "%s", ep ? ep : "");
	snprintf(p.region, sizeof(p.region), "%s", region ? region : "us-east-1");
	p.path_style = ps != NULL && strcmp(ps, "true") == 0;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	snprintf(c->access_key_id, sizeof(c->access_key_id), "%s", ak);
	snprintf(c->secret_access_key, sizeof(c->secret_access_key), "%s", sk);
	snprintf(c->session_token, sizeof(c->session_token), "%s", tok ? tok : "");
	if (st_io_open_creds(&p, c, &io, err) != 0)
		goto out;
	st_io_release(k->io);
	k->io = io;
	k->creds_expire_ms = exp != NULL ? strtoll(exp, NULL, 10) : 0;
	rc = 0;
out:
	memset(c, 0, sizeof(*c));
	free(c);
	return rc;
}

static int io(struct st_committer *c, const json_t *meta, struct st_io **out, struct fl_err *err)
{
	struct rest_committer *k = (struct rest_committer *)c;
	const char *location = json_string_value(json_object_get(meta, "location"));
	json_t *cfg = NULL;
	int rc;

	if (k->io != NULL &&
	    (k->creds_expire_ms <= 0 || fl_now_ms() < k->creds_expire_ms - k->refresh_s * 1000)) {
		*out = k->io;
		return 0;
	}
	if (k->io == NULL) {
		cfg = st_rest_storage(k->rest);
		if (cfg == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	} else if (st_rest_load_credentials(k->rest, (const char *const *)k->levels, k->nlevels,
	                                    k->name, location ? location : "", &cfg, err) != 0) {
		return fl_err_prefix(err, "refreshing vended credentials");
	}
	rc = open_io(k, meta, cfg, err);
	json_decref(cfg);
	if (rc == 0)
		*out = k->io;
	return rc;
}

/* The Idempotency-Key of one commit attempt (see the top of the file). */
static void attempt_key(const struct rest_committer *k, const char *batch_id, int attempt,
                        char out[40])
{
	unsigned char h[32];
	unsigned int hl = 0;
	char a[16];
	EVP_MD_CTX *md = EVP_MD_CTX_new();

	snprintf(a, sizeof(a), "%d", attempt);
	memset(h, 0, sizeof(h));
	if (md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1) {
		EVP_DigestUpdate(md, batch_id, strlen(batch_id) + 1);
		for (int i = 0; i < k->nlevels; i++)
			EVP_DigestUpdate(md, k->levels[i], strlen(k->levels[i]) + 1);
		EVP_DigestUpdate(md, k->name, strlen(k->name) + 1);
		EVP_DigestUpdate(md, a, strlen(a));
		EVP_DigestFinal_ex(md, h, &hl);
	}
	EVP_MD_CTX_free(md);
	h[6] = (unsigned char)(0x70 | (h[6] & 0x0f));
	h[8] = (unsigned char)(0x80 | (h[8] & 0x3f));
	snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10], h[11], h[12],
	         h[13], h[14], h[15]);
}

/* True when the updates add a schema (the commit then asserts the current
 * schema id too). */
static bool adds_schema(const json_t *updates)
{
	json_t *u;
	size_t i;

	json_array_foreach(updates, i, u)
	{
		const char *a = json_string_value(json_object_get(u, "action"));

		if (a != NULL && strcmp(a, "add-schema") == 0)
			return true;
	}
	return false;
}

static int commit(struct st_committer *c, const char *batch_id, int retries,
                  st_commit_build_fn build, void *arg, struct fl_err *err)
{
	struct rest_committer *k = (struct rest_committer *)c;
	const char *const *levels = (const char *const *)k->levels;
	json_t *updates = NULL, *reqs = NULL, *out = NULL, *fresh = NULL;
	char *oloc = NULL, key[40];
	int64_t snap;
	int rc = -1;

	if (k->meta == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "commit before load");
	for (int attempt = 0;; attempt++) {
		const json_t *meta = k->meta, *cur_v = json_object_get(meta, "current-snapshot-id");
		int64_t cur = json_integer_value(cur_v);
		bool has_cur = cur >= 0 && json_is_integer(cur_v);

		json_decref(updates);
		json_decref(reqs);
		updates = reqs = NULL;
		if (build(arg, meta, &updates, err) != 0)
			goto out;
		if (json_array_size(updates) == 0) {
			rc = 0; /* nothing to do: the batch is there already */
			goto out;
		}
		reqs = json_pack("[{s:s, s:s, s:o}, {s:s, s:O}]", "type", "assert-ref-snapshot-id",
		                 "ref", "main", "snapshot-id",
		                 has_cur ? json_integer(cur) : json_null(), "type",
		                 "assert-table-uuid", "uuid", json_object_get(meta, "table-uuid"));
		if (reqs == NULL ||
		    (adds_schema(updates) &&
		     json_array_append_new(
		             reqs, json_pack("{s:s, s:O}", "type", "assert-current-schema-id",
		                             "current-schema-id",
		                             json_object_get(meta, "current-schema-id"))) != 0)) {
			fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			goto out;
		}
		attempt_key(k, batch_id, attempt, key);
		if (st_rest_commit(k->rest, levels, k->nlevels, k->name, reqs, updates, key, &out,
		                   &oloc, err) == 0) {
			rc = 0;
			goto out;
		}
		if (err->kind == FL_ERR_COMMIT_STATE_UNKNOWN) {
			/* Maybe applied: look before doing anything else. */
			struct fl_err lerr = {0};

			if (load(c, &fresh, &lerr) == 0 &&
			    st_batch_in_history(fresh, batch_id, &snap)) {
				fl_err_clear(err);
				rc = 0;
			}
			goto out; /* still unknown: the caller keeps the files */
		}
		bool retryable =
		        err->kind == FL_ERR_COMMIT_FAILED || err->kind == FL_ERR_UNPROCESSABLE;

		if (!retryable || attempt >= retries) {
			if (retryable) {
				err->kind = FL_ERR_COMMIT_FAILED;
				fl_err_prefix(err, "gave up after %d attempts", attempt + 1);
			}
			goto out;
		}
		/* A conflict: reload and build again on the new parent after a
		 * backoff (build finds the batch there when a concurrent run of
		 * it won). */
		{
			struct timespec ts = {
			        0, (long)((50L << (attempt < 6 ? attempt : 6)) * 1000000L)};

			nanosleep(&ts, NULL);
		}
		fl_err_clear(err);
		json_decref(fresh);
		fresh = NULL;
		if (load(c, &fresh, err) != 0)
			goto out;
		json_decref(out);
		out = NULL;
		free(oloc);
		oloc = NULL;
	}
out:
	json_decref(fresh);
	json_decref(updates);
	json_decref(reqs);
	json_decref(out);
	free(oloc);
	return rc;
}

static void close_committer(struct st_committer *c)
{
	struct rest_committer *k = (struct rest_committer *)c;

	if (k == NULL)
		return;
	st_rest_close(k->rest);
	st_io_release(k->io);
	json_decref(k->meta);
	free(k->levels);
	free(k->name);
	free(k);
}

static const struct st_committer_ops ops = {
        .load = load,
        .create = create,
        .io = io,
        .commit = commit,
        .close = close_committer,
};

int st_rest_committer_open(const char *uri, const char *warehouse, const char *token,
                           const char *const *ns, int nlevels, const char *name, int64_t refresh_s,
                           struct st_committer **out, struct fl_err *err)
{
	struct rest_committer *k = calloc(1, sizeof(*k));

	if (k == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	k->levels = st_committer_levels_dup(ns, nlevels);
	k->name = strdup(name);
	if (k->levels == NULL || k->name == NULL) {
		close_committer(&k->base);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	k->nlevels = nlevels;
	k->refresh_s = refresh_s;
	k->base.ops = &ops;
	if (st_rest_open(uri, warehouse, token, &k->rest, err) != 0) {
		close_committer(&k->base);
		return -1;
	}
	*out = &k->base;
	return 0;
}
