/* auth.c - authentication and authorization (auth.h has the model).
 *
 * Invariants:
 * - No token, secret or signature is ever logged or put in a message; a
 *   failure logs its reason and the request id.
 * - Signature checks happen once per token: a verified token is remembered
 *   by the SHA-256 of its text until its exp (bounded table, overwritten by
 *   hash slot).  The principal it names is looked up on every request in a
 *   second cache whose entries live auth-cache-ttl seconds and are dropped
 *   when this process changes access data (srv_auth_changed), so a revoked
 *   principal or role stops working on its next request here; other replicas
 *   drop theirs when PostgreSQL delivers NOTIFY floe_auth (a trigger on the
 *   access tables sends it at COMMIT), or after auth-cache-ttl seconds while
 *   that notification channel is down.
 * - Failed token requests are counted per client id and per address in a
 *   bounded table (one minute windows); past auth-max-failures the endpoint
 *   answers 429 before it spends any time on the secret.
 * - Principals are reference counted: a request holds the one it resolved
 *   until its arena is freed, even if the cache drops it meanwhile. */
#include "auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "libcrypto.h"
#include "access.h"
#include "clock.h"
#include "handlers.h"
#include "io/libcurl.h"
#include "json.h"
#include "jose.h"
#include "libmhd.h"
#include "log.h"
#include "uuid.h"

#define P(x) (1u << (x))
#define PRIV_READ (P(SRV_PRIV_CATALOG_READ) | P(SRV_PRIV_NAMESPACE_READ) | P(SRV_PRIV_TABLE_READ))
#define PRIV_WRITE                                                                         \
	(PRIV_READ | P(SRV_PRIV_NAMESPACE_CREATE) | P(SRV_PRIV_NAMESPACE_WRITE) |          \
	 P(SRV_PRIV_NAMESPACE_DROP) | P(SRV_PRIV_TABLE_CREATE) | P(SRV_PRIV_TABLE_WRITE) | \
	 P(SRV_PRIV_TABLE_DROP))
#define PRIV_ALL \
	(PRIV_WRITE | P(SRV_PRIV_WAREHOUSE_ADMIN) | P(SRV_PRIV_ACCESS_ADMIN) | P(SRV_PRIV_METRICS))

/* The privilege names a grant may hold, and the route privileges each gives. */
static const struct {
	const char *name;
	uint32_t privs;
} priv_names[] = {
        {"all", PRIV_ALL},
        {"write", PRIV_WRITE},
        {"read", PRIV_READ},
        {"catalog-read", P(SRV_PRIV_CATALOG_READ)},
        {"namespace-read", P(SRV_PRIV_NAMESPACE_READ)},
        {"namespace-create", P(SRV_PRIV_NAMESPACE_CREATE)},
        {"namespace-write", P(SRV_PRIV_NAMESPACE_WRITE)},
        {"namespace-drop", P(SRV_PRIV_NAMESPACE_DROP)},
        {"table-create", P(SRV_PRIV_TABLE_CREATE)},
        {"table-read", P(SRV_PRIV_TABLE_READ)},
        {"table-write", P(SRV_PRIV_TABLE_WRITE) | P(SRV_PRIV_TABLE_READ)},
        {"table-drop", P(SRV_PRIV_TABLE_DROP)},
        {"warehouse-admin", P(SRV_PRIV_WAREHOUSE_ADMIN)},
        {"access-admin", P(SRV_PRIV_ACCESS_ADMIN)},
        {"metrics", P(SRV_PRIV_METRICS)},
};

struct srv_grant {
	uint32_t privs;
	const char *wh; /* "*" = every warehouse and the global scope */
	const char **levels;
	int nlevels;
	const char *table; /* NULL = the whole namespace (or warehouse) */
};

struct srv_principal {
	atomic_int refs;
	struct fl_arena *arena;
	const char *name;
	char fsv[24]; /* secret version: tokens of Floe must carry it */
	int n;
	struct srv_grant *g;
};

#define TOKEN_SLOTS 4096
#define PRINCIPAL_SLOTS 512
#define LIMIT_SLOTS 1024
#define SECRET_SLOTS 256
#define LIMIT_WINDOW_S 60
#define SECRET_CACHE_S 60
#define KEY_MAX 560
#define LOCK_STRIPES 64 /* so that concurrent requests rarely share a lock */

struct token_slot {
	unsigned char h[32];
	bool used;
	bool own; /* issued by Floe (its fsv must be the principal's secret version) */
	char key[KEY_MAX]; /* principal cache key */
	char fsv[24];
	int64_t exp;
};

struct principal_slot {
	char key[KEY_MAX];
	struct srv_principal *p; /* NULL = empty */
	int64_t loaded_ns;
	unsigned gen;
	bool db_known; /* db_gen was known when loaded */
	unsigned long db_gen;
};

struct limit_slot {
	uint64_t h;
	int64_t start;
	int64_t count;
};

struct secret_slot {
	unsigned char h[32];
	int64_t until;
};

struct srv_auth {
	bool enabled;
	const struct srv_config *cfg;
	struct cat_db *db;
	struct srv_key signing;
	struct srv_keyset own; /* the signing key's public part + older keys */
	struct srv_keyset ext; /* the external issuer's JWKS */
	pthread_mutex_t ext_mu;
	int64_t ext_fetched_ns; /* 0 = never */
	pthread_mutex_t mu; /* limits and secrets */
	pthread_mutex_t stripes[LOCK_STRIPES]; /* tokens and principals, by slot */
	struct token_slot tokens[TOKEN_SLOTS];
	struct principal_slot principals[PRINCIPAL_SLOTS];
	struct limit_slot limits[LIMIT_SLOTS];
	struct secret_slot secrets[SECRET_SLOTS];
	atomic_uint gen;
};

static int64_t now_s(void)
{
	return fl_now_ms() / 1000;
}

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static void sha256(const void *a, size_t an, const void *b, size_t bn, unsigned char out[32])
{
	EVP_MD_CTX *md;
	unsigned int n = 0;

	memset(out, 0, 32);
	if (bn == 0) { /* the hot path (a token): one call, no context */
		EVP_Digest(a, an, out, &n, EVP_sha256(), NULL);
		return;
	}
	md = EVP_MD_CTX_new();
	if (md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(md, a, an) == 1 && EVP_DigestUpdate(md, b, bn) == 1)
		EVP_DigestFinal_ex(md, out, &n);
	EVP_MD_CTX_free(md);
}

/* ---- keys ---- */

static int read_file(const char *path, char **out, size_t *n, struct fl_err *err)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t len;

	if (f == NULL)
		return fl_err_set(err, FL_ERR_IO, "cannot open %s: %s", path, strerror(errno));
	buf = malloc(1 << 20);
	if (buf == NULL) {
		fclose(f);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	len = fread(buf, 1, (1 << 20) - 1, f);
	if (ferror(f) || !feof(f)) {
		fclose(f);
		free(buf);
		return fl_err_set(err, FL_ERR_IO, "cannot read %s (or larger than 1 MiB)", path);
	}
	fclose(f);
	buf[len] = '\0';
	*out = buf;
	*n = len;
	return 0;
}

static int load_key_file(const char *path, struct srv_key *k, struct fl_err *err)
{
	char *pem;
	size_t n;
	int rc;

	if (read_file(path, &pem, &n, err) != 0)
		return -1;
	rc = srv_key_from_pem(pem, n, k, err);
	OPENSSL_cleanse(pem, n);
	free(pem);
	return rc == 0 ? 0 : fl_err_prefix(err, "%s", path);
}

static int load_keys(struct srv_auth *a, struct fl_err *err)
{
	const struct srv_config *cfg = a->cfg;
	const char *p = cfg->token_verify_keys;

	if (cfg->token_signing_key[0] != '\0') {
		if (load_key_file(cfg->token_signing_key, &a->signing, err) != 0)
			return fl_err_prefix(err, "setting token-signing-key");
		if (a->signing.priv_pem == NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "setting token-signing-key: %s holds no private key",
			                  cfg->token_signing_key);
		fl_info(NULL, "auth: signing tokens with key %s (kid %s)", cfg->token_signing_key,
		        a->signing.kid);
	} else {
		if (srv_key_generate(&a->signing, err) != 0)
			return -1;
		if (a->enabled)
			fl_warn(NULL,
			        "auth: no token-signing-key; generated an ephemeral key (kid %s): tokens will not survive a restart and other replicas will not accept them",
			        a->signing.kid);
	}
	if (srv_keyset_add(&a->own, &a->signing, false, err) != 0)
		return -1;
	while (*p != '\0') {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		struct srv_key k = {0};
		char path[1024];

		if (len > 0) {
			snprintf(path, sizeof(path), "%.*s", (int)len, p);
			if (load_key_file(path, &k, err) != 0)
				return fl_err_prefix(err, "setting token-verify-keys");
			if (srv_keyset_find(&a->own, k.kid) == NULL &&
			    srv_keyset_add(&a->own, &k, false, err) != 0) {
				srv_key_free(&k);
				return -1;
			}
			fl_info(NULL, "auth: also accepting tokens of key %s (kid %s)", path,
			        k.kid);
			srv_key_free(&k);
		}
		p += len + (e ? 1 : 0);
	}
	return 0;
}

/* ---- the external issuer's JWKS ---- */

struct fetch {
	char *buf;
	size_t len;
	bool too_big;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct fetch *f = arg;
	size_t add = size * n;
	char *nb;

	if (f->len + add > (1 << 20)) {
		f->too_big = true;
		return 0;
	}
	nb = realloc(f->buf, f->len + add + 1);
	if (nb == NULL)
		return 0;
	memcpy(nb + f->len, p, add);
	f->buf = nb;
	f->len += add;
	f->buf[f->len] = '\0';
	return add;
}

static int fetch_url(const char *url, char **out, size_t *n, struct fl_err *err)
{
	const struct st_libcurl *cu = st_libcurl_load(err);
	struct fetch f = {0};
	long status = 0;
	CURLcode rc;
	CURL *c;

	if (fl_may_wait(err) != 0 || cu == NULL)
		return -1;
	if ((c = cu->easy_init()) == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	cu->easy_setopt(c, CURLOPT_URL, url);
	cu->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	cu->easy_setopt(c, CURLOPT_TIMEOUT, 5L);
	cu->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	cu->easy_setopt(c, CURLOPT_WRITEDATA, &f);
	rc = cu->easy_perform(c);
	cu->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	cu->easy_cleanup(c);
	if (rc != CURLE_OK || status != 200) {
		free(f.buf);
		if (f.too_big)
			return fl_err_set(err, FL_ERR_UNAVAILABLE, "JWKS is larger than 1 MiB");
		return fl_err_set(err, FL_ERR_UNAVAILABLE, "cannot fetch the JWKS: %s (HTTP %ld)",
		                  rc != CURLE_OK ? cu->easy_strerror(rc) : "bad status", status);
	}
	*out = f.buf ? f.buf : strdup("");
	*n = f.len;
	return *out ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* Loads the JWKS again (file or URL); the caller holds ext_mu. */
static int refresh_jwks(struct srv_auth *a, struct fl_err *err)
{
	const char *src = a->cfg->oidc_jwks;
	struct srv_keyset ks = {0};
	char *text = NULL;
	size_t n = 0;
	int rc;

	a->ext_fetched_ns = fl_mono_ns();
	if (strncmp(src, "http://", 7) == 0 || strncmp(src, "https://", 8) == 0)
		rc = fetch_url(src, &text, &n, err);
	else
		rc = read_file(src, &text, &n, err);
	if (rc == 0)
		rc = srv_jwks_parse(text, n, &ks, err);
	free(text);
	if (rc != 0)
		return fl_err_prefix(err, "setting oidc-jwks");
	srv_keyset_free(&a->ext);
	a->ext = ks;
	return 0;
}

/* ---- start ---- */

static bool loopback(const char *host)
{
	struct in_addr in;

	return inet_pton(AF_INET, host, &in) == 1 && (ntohl(in.s_addr) >> 24) == 127;
}

int srv_auth_start(const struct srv_config *cfg, struct cat_db *db, struct srv_auth **out,
                   struct fl_err *err)
{
	struct srv_auth *a = calloc(1, sizeof(*a));

	if (a == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	a->cfg = cfg;
	a->db = db;
	pthread_mutex_init(&a->mu, NULL);
	for (int i = 0; i < LOCK_STRIPES; i++)
		pthread_mutex_init(&a->stripes[i], NULL);
	pthread_mutex_init(&a->ext_mu, NULL);
	if (strcmp(cfg->auth, "auto") == 0)
		a->enabled = !loopback(cfg->host);
	else
		a->enabled = strcmp(cfg->auth, "token") == 0;
	if (!a->enabled && !loopback(cfg->host))
		fl_warn(NULL,
		        "auth: AUTHENTICATION IS OFF (--auth none) on %s, which is not a loopback address: anyone who can reach this port can read, change and drop every table",
		        cfg->host);
	else if (!a->enabled)
		fl_info(NULL,
		        "auth: none (listening on loopback %s only); use --auth token to require tokens",
		        cfg->host);
	else
		fl_info(NULL, "auth: token (POST /v1/oauth/tokens issues tokens)");
	if (load_keys(a, err) != 0)
		goto fail;
	if (cfg->oidc_issuer[0] != '\0') {
		if (cfg->oidc_jwks[0] == '\0' || cfg->oidc_audience[0] == '\0') {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "setting oidc-issuer needs oidc-jwks and oidc-audience too");
			goto fail;
		}
		if (strcmp(cfg->oidc_issuer, cfg->token_issuer) == 0) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "setting oidc-issuer must differ from token-issuer");
			goto fail;
		}
		/* The JWKS is fetched with libcurl: load it (and run its global
		 * init) at start, so that a missing library stops the daemon here. */
		if (st_libcurl_load(err) == NULL)
			goto fail;
		pthread_mutex_lock(&a->ext_mu);
		if (refresh_jwks(a, err) != 0)
			fl_warn(NULL, "auth: %s; will retry when a token of %s arrives", err->msg,
			        cfg->oidc_issuer);
		else
			fl_info(NULL, "auth: accepting tokens of %s (%d key(s))", cfg->oidc_issuer,
			        a->ext.n);
		pthread_mutex_unlock(&a->ext_mu);
		fl_err_clear(err);
	}
	*out = a;
	return 0;
fail:
	srv_auth_free(a);
	return -1;
}

static void principal_unref(void *v)
{
	struct srv_principal *p = v;

	if (p != NULL && atomic_fetch_sub(&p->refs, 1) == 1)
		fl_arena_free(p->arena);
}

void srv_auth_free(struct srv_auth *a)
{
	if (a == NULL)
		return;
	for (int i = 0; i < PRINCIPAL_SLOTS; i++)
		principal_unref(a->principals[i].p);
	srv_key_free(&a->signing);
	srv_keyset_free(&a->own);
	srv_keyset_free(&a->ext);
	pthread_mutex_destroy(&a->mu);
	for (int i = 0; i < LOCK_STRIPES; i++)
		pthread_mutex_destroy(&a->stripes[i]);
	pthread_mutex_destroy(&a->ext_mu);
	OPENSSL_cleanse(a, sizeof(*a));
	free(a);
}

bool srv_auth_enabled(const struct srv_auth *a)
{
	return a != NULL && a->enabled;
}

const char *srv_auth_external_issuer(const struct srv_auth *a)
{
	return a->cfg->oidc_issuer[0] ? a->cfg->oidc_issuer : NULL;
}

void srv_auth_changed(struct srv_auth *a)
{
	if (a != NULL)
		atomic_fetch_add(&a->gen, 1);
}

bool srv_auth_privilege_known(const char *name)
{
	for (size_t i = 0; i < sizeof(priv_names) / sizeof(priv_names[0]); i++)
		if (strcmp(priv_names[i].name, name) == 0)
			return true;
	return false;
}

static uint32_t privs_of(const char *name)
{
	for (size_t i = 0; i < sizeof(priv_names) / sizeof(priv_names[0]); i++)
		if (strcmp(priv_names[i].name, name) == 0)
			return priv_names[i].privs;
	return 0; /* a privilege this binary does not know grants nothing */
}

/* ---- principals ---- */

/* A string member, or "" when absent or not a string. */
static const char *jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* Builds a principal from cat_principal_access's JSON. */
static struct srv_principal *principal_build(const json_t *v)
{
	struct fl_arena *ar = fl_arena_new();
	struct srv_principal *p = ar ? fl_arena_alloc(ar, sizeof(*p)) : NULL;
	const json_t *grants = json_object_get(v, "grants"), *g;
	size_t i;

	if (p == NULL)
		goto fail;
	atomic_init(&p->refs, 1);
	p->arena = ar;
	p->name = fl_arena_strdup(ar, jstr(v, "name"));
	snprintf(p->fsv, sizeof(p->fsv), "%s", jstr(v, "secret-version"));
	p->n = (int)json_array_size(grants);
	p->g = fl_arena_alloc(ar, sizeof(*p->g) * (size_t)(p->n ? p->n : 1));
	if (p->name == NULL || p->g == NULL)
		goto fail;
	json_array_foreach(grants, i, g)
	{
		struct srv_grant *x = &p->g[i];
		const json_t *ns = json_object_get(g, "namespace"), *l;
		const char *t = json_string_value(json_object_get(g, "table"));
		size_t k;

		x->privs = privs_of(jstr(g, "privilege"));
		x->wh = fl_arena_strdup(ar, jstr(g, "warehouse"));
		x->nlevels = (int)json_array_size(ns);
		x->levels = fl_arena_alloc(ar, sizeof(char *) * (size_t)(x->nlevels + 1));
		x->table = t ? fl_arena_strdup(ar, t) : NULL;
		if (x->wh == NULL || x->levels == NULL || (t && x->table == NULL))
			goto fail;
		json_array_foreach(ns, k, l)
		{
			const char *lv = json_string_value(l);

			x->levels[k] = fl_arena_strdup(ar, lv ? lv : "");
			if (x->levels[k] == NULL)
				goto fail;
		}
	}
	return p;
fail:
	fl_arena_free(ar);
	return NULL;
}

/* The principal for a cache key ("c\x1f<name>" or "x\x1f<issuer>\x1f<sub>"),
 * with a reference for the caller.  FL_ERR_NOT_AUTHORIZED when unknown. */
static int principal_get(struct srv_auth *a, const char *key, struct srv_principal **out,
                         struct fl_err *err)
{
	size_t slot = fnv(key) % PRINCIPAL_SLOTS;
	struct principal_slot *s = &a->principals[slot];
	pthread_mutex_t *mu = &a->stripes[slot % LOCK_STRIPES];
	unsigned gen = atomic_load(&a->gen);
	int64_t now = fl_mono_ns();
	struct srv_principal *p = NULL, *old = NULL;
	unsigned long db_gen = 0;
	bool db_known = cat_db_access_generation(a->db, &db_gen);
	char issuer[KEY_MAX];
	const char *subject;
	json_t *v = NULL;

	/* Fresh while nothing changed here and, when the database's change
	 * notifications are being received, nothing changed anywhere; without
	 * them, for auth-cache-ttl at most. */
	pthread_mutex_lock(mu);
	if (s->p != NULL && strcmp(s->key, key) == 0 && s->gen == gen &&
	    (db_known ? s->db_known && s->db_gen == db_gen
	              : now - s->loaded_ns < a->cfg->auth_cache_ttl * 1000000000LL)) {
		p = s->p;
		atomic_fetch_add(&p->refs, 1);
	}
	pthread_mutex_unlock(mu);
	if (p != NULL) {
		*out = p;
		return 0;
	}
	if (key[0] == 'x') {
		const char *sep = strchr(key + 2, '\x1f');

		snprintf(issuer, sizeof(issuer), "%.*s", (int)(sep - (key + 2)), key + 2);
		subject = sep + 1;
	} else {
		issuer[0] = '\0';
		subject = key + 2;
	}
	if (cat_principal_access(a->db, subject, issuer[0] ? issuer : NULL, &v, err) != 0) {
		if (err->kind == FL_ERR_NOT_FOUND)
			fl_err_set(
			        err, FL_ERR_NOT_AUTHORIZED,
			        "unknown principal: the token's subject is not (or no longer) a principal");
		return -1;
	}
	p = principal_build(v);
	json_decref(v);
	if (p == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	atomic_fetch_add(&p->refs, 1); /* one for the cache, one for the caller */
	pthread_mutex_lock(mu);
	old = s->p;
	snprintf(s->key, sizeof(s->key), "%s", key);
	s->p = p;
	s->loaded_ns = now;
	s->gen = gen;
	s->db_known = db_known;
	s->db_gen = db_gen;
	pthread_mutex_unlock(mu);
	principal_unref(old);
	*out = p;
	return 0;
}

/* ---- tokens ---- */

static int verify_token(struct srv_auth *a, const char *tok, struct token_slot *res,
                        struct fl_err *err)
{
	const struct srv_config *cfg = a->cfg;
	struct srv_jwt_expect x = {.now = now_s(), .skew = cfg->token_clock_skew};
	struct srv_jwt_claims c;
	char iss[256];
	bool unknown_kid;
	int rc;

	if (srv_jwt_peek_issuer(tok, iss, sizeof(iss), err) != 0)
		return -1;
	if (strcmp(iss, cfg->token_issuer) == 0) {
		x.issuer = cfg->token_issuer;
		x.audience = cfg->token_audience;
		if (srv_jwt_verify(tok, &a->own, &x, &c, &unknown_kid, err) != 0)
			return -1;
		res->own = true;
		snprintf(res->key, sizeof(res->key), "c\x1f%s", c.sub);
	} else if (cfg->oidc_issuer[0] != '\0' && strcmp(iss, cfg->oidc_issuer) == 0) {
		x.issuer = cfg->oidc_issuer;
		x.audience = cfg->oidc_audience;
		/* A worker may hold ext_mu while it fetches the JWKS. */
		if (fl_no_wait ? pthread_mutex_trylock(&a->ext_mu) != 0
		               : pthread_mutex_lock(&a->ext_mu) != 0)
			return fl_err_set(err, FL_ERR_WOULD_BLOCK, "the JWKS is being fetched");
		rc = srv_jwt_verify(tok, &a->ext, &x, &c, &unknown_kid, err);
		/* A new kid may mean the issuer rotated its keys: look again, but
		 * never more often than oidc-jwks-refresh. */
		if (rc != 0 && unknown_kid &&
		    (a->ext_fetched_ns == 0 ||
		     fl_mono_ns() - a->ext_fetched_ns >= cfg->oidc_jwks_refresh * 1000000000LL)) {
			struct fl_err ferr = {0};

			if (fl_may_wait(err) != 0) {
				pthread_mutex_unlock(&a->ext_mu);
				return -1;
			}
			if (refresh_jwks(a, &ferr) != 0)
				fl_warn(NULL, "auth: %s", ferr.msg);
			else
				rc = srv_jwt_verify(tok, &a->ext, &x, &c, &unknown_kid, err);
		}
		pthread_mutex_unlock(&a->ext_mu);
		if (rc != 0)
			return -1;
		res->own = false;
		snprintf(res->key, sizeof(res->key), "x\x1f%s\x1f%s", cfg->oidc_issuer, c.sub);
	} else {
		return fl_err_set(err, FL_ERR_NOT_AUTHORIZED, "invalid token: unknown issuer");
	}
	res->exp = c.exp;
	snprintf(res->fsv, sizeof(res->fsv), "%s", c.fsv);
	return 0;
}

/* Verifies tok through the token cache: res gets its principal's key. */
static int token_check(struct srv_auth *a, const char *tok, struct token_slot *res,
                       struct fl_err *err)
{
	struct token_slot *s;
	pthread_mutex_t *mu;
	size_t slot;
	int64_t now = now_s();
	bool hit = false;

	if (strlen(tok) > SRV_JWT_MAX_BYTES)
		return fl_err_set(err, FL_ERR_NOT_AUTHORIZED, "invalid token: too long");
	memset(res, 0, sizeof(*res));
	sha256(tok, strlen(tok), NULL, 0, res->h);
	slot = (res->h[0] | res->h[1] << 8 | (unsigned)res->h[2] << 16) % TOKEN_SLOTS;
	s = &a->tokens[slot];
	mu = &a->stripes[slot % LOCK_STRIPES];
	pthread_mutex_lock(mu);
	if (s->used && memcmp(s->h, res->h, 32) == 0) {
		if (s->exp > now - a->cfg->token_clock_skew) {
			*res = *s;
			hit = true;
		} else {
			s->used = false;
		}
	}
	pthread_mutex_unlock(mu);
	if (!hit) {
		if (verify_token(a, tok, res, err) != 0)
			return -1;
		res->used = true;
		pthread_mutex_lock(mu);
		*s = *res;
		pthread_mutex_unlock(mu);
	}
	return 0;
}

/* The token of an Authorization header (NULL if it is not a Bearer one). */
static const char *bearer_token(const char *hdr)
{
	const char *tok;

	if (strncasecmp(hdr, "Bearer ", 7) != 0)
		return NULL;
	for (tok = hdr + 7; *tok == ' ';)
		tok++;
	return tok;
}

int srv_auth_token_refused(struct srv_auth *a, const char *hdr, struct fl_err *err)
{
	struct token_slot res;
	const char *tok = bearer_token(hdr);
	struct fl_err e = {0};

	if (tok == NULL)
		return 0;
	if (token_check(a, tok, &res, &e) == 0 || e.kind != FL_ERR_NOT_AUTHORIZED)
		return 0;
	*err = e;
	return 1;
}

/* The principal of a Bearer token, through the token cache. */
static int authenticate(struct srv_req *r, const char *tok, struct fl_err *err)
{
	struct srv_auth *a = r->ctx->auth;
	struct token_slot res;
	struct srv_principal *p = NULL;

	if (token_check(a, tok, &res, err) != 0)
		return -1;
	if (principal_get(a, res.key, &p, err) != 0)
		return -1;
	if (fl_arena_defer(r->arena, principal_unref, p) != 0) {
		principal_unref(p);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	/* A rotation (or a delete and re-create) changes the secret version:
	 * tokens issued before it stop working at once. */
	if (res.own && strcmp(res.fsv, p->fsv) != 0)
		return fl_err_set(
		        err, FL_ERR_NOT_AUTHORIZED,
		        "invalid token: issued before the principal's secret was rotated");
	r->principal = p;
	return 0;
}

/* ---- authorization ---- */

/* Whether grant g covers the resource (wh, ns, table): the same warehouse
 * (or "*"), a namespace that is ns or one of its parents, and the table. */
static bool covers(const struct srv_grant *g, const char *wh, const struct cat_ns *ns,
                   const char *table)
{
	int n = ns ? ns->n : 0;

	if (strcmp(g->wh, "*") != 0 && (wh == NULL || strcmp(g->wh, wh) != 0))
		return false;
	if (g->nlevels > n)
		return false;
	for (int i = 0; i < g->nlevels; i++)
		if (strcmp(g->levels[i], ns->levels[i]) != 0)
			return false;
	if (g->table != NULL)
		return table != NULL && g->nlevels == n && strcmp(g->table, table) == 0;
	return true;
}

/* Whether grant g lies strictly below the namespace (wh, ns): then the
 * namespace must be visible so the caller can reach what g gives. */
static bool below(const struct srv_grant *g, const char *wh, const struct cat_ns *ns)
{
	int n = ns ? ns->n : 0;

	if (wh == NULL || strcmp(g->wh, wh) != 0 || g->nlevels < n)
		return false;
	for (int i = 0; i < n; i++)
		if (strcmp(g->levels[i], ns->levels[i]) != 0)
			return false;
	return g->nlevels > n || g->table != NULL;
}

static bool allowed(const struct srv_principal *p, enum srv_priv priv, const char *wh,
                    const struct cat_ns *ns, const char *table)
{
	for (int i = 0; i < p->n; i++)
		if ((p->g[i].privs & P(priv)) && covers(&p->g[i], wh, ns, table))
			return true;
	return false;
}

static bool sees(const struct srv_principal *p, const char *wh, const struct cat_ns *ns,
                 const char *table)
{
	for (int i = 0; i < p->n; i++) {
		if (p->g[i].privs == 0)
			continue;
		if (covers(&p->g[i], wh, ns, table) || (table == NULL && below(&p->g[i], wh, ns)))
			return true;
	}
	return false;
}

static const char *resource_str(const char *wh, const struct cat_ns *ns, const char *table,
                                char *buf, size_t cap)
{
	char nb[300];

	if (wh == NULL)
		snprintf(buf, cap, "the management API");
	else if (ns == NULL || ns->n == 0)
		snprintf(buf, cap, "warehouse %.200s", wh);
	else if (table == NULL)
		snprintf(buf, cap, "namespace %s", cat_ns_str(ns, nb, sizeof(nb)));
	else
		snprintf(buf, cap, "table %s.%.100s", cat_ns_str(ns, nb, sizeof(nb)), table);
	return buf;
}

int srv_authorize(struct srv_req *r, enum srv_priv priv, const char *wh, const struct cat_ns *ns,
                  const char *table, struct fl_err *err)
{
	const struct srv_principal *p = r->principal;
	char rb[400];
	bool ok;

	if (!srv_auth_enabled(r->ctx->auth) || priv == SRV_PRIV_PUBLIC)
		return 0;
	if (p == NULL)
		return fl_err_set(err, FL_ERR_NOT_AUTHORIZED, "authentication required");
	if (priv == SRV_PRIV_AUTHENTICATED)
		return 0;
	/* Reading a namespace (or listing a warehouse) needs only visibility. */
	if (priv == SRV_PRIV_NAMESPACE_READ || priv == SRV_PRIV_CATALOG_READ)
		ok = allowed(p, priv, wh, ns, table) || sees(p, wh, ns, NULL);
	else
		ok = allowed(p, priv, wh, ns, table);
	if (ok)
		return 0;
	fl_info(r->id, "auth: principal %s lacks %s on %s", p->name, srv_priv_name(priv),
	        resource_str(wh, ns, table, rb, sizeof(rb)));
	return fl_err_set(err, FL_ERR_FORBIDDEN, "principal '%.100s' lacks privilege %s on %s",
	                  p->name, srv_priv_name(priv),
	                  resource_str(wh, ns, table, rb, sizeof(rb)));
}

bool srv_auth_visible(struct srv_req *r, const char *wh, const struct cat_ns *ns, const char *table)
{
	if (!srv_auth_enabled(r->ctx->auth))
		return true;
	return r->principal != NULL && sees(r->principal, wh, ns, table);
}

/* Levels of a JSON array of strings into ns (pointers into the array). */
static bool json_ns(json_t *arr, const char **buf, int cap, struct cat_ns *ns)
{
	json_t *v;
	size_t i;

	if (!json_is_array(arr) || (int)json_array_size(arr) > cap)
		return false;
	json_array_foreach(arr, i, v)
	{
		if (!json_is_string(v))
			return false;
		buf[i] = json_string_value(v);
	}
	ns->levels = buf;
	ns->n = (int)json_array_size(arr);
	return true;
}

void srv_auth_filter(struct srv_req *r, const char *wh, json_t *arr, bool tables)
{
	const char *lv[64];

	if (!srv_auth_enabled(r->ctx->auth))
		return;
	for (size_t i = json_array_size(arr); i-- > 0;) {
		json_t *e = json_array_get(arr, i);
		struct cat_ns ns;
		bool keep;

		if (tables)
			keep = json_ns(json_object_get(e, "namespace"), lv, 64, &ns) &&
			       srv_auth_visible(r, wh, &ns, jstr(e, "name"));
		else
			keep = json_ns(e, lv, 64, &ns) && srv_auth_visible(r, wh, &ns, NULL);
		if (!keep)
			json_array_remove(arr, i);
	}
}

enum srv_access srv_access_level(struct srv_req *r, const char *wh, const struct cat_ns *ns,
                                 const char *table)
{
	if (!srv_auth_enabled(r->ctx->auth))
		return SRV_ACCESS_READ_WRITE;
	if (r->principal == NULL)
		return SRV_ACCESS_NONE;
	if (allowed(r->principal, SRV_PRIV_TABLE_WRITE, wh, ns, table))
		return SRV_ACCESS_READ_WRITE;
	if (allowed(r->principal, SRV_PRIV_TABLE_READ, wh, ns, table))
		return SRV_ACCESS_READ;
	return SRV_ACCESS_NONE;
}

const char *srv_actor(struct srv_req *r)
{
	return r->principal ? r->principal->name : NULL;
}

/* Routes whose resources are in the request body; their handlers call
 * srv_authorize for each resource once the body is parsed. */
static bool resource_in_body(const struct srv_req *r)
{
	enum srv_priv p = r->route->priv;

	return (p == SRV_PRIV_NAMESPACE_CREATE && r->namespace_raw == NULL) ||
	       (p == SRV_PRIV_TABLE_WRITE && r->table == NULL);
}

int srv_auth_request(struct srv_req *r, struct fl_err *err)
{
	const char *hdr, *tok, *wh = NULL, *parent = NULL;
	struct cat_ns ns = {NULL, 0};
	enum srv_priv priv = r->route->priv;

	if (priv == SRV_PRIV_PUBLIC || !srv_auth_enabled(r->ctx->auth) ||
	    (priv == SRV_PRIV_METRICS && r->ctx->cfg->metrics_public))
		return 0;
	hdr = srv_header(r, "Authorization");
	if (hdr == NULL) {
		fl_info(r->id, "auth: no Authorization header on %s %s", r->method, r->route->path);
		return fl_err_set(
		        err, FL_ERR_NOT_AUTHORIZED,
		        "authentication required: send Authorization: Bearer <token> (POST /v1/oauth/tokens issues one)");
	}
	if ((tok = bearer_token(hdr)) == NULL) {
		fl_info(r->id, "auth: Authorization is not a Bearer token");
		return fl_err_set(err, FL_ERR_NOT_AUTHORIZED,
		                  "Authorization must be a Bearer token");
	}
	/* Refused already, before the body was read (httpd.c body_limit): a
	 * forged token costs one signature check, not two. */
	if (r->token_err.kind != FL_ERR_NONE) {
		*err = r->token_err;
		fl_info(r->id, "auth: rejected a token: %s", err->msg);
		return -1;
	}
	if (authenticate(r, tok, err) != 0) {
		if (err->kind == FL_ERR_NOT_AUTHORIZED)
			fl_info(r->id, "auth: rejected a token: %s", err->msg);
		return -1;
	}
	if (priv == SRV_PRIV_AUTHENTICATED)
		return 0;
	if (strstr(r->route->path, "{prefix}") != NULL && srv_warehouse_name(r, &wh, err) != 0)
		return -1;
	if (resource_in_body(r))
		return sees(r->principal, wh, NULL, NULL)
		               ? 0
		               : srv_authorize(r, priv, wh, NULL, NULL, err);
	if (r->namespace_raw != NULL) {
		if (srv_namespace(r, r->namespace_raw, &ns, err) != 0)
			return -1;
	} else if (priv == SRV_PRIV_CATALOG_READ) {
		/* Listing children of ?parent= needs visibility of the parent. */
		if (srv_query(r, "parent", &parent, err) != 0)
			return -1;
		if (parent != NULL && parent[0] != '\0' && srv_namespace(r, parent, &ns, err) != 0)
			return -1;
	}
	return srv_authorize(r, priv, wh, &ns, r->table, err);
}

/* ---- the token endpoint ---- */

/* Seconds until key may try again (0 = now). */
static int64_t limited(struct srv_auth *a, const char *key, int64_t now)
{
	uint64_t h = fnv(key);
	struct limit_slot *s = &a->limits[h % LIMIT_SLOTS];
	int64_t wait = 0;

	pthread_mutex_lock(&a->mu);
	if (s->h == h && now - s->start < LIMIT_WINDOW_S && s->count >= a->cfg->auth_max_failures)
		wait = s->start + LIMIT_WINDOW_S - now;
	pthread_mutex_unlock(&a->mu);
	return wait;
}

static void failed(struct srv_auth *a, const char *key, int64_t now)
{
	uint64_t h = fnv(key);
	struct limit_slot *s = &a->limits[h % LIMIT_SLOTS];

	pthread_mutex_lock(&a->mu);
	if (s->h != h || now - s->start >= LIMIT_WINDOW_S) {
		s->h = h;
		s->start = now;
		s->count = 0;
	}
	s->count++;
	pthread_mutex_unlock(&a->mu);
}

/* Checks secret against the stored hash; a recent success is remembered
 * (keyed by hash and secret together, so a rotation misses). */
static bool secret_ok(struct srv_auth *a, const char *stored, const char *secret, int64_t now)
{
	unsigned char h[32];
	struct secret_slot *s;
	bool ok = false;

	sha256(stored, strlen(stored) + 1, secret, strlen(secret), h);
	s = &a->secrets[h[0] % SECRET_SLOTS];
	pthread_mutex_lock(&a->mu);
	ok = s->until > now && CRYPTO_memcmp(s->h, h, 32) == 0;
	pthread_mutex_unlock(&a->mu);
	if (ok)
		return true;
	if (!cat_secret_verify(secret, stored))
		return false;
	pthread_mutex_lock(&a->mu);
	memcpy(s->h, h, 32);
	s->until = now + SECRET_CACHE_S;
	pthread_mutex_unlock(&a->mu);
	return true;
}

static void client_address(struct srv_req *r, char *buf, size_t cap)
{
	const union MHD_ConnectionInfo *ci =
	        srv_libmhd()->get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	snprintf(buf, cap, "a\x1f?");
	if (sa != NULL && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr,
		          buf + 2, (socklen_t)(cap - 2));
}

int srv_auth_token(struct srv_req *r, const char *client_id, const char *secret, const char *scope,
                   json_t **out, int *retry_after, struct fl_err *err)
{
	struct srv_auth *a = r->ctx->auth;
	const struct srv_config *cfg = a->cfg;
	char ckey[300], akey[64], jti[FL_UUID_STR], *hash = NULL, *tok = NULL;
	int64_t now = now_s(), wait;
	unsigned char hv[32];
	char fsv[24] = "";
	json_t *claims;
	int rc = -1;

	snprintf(ckey, sizeof(ckey), "c\x1f%.255s", client_id);
	client_address(r, akey, sizeof(akey));
	wait = limited(a, ckey, now);
	if (wait == 0)
		wait = limited(a, akey, now);
	if (wait > 0) {
		*retry_after = (int)wait;
		fl_warn(r->id, "auth: token requests for client %.100s or from %s are rate limited",
		        client_id, akey + 2);
		return fl_err_set(err, FL_ERR_TOO_MANY_REQUESTS,
		                  "too many failed attempts; retry after %lld s", (long long)wait);
	}
	if (cat_principal_secret(a->db, client_id, &hash, err) != 0) {
		if (err->kind != FL_ERR_NOT_FOUND)
			return -1;
	} else if (secret_ok(a, hash, secret, now)) {
		/* The same fingerprint the database computes (cat_principal_access). */
		sha256(hash, strlen(hash), NULL, 0, hv);
		for (int i = 0; i < 8; i++)
			snprintf(fsv + 2 * i, 3, "%02x", hv[i]);
		rc = 0;
	}
	free(hash);
	if (rc != 0) {
		failed(a, ckey, now);
		failed(a, akey, now);
		fl_info(r->id, "auth: token request for client %.100s from %s refused", client_id,
		        akey + 2);
		return fl_err_set(err, FL_ERR_NOT_AUTHORIZED, "unknown client or wrong secret");
	}
	fl_uuid_v4(jti);
	claims =
	        json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:s, s:s}", "iss", cfg->token_issuer,
	                  "sub", client_id, "aud", cfg->token_audience, "iat", (json_int_t)now,
	                  "nbf", (json_int_t)now, "exp", (json_int_t)(now + cfg->token_lifetime),
	                  "jti", jti, "scope", scope, "fsv", fsv);
	if (claims == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	rc = srv_jwt_sign(&a->signing, claims, &tok, err);
	json_decref(claims);
	if (rc != 0)
		return -1;
	*out = json_pack("{s:s, s:s, s:I, s:s, s:s}", "access_token", tok, "token_type", "bearer",
	                 "expires_in", (json_int_t)cfg->token_lifetime, "issued_token_type",
	                 "urn:ietf:params:oauth:token-type:access_token", "scope", scope);
	OPENSSL_cleanse(tok, strlen(tok));
	free(tok);
	if (*out == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	fl_info(r->id, "auth: issued a token to client %.100s", client_id);
	return 0;
}

/* ---- bootstrap ---- */

int srv_auth_bootstrap(struct cat_db *db, const char *client_id, const char *secret, bool *created,
                       struct fl_err *err)
{
	size_t n = strlen(client_id);
	char *hash = NULL;
	int rc;

	if (n == 0 || n > 255 ||
	    strspn(client_id,
	           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-") != n)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "bootstrap client id must be 1-255 characters of A-Z a-z 0-9 . _ @ -");
	if (strlen(secret) < 16 || strlen(secret) > 255)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "bootstrap client secret must be 16 to 255 bytes");
	if (cat_secret_hash(secret, &hash, err) != 0)
		return -1;
	rc = cat_principal_bootstrap(db, client_id, hash, created, err);
	free(hash);
	return rc;
}
