/* jose.c - keys, JWKS and token checks (RFC 7515, 7517, 7518, 7519).
 *
 * A token is three base64url parts "header.payload.signature".  The header
 * is parsed here, before libjwt sees the token, so that the algorithm is
 * chosen by the key (RS256 for RSA, ES256 for EC P-256) and never by the
 * token; after libjwt has verified the signature with that one key, the
 * algorithm libjwt used is compared again.  The claims are then checked
 * here because libjwt 1.10 checks none of them. */
#include "jose.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcrypto.h"
#include "b64.h"
#include "json.h"
#include "libjwt.h"

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* PEM text of pkey's public part (and private part when priv) into k. */
static int fill_pem(EVP_PKEY *pkey, bool priv, struct srv_key *k, struct fl_err *err)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p;
	long n;
	int rc = -1;

	if (b == NULL || PEM_write_bio_PUBKEY(b, pkey) != 1)
		goto out;
	n = BIO_get_mem_data(b, &p);
	k->pub_pem = malloc((size_t)n + 1);
	if (k->pub_pem == NULL)
		goto out;
	memcpy(k->pub_pem, p, (size_t)n);
	k->pub_pem[n] = '\0';
	k->pub_len = (size_t)n;
	if (priv) {
		BIO_free(b);
		b = BIO_new(BIO_s_mem());
		if (b == NULL || PEM_write_bio_PrivateKey(b, pkey, NULL, NULL, 0, NULL, NULL) != 1)
			goto out;
		n = BIO_get_mem_data(b, &p);
		k->priv_pem = malloc((size_t)n + 1);
		if (k->priv_pem == NULL)
			goto out;
		memcpy(k->priv_pem, p, (size_t)n);
		k->priv_pem[n] = '\0';
		k->priv_len = (size_t)n;
	}
	rc = 0;
out:
	BIO_free(b);
	if (rc != 0)
		fl_err_set(err, FL_ERR_INTERNAL, "cannot encode the key as PEM");
	return rc;
}

/* Type of pkey (RSA >= 2048 bits or EC P-256) and its derived kid. */
static int classify(EVP_PKEY *pkey, struct srv_key *k, struct fl_err *err)
{
	unsigned char *der = NULL, h[32];
	unsigned int hl = 0;
	char group[32];
	int n;

	if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_RSA) {
		if (EVP_PKEY_get_bits(pkey) < 2048)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "RSA key of %d bits is too short (2048 at least)",
			                  EVP_PKEY_get_bits(pkey));
		k->type = SRV_KEY_RSA;
	} else if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC &&
	           EVP_PKEY_get_group_name(pkey, group, sizeof(group), NULL) == 1 &&
	           (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0)) {
		k->type = SRV_KEY_EC256;
	} else {
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "key type not supported (RSA 2048+ for RS256, EC P-256 for ES256)");
	}
	n = i2d_PUBKEY(pkey, &der);
	if (n <= 0 || EVP_Digest(der, (size_t)n, h, &hl, EVP_sha256(), NULL) != 1) {
		OPENSSL_free(der);
		return fl_err_set(err, FL_ERR_INTERNAL, "cannot hash the public key");
	}
	OPENSSL_free(der);
	if (k->kid[0] == '\0')
		fl_b64url_encode(h, 12, k->kid);
	return 0;
}

static bool pair_matches(EVP_PKEY *pkey)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
	bool ok = ctx != NULL && EVP_PKEY_pairwise_check(ctx) == 1;

	EVP_PKEY_CTX_free(ctx);
	return ok;
}

int srv_key_from_pem(const char *pem, size_t len, struct srv_key *out, struct fl_err *err)
{
	struct srv_key k = {0};
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	EVP_PKEY *pkey = NULL;
	bool priv = true;
	int rc = -1;

	if (b == NULL)
		return nomem(err);
	pkey = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	if (pkey == NULL) {
		priv = false;
		(void)BIO_reset(b);
		pkey = PEM_read_bio_PUBKEY(b, NULL, NULL, NULL);
	}
	if (pkey == NULL) {
		fl_err_set(err, FL_ERR_BAD_REQUEST, "not a PEM private or public key");
		goto out;
	}
	/* OpenSSL loads a private key whose public part does not belong to
	 * it; the kid and the published key come from that part, the
	 * signatures from the private one, and every token would be refused. */
	if (priv && !pair_matches(pkey)) {
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "the private key does not match its public key");
		goto out;
	}
	if (classify(pkey, &k, err) != 0 || fill_pem(pkey, priv, &k, err) != 0)
		goto out;
	*out = k;
	memset(&k, 0, sizeof(k));
	rc = 0;
out:
	srv_key_free(&k);
	EVP_PKEY_free(pkey);
	BIO_free(b);
	return rc;
}

int srv_key_generate(struct srv_key *out, struct fl_err *err)
{
	EVP_PKEY *pkey = EVP_EC_gen("P-256");
	struct srv_key k = {0};
	int rc = -1;

	if (pkey == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "cannot generate an EC P-256 key");
	if (classify(pkey, &k, err) == 0 && fill_pem(pkey, true, &k, err) == 0) {
		*out = k;
		memset(&k, 0, sizeof(k));
		rc = 0;
	}
	srv_key_free(&k);
	EVP_PKEY_free(pkey);
	return rc;
}

void srv_key_free(struct srv_key *k)
{
	if (k == NULL)
		return;
	free(k->pub_pem);
	if (k->priv_pem != NULL)
		OPENSSL_cleanse(k->priv_pem, k->priv_len);
	free(k->priv_pem);
	k->pub_pem = k->priv_pem = NULL;
}

int srv_keyset_add(struct srv_keyset *ks, const struct srv_key *k, bool with_private,
                   struct fl_err *err)
{
	struct srv_key *n = realloc(ks->keys, sizeof(*n) * (size_t)(ks->n + 1)), *d;

	if (n == NULL)
		return nomem(err);
	ks->keys = n;
	d = &n[ks->n];
	*d = *k;
	d->pub_pem = malloc(k->pub_len + 1);
	d->priv_pem = NULL;
	if (d->pub_pem == NULL)
		return nomem(err);
	memcpy(d->pub_pem, k->pub_pem, k->pub_len + 1);
	if (with_private && k->priv_pem != NULL) {
		d->priv_pem = malloc(k->priv_len + 1);
		if (d->priv_pem == NULL) {
			free(d->pub_pem);
			return nomem(err);
		}
		memcpy(d->priv_pem, k->priv_pem, k->priv_len + 1);
	}
	ks->n++;
	return 0;
}

void srv_keyset_free(struct srv_keyset *ks)
{
	if (ks == NULL)
		return;
	for (int i = 0; i < ks->n; i++)
		srv_key_free(&ks->keys[i]);
	free(ks->keys);
	ks->keys = NULL;
	ks->n = 0;
}

const struct srv_key *srv_keyset_find(const struct srv_keyset *ks, const char *kid)
{
	if (kid == NULL)
		return ks->n == 1 ? &ks->keys[0] : NULL;
	for (int i = 0; i < ks->n; i++)
		if (strcmp(ks->keys[i].kid, kid) == 0)
			return &ks->keys[i];
	return NULL;
}

/* A big-endian integer member of a JWK, decoded into buf. */
static int jwk_bytes(const json_t *jwk, const char *name, unsigned char *buf, size_t cap, size_t *n,
                     struct fl_err *err)
{
	const char *s = json_string_value(json_object_get(jwk, name));

	if (s == NULL || fl_b64_decode(s, strlen(s), buf, cap, n) != 0 || *n == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "JWK member %s is missing or invalid",
		                  name);
	return 0;
}

/* One JWK to an EVP_PKEY (RSA n/e or EC P-256 x/y). */
static EVP_PKEY *jwk_pkey(const json_t *jwk, const char *kty, struct fl_err *err)
{
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	EVP_PKEY *pkey = NULL;
	BIGNUM *n = NULL, *e = NULL;
	unsigned char a[1024], b[1024], pub[65];
	size_t al = 0, bl = 0;

	if (bld == NULL) {
		nomem(err);
		return NULL;
	}
	if (strcmp(kty, "RSA") == 0) {
		if (jwk_bytes(jwk, "n", a, sizeof(a), &al, err) != 0 ||
		    jwk_bytes(jwk, "e", b, sizeof(b), &bl, err) != 0)
			goto out;
		n = BN_bin2bn(a, (int)al, NULL);
		e = BN_bin2bn(b, (int)bl, NULL);
		if (n == NULL || e == NULL ||
		    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) ||
		    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e))
			goto fail;
	} else {
		const char *crv = json_string_value(json_object_get(jwk, "crv"));

		if (crv == NULL || strcmp(crv, "P-256") != 0) {
			fl_err_set(err, FL_ERR_BAD_REQUEST, "EC JWK curve must be P-256");
			goto out;
		}
		if (jwk_bytes(jwk, "x", a, sizeof(a), &al, err) != 0 ||
		    jwk_bytes(jwk, "y", b, sizeof(b), &bl, err) != 0)
			goto out;
		if (al != 32 || bl != 32) {
			fl_err_set(err, FL_ERR_BAD_REQUEST, "EC JWK x and y must be 32 bytes");
			goto out;
		}
		pub[0] = 0x04; /* uncompressed point */
		memcpy(pub + 1, a, 32);
		memcpy(pub + 33, b, 32);
		if (!OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1",
		                                     0) ||
		    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub,
		                                      sizeof(pub)))
			goto fail;
	}
	params = OSSL_PARAM_BLD_to_param(bld);
	ctx = EVP_PKEY_CTX_new_from_name(NULL, strcmp(kty, "RSA") == 0 ? "RSA" : "EC", NULL);
	if (params == NULL || ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1) {
		pkey = NULL;
		goto fail;
	}
	goto out;
fail:
	fl_err_set(err, FL_ERR_BAD_REQUEST, "JWK of type %s is not a valid public key", kty);
out:
	BN_free(n);
	BN_free(e);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	EVP_PKEY_CTX_free(ctx);
	return pkey;
}

int srv_jwks_parse(const char *text, size_t len, struct srv_keyset *out, struct fl_err *err)
{
	struct srv_keyset ks = {0};
	json_t *doc = NULL, *keys, *jwk;
	size_t i;
	int rc = -1;

	if (fl_json_parse(text, len, 16, &doc, err) != 0)
		return fl_err_prefix(err, "JWKS");
	keys = json_object_get(doc, "keys");
	if (!json_is_array(keys)) {
		fl_err_set(err, FL_ERR_BAD_REQUEST, "JWKS has no keys array");
		goto out;
	}
	json_array_foreach(keys, i, jwk)
	{
		const char *kty = json_string_value(json_object_get(jwk, "kty"));
		const char *use = json_string_value(json_object_get(jwk, "use"));
		const char *kid = json_string_value(json_object_get(jwk, "kid"));
		struct srv_key k = {0};
		EVP_PKEY *pkey;

		if (kty == NULL || (strcmp(kty, "RSA") != 0 && strcmp(kty, "EC") != 0) ||
		    (use != NULL && strcmp(use, "sig") != 0))
			continue;
		if (kid != NULL && strlen(kid) >= sizeof(k.kid)) {
			fl_err_set(err, FL_ERR_BAD_REQUEST, "JWKS key %zu: kid is too long", i);
			goto out;
		}
		if (kid != NULL)
			memcpy(k.kid, kid, strlen(kid) + 1);
		pkey = jwk_pkey(jwk, kty, err);
		if (pkey == NULL) {
			fl_err_prefix(err, "JWKS key %zu", i);
			goto out;
		}
		if (classify(pkey, &k, err) != 0 || fill_pem(pkey, false, &k, err) != 0 ||
		    srv_keyset_add(&ks, &k, false, err) != 0) {
			if (err->kind == FL_ERR_BAD_REQUEST)
				fl_err_prefix(err, "JWKS key %zu", i);
			EVP_PKEY_free(pkey);
			srv_key_free(&k);
			goto out;
		}
		EVP_PKEY_free(pkey);
		srv_key_free(&k);
	}
	if (ks.n == 0) {
		fl_err_set(err, FL_ERR_BAD_REQUEST, "JWKS holds no RSA or EC P-256 signing key");
		goto out;
	}
	*out = ks;
	memset(&ks, 0, sizeof(ks));
	rc = 0;
out:
	srv_keyset_free(&ks);
	json_decref(doc);
	return rc;
}

int srv_jwt_sign(const struct srv_key *k, const json_t *claims, char **out, struct fl_err *err)
{
	const struct srv_libjwt *jw = srv_libjwt_load(err);
	jwt_t *jwt = NULL;
	char *text = NULL, *tok = NULL;
	int rc = -1;

	if (jw == NULL)
		return -1;
	if (k->priv_pem == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "key %s cannot sign", k->kid);
	text = fl_json_dump(claims, NULL);
	if (text == NULL || jw->new (&jwt) != 0) {
		nomem(err);
		goto out;
	}
	if (jw->add_grants_json(jwt, text) != 0 || jw->add_header(jwt, "kid", k->kid) != 0 ||
	    jw->set_alg(jwt, k->type == SRV_KEY_RSA ? JWT_ALG_RS256 : JWT_ALG_ES256,
	                (const unsigned char *)k->priv_pem, (int)k->priv_len) != 0 ||
	    (tok = jw->encode_str(jwt)) == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "cannot sign the token");
		goto out;
	}
	*out = tok;
	rc = 0;
out:
	free(text);
	jw->free(jwt);
	return rc;
}

static int bad(struct fl_err *err, const char *why)
{
	return fl_err_set(err, FL_ERR_NOT_AUTHORIZED, "invalid token: %s", why);
}

/* Decodes part i (0 = header, 1 = payload) of a token as a JSON object;
 * also checks the token's shape: three non-empty base64url parts. */
static int part_json(const char *token, int part, json_t **out, struct fl_err *err)
{
	const char *d1, *d2, *s, *e;
	unsigned char buf[SRV_JWT_MAX_BYTES];
	size_t n = strlen(token), dn;
	json_t *v = NULL;

	if (n == 0 || n > SRV_JWT_MAX_BYTES)
		return bad(err, n == 0 ? "empty" : "too long");
	if (strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.") != n)
		return bad(err, "not a compact JWS (bad characters)");
	d1 = strchr(token, '.');
	d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	if (d1 == NULL || d2 == NULL || strchr(d2 + 1, '.') != NULL || d1 == token ||
	    d2 == d1 + 1 || d2[1] == '\0')
		return bad(err, "not a compact JWS (three non-empty parts)");
	s = part == 0 ? token : d1 + 1;
	e = part == 0 ? d1 : d2;
	if (fl_b64_decode(s, (size_t)(e - s), buf, sizeof(buf), &dn) != 0)
		return bad(err, "a part is not base64url");
	if (fl_json_parse((const char *)buf, dn, 8, &v, err) != 0 || !json_is_object(v)) {
		json_decref(v);
		return bad(err, part == 0 ? "header is not a JSON object"
		                          : "payload is not a JSON object");
	}
	*out = v;
	return 0;
}

int srv_jwt_peek_issuer(const char *token, char *iss, size_t cap, struct fl_err *err)
{
	json_t *p = NULL;
	const char *s;
	int rc = -1;

	if (part_json(token, 1, &p, err) != 0)
		return -1;
	s = json_string_value(json_object_get(p, "iss"));
	if (s == NULL || strlen(s) >= cap)
		bad(err, "no issuer");
	else {
		memcpy(iss, s, strlen(s) + 1);
		rc = 0;
	}
	json_decref(p);
	return rc;
}

/* A NumericDate claim: absent (0, *have = false) or a number. */
static int num_claim(const json_t *c, const char *name, int64_t *v, bool *have, struct fl_err *err)
{
	const json_t *x = json_object_get(c, name);

	*have = x != NULL;
	*v = 0;
	if (x == NULL)
		return 0;
	if (json_is_integer(x))
		*v = json_integer_value(x);
	else if (json_is_real(x) && json_real_value(x) > -9e15 && json_real_value(x) < 9e15)
		*v = (int64_t)json_real_value(x);
	else
		return fl_err_set(err, FL_ERR_NOT_AUTHORIZED, "invalid token: %s is not a number",
		                  name);
	return 0;
}

static bool aud_ok(const json_t *aud, const char *want)
{
	const json_t *v;
	size_t i;

	if (json_is_string(aud))
		return strcmp(json_string_value(aud), want) == 0;
	json_array_foreach(aud, i, v) if (json_is_string(v) &&
	                                  strcmp(json_string_value(v), want) == 0) return true;
	return false;
}

/* The claim checks libjwt 1.10 does not make. */
static int check_claims(const json_t *c, const struct srv_jwt_expect *x, struct srv_jwt_claims *out,
                        struct fl_err *err)
{
	const char *iss = json_string_value(json_object_get(c, "iss"));
	const char *sub = json_string_value(json_object_get(c, "sub")), *fsv;
	int64_t exp, nbf, iat;
	bool has_exp, has_nbf, has_iat;

	if (num_claim(c, "exp", &exp, &has_exp, err) != 0 ||
	    num_claim(c, "nbf", &nbf, &has_nbf, err) != 0 ||
	    num_claim(c, "iat", &iat, &has_iat, err) != 0)
		return -1;
	if (!has_exp)
		return bad(err, "no exp claim");
	/* The skew moves now, not the claims: a claim may be any int64. */
	if (exp <= x->now - x->skew)
		return bad(err, "expired");
	if (has_nbf && nbf > x->now + x->skew)
		return bad(err, "not yet valid (nbf)");
	if (has_iat && iat > x->now + x->skew)
		return bad(err, "issued in the future (iat)");
	if (iss == NULL || strcmp(iss, x->issuer) != 0)
		return bad(err, "wrong issuer");
	if (x->audience != NULL && !aud_ok(json_object_get(c, "aud"), x->audience))
		return bad(err, "wrong audience");
	if (sub == NULL || sub[0] == '\0' || strlen(sub) >= sizeof(out->sub))
		return bad(err, "no usable sub claim");
	memcpy(out->sub, sub, strlen(sub) + 1);
	fsv = json_string_value(json_object_get(c, "fsv"));
	snprintf(out->fsv, sizeof(out->fsv), "%s",
	         fsv && strlen(fsv) < sizeof(out->fsv) ? fsv : "");
	out->exp = exp;
	out->iat = has_iat ? iat : 0;
	return 0;
}

int srv_jwt_verify(const char *token, const struct srv_keyset *ks, const struct srv_jwt_expect *x,
                   struct srv_jwt_claims *out, bool *unknown_kid, struct fl_err *err)
{
	const struct srv_libjwt *jw = srv_libjwt_load(err);
	json_t *hdr = NULL, *claims = NULL;
	const struct srv_key *k;
	const char *alg, *kid;
	jwt_alg_t want;
	jwt_t *jwt = NULL;
	char *text = NULL;
	int rc = -1;

	*unknown_kid = false;
	if (jw == NULL)
		return -1;
	if (part_json(token, 0, &hdr, err) != 0)
		return -1;
	alg = json_string_value(json_object_get(hdr, "alg"));
	kid = json_string_value(json_object_get(hdr, "kid"));
	if (alg == NULL || (strcmp(alg, "RS256") != 0 && strcmp(alg, "ES256") != 0)) {
		bad(err, "algorithm not allowed (RS256 or ES256 only)");
		goto out;
	}
	if (json_object_get(hdr, "crit") != NULL) {
		bad(err, "critical header extensions are not supported");
		goto out;
	}
	if (json_object_get(hdr, "kid") != NULL && kid == NULL) {
		bad(err, "kid is not a string");
		goto out;
	}
	k = srv_keyset_find(ks, kid);
	if (k == NULL) {
		*unknown_kid = true;
		bad(err, kid ? "unknown kid" : "no kid and more than one key");
		goto out;
	}
	want = k->type == SRV_KEY_RSA ? JWT_ALG_RS256 : JWT_ALG_ES256;
	if (jw->str_alg(alg) != want) {
		bad(err, "algorithm does not match the key type");
		goto out;
	}
	if (jw->decode(&jwt, token, (const unsigned char *)k->pub_pem, (int)k->pub_len) != 0 ||
	    jwt == NULL) {
		jwt = NULL;
		bad(err, "bad signature");
		goto out;
	}
	if (jw->get_alg(jwt) != want) {
		bad(err, "algorithm does not match the key type");
		goto out;
	}
	text = jw->get_grants_json(jwt, NULL);
	if (text == NULL || fl_json_parse(text, strlen(text), 8, &claims, err) != 0 ||
	    !json_is_object(claims)) {
		bad(err, "payload is not a JSON object");
		goto out;
	}
	rc = check_claims(claims, x, out, err);
out:
	free(text);
	jw->free(jwt);
	json_decref(hdr);
	json_decref(claims);
	return rc;
}
