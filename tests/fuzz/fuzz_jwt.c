/* fuzz_jwt.c - srv_jwt_verify, srv_jwt_peek_issuer, srv_jwks_parse and
 * srv_key_from_pem on arbitrary input: a Bearer token comes from anyone on
 * the network before authentication, a JWKS from an external issuer.
 *
 * The first call makes an RSA 2048 key (through srv_key_from_pem) and two EC
 * P-256 keys (srv_key_generate), keeps the public parts of the RSA key and
 * the first EC key in one keyset, and signs tokens with them: three valid
 * ones, which must verify (so a broken harness fails instead of passing
 * everything), an expired one, and one signed by the second EC key under
 * the first one's kid, which must both be refused.  The low three bits of
 * the first byte choose the mode (5 to 7 are 0 to 2 again):
 *   0 token: the rest is a token.
 *   1 mutate: byte 1 picks a setup token, byte 2 an edit, and the rest is
 *     spliced in: a new header or payload (base64url-encoded here, with
 *     "@rsa" and "@ec" replaced by the keys' kids), a new signature, bytes
 *     written over the token, an HS256 MAC keyed with a public key's PEM
 *     (the classic algorithm confusion), or the signature's unused last bits
 *     set.  Unlike random bytes, these reach libjwt and its checks.
 *   2 claims: byte 1 picks a signer and the expectations, and the rest is a
 *     payload object that is signed (or MACed with HS256 under a public key
 *     PEM): the only way to reach the claim checks, which follow a valid
 *     signature.  The answer is compared with the rules jose.h states.
 *   3 jwks: the rest is a JWKS document.
 *   4 pem: the rest is a PEM key.
 *
 * Invariants: verify accepts a token of modes 0 and 1 only when it is a
 * valid setup token (the same signing input and signature bytes: base64url
 * leaves four bits of the signature's last character unused and libjwt
 * ignores them), and a token of mode 2 exactly when its signer is the key
 * its kid names, its algorithm is that key's, it is no longer than
 * SRV_JWT_MAX_BYTES, and its claims pass.  A
 * refusal is NOT_AUTHORIZED (or NOMEM) with a message that holds no part of
 * the token, and leaves the claims untouched; peek copies a NUL-terminated
 * issuer into its buffer or leaves it untouched.  A parsed JWKS holds only
 * public RSA and P-256 keys, each found by its kid, whose PEM loads back as
 * the same type; an accepted PEM loads back with the same kid, and a private
 * one signs a token that verifies.  A refused JWKS or PEM is BAD_REQUEST (or
 * NOMEM) with a message and leaves its output untouched. */
#include <string.h>

#include "b64.h"
#include "fuzz.h"
#include "jose.h"
#include "json.h"
#include "libcrypto.h"

#define ISS "https://idp.example/realms/floe"
#define AUD "floe"
#define NOW 1800000000LL
#define SKEW 30

enum { K_RSA, K_EC, K_INTRUDER, NKEYS };
enum { NTOK = 5 };

/* Set up by the first call, read-only after. */
static struct {
	struct srv_key keys[NKEYS];
	struct srv_keyset ks; /* public parts of keys[K_RSA] and keys[K_EC] */
	char *tok[NTOK];
	bool valid[NTOK]; /* must verify under expect() */
} fz;

static struct srv_jwt_expect expect(void)
{
	return (struct srv_jwt_expect){.issuer = ISS, .audience = AUD, .now = NOW, .skew = SKEW};
}

static char *sign(const struct srv_key *k, json_t *claims)
{
	struct fl_err err = {0};
	char *tok = NULL;

	FUZZ_CHECK(claims != NULL);
	FUZZ_CHECK(srv_jwt_sign(k, claims, &tok, &err) == 0);
	json_decref(claims);
	return tok;
}

static json_t *full_claims(json_int_t exp)
{
	return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "iss", ISS, "aud", AUD, "sub", "alice",
	                 "iat", (json_int_t)(NOW - 10), "nbf", (json_int_t)(NOW - 10), "exp", exp);
}

static void setup(void)
{
	struct srv_jwt_expect x = expect();
	EVP_PKEY *rsa = EVP_RSA_gen(2048);
	BIO *b = BIO_new(BIO_s_mem());
	struct fl_err err = {0};
	char *pem;
	long n;

	FUZZ_CHECK(rsa != NULL && b != NULL);
	FUZZ_CHECK(PEM_write_bio_PrivateKey(b, rsa, NULL, NULL, 0, NULL, NULL) == 1);
	n = BIO_get_mem_data(b, &pem);
	FUZZ_CHECK(srv_key_from_pem(pem, (size_t)n, &fz.keys[K_RSA], &err) == 0);
	FUZZ_CHECK(fz.keys[K_RSA].type == SRV_KEY_RSA);
	BIO_free(b);
	EVP_PKEY_free(rsa);
	FUZZ_CHECK(srv_key_generate(&fz.keys[K_EC], &err) == 0);
	FUZZ_CHECK(srv_key_generate(&fz.keys[K_INTRUDER], &err) == 0);
	FUZZ_CHECK(fz.keys[K_EC].type == SRV_KEY_EC256);
	/* The intruder claims the EC key's kid: only the signature tells them apart. */
	memcpy(fz.keys[K_INTRUDER].kid, fz.keys[K_EC].kid, sizeof(fz.keys[K_EC].kid));
	FUZZ_CHECK(srv_keyset_add(&fz.ks, &fz.keys[K_RSA], false, &err) == 0);
	FUZZ_CHECK(srv_keyset_add(&fz.ks, &fz.keys[K_EC], false, &err) == 0);

	fz.tok[0] = sign(&fz.keys[K_RSA], full_claims(NOW + 3600));
	fz.tok[1] = sign(&fz.keys[K_EC], full_claims(NOW + 3600));
	fz.tok[2] = sign(&fz.keys[K_RSA], json_pack("{s:s, s:[s, s], s:s, s:I, s:s}", "iss", ISS,
	                                            "aud", "account", AUD, "sub", "svc-etl", "exp",
	                                            (json_int_t)(NOW + 60), "fsv", "v7"));
	fz.tok[3] = sign(&fz.keys[K_EC], full_claims(NOW - 3600));
	fz.tok[4] = sign(&fz.keys[K_INTRUDER], full_claims(NOW + 3600));
	fz.valid[0] = fz.valid[1] = fz.valid[2] = true;
	for (int i = 0; i < NTOK; i++) {
		struct srv_jwt_claims c;
		bool unknown;
		int rc = srv_jwt_verify(fz.tok[i], &fz.ks, &x, &c, &unknown, &err);

		if ((rc == 0) != fz.valid[i])
			fprintf(stderr, "setup token %d: %s\n", i, rc == 0 ? "accepted" : err.msg);
		FUZZ_CHECK((rc == 0) == fz.valid[i]);
		FUZZ_CHECK(rc != 0 || strcmp(c.sub, i == 2 ? "svc-etl" : "alice") == 0);
	}
}

/* Whether the message of a refusal holds a dot-separated part of the token
 * of 16 or more base64url characters (a signature, or anything else that
 * must not be echoed). */
static bool msg_holds_token(const char *msg, const char *tok)
{
	static const char b64url[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t ml = strlen(msg);

	for (const char *p = tok; *p != '\0';) {
		size_t n = strcspn(p, ".");

		if (n >= 16 && strspn(p, b64url) == n && memmem(msg, ml, p, n) != NULL)
			return true;
		p += n;
		if (*p == '.')
			p++;
	}
	return false;
}

static void check_refusal(const char *tok, const struct fl_err *err)
{
	FUZZ_CHECK(err->kind == FL_ERR_NOT_AUTHORIZED || err->kind == FL_ERR_NOMEM);
	FUZZ_CHECK(memchr(err->msg, '\0', sizeof(err->msg)) != NULL);
	FUZZ_CHECK(err->msg[0] != '\0');
	FUZZ_CHECK(!msg_holds_token(err->msg, tok));
}

/* Runs peek and verify on tok, checks what holds for every token, and
 * returns verify's answer (claims in *out on success). */
static int check_token(const char *tok, const struct srv_jwt_expect *x, size_t cap,
                       struct srv_jwt_claims *out)
{
	struct srv_jwt_claims before;
	struct fl_err err = {0};
	char *iss = malloc(cap);
	bool unknown;
	int rc;

	FUZZ_CHECK(iss != NULL);
	memset(iss, 0xa5, cap);
	if (srv_jwt_peek_issuer(tok, iss, cap, &err) == 0) {
		FUZZ_CHECK(memchr(iss, '\0', cap) != NULL);
	} else {
		check_refusal(tok, &err);
		for (size_t i = 0; i < cap; i++)
			FUZZ_CHECK((unsigned char)iss[i] == 0xa5);
	}
	free(iss);

	memset(out, 0x5a, sizeof(*out));
	before = *out;
	fl_err_clear(&err);
	rc = srv_jwt_verify(tok, &fz.ks, x, out, &unknown, &err);
	if (rc != 0) {
		check_refusal(tok, &err);
		FUZZ_CHECK(memcmp(out, &before, sizeof(*out)) == 0);
	} else {
		FUZZ_CHECK(!unknown);
		FUZZ_CHECK(out->sub[0] != '\0' && memchr(out->sub, '\0', sizeof(out->sub)) != NULL);
		FUZZ_CHECK(memchr(out->fsv, '\0', sizeof(out->fsv)) != NULL);
		FUZZ_CHECK(out->exp > x->now - x->skew);
	}
	return rc;
}

/* Whether tok is setup token i: the same signing input and the same
 * signature bytes. */
static bool same_token(int i, const char *tok)
{
	const char *a = fz.tok[i], *sa = strrchr(a, '.'), *sb = strrchr(tok, '.');
	unsigned char da[SRV_JWT_MAX_BYTES], db[SRV_JWT_MAX_BYTES];
	size_t na, nb;

	if (sb == NULL || sa - a != sb - tok || memcmp(a, tok, (size_t)(sa - a)) != 0)
		return false;
	FUZZ_CHECK(fl_b64_decode(sa + 1, strlen(sa + 1), da, sizeof(da), &na) == 0);
	return fl_b64_decode(sb + 1, strlen(sb + 1), db, sizeof(db), &nb) == 0 && na == nb &&
	       memcmp(da, db, na) == 0;
}

static void check_untrusted(const char *tok, size_t cap)
{
	struct srv_jwt_expect x = expect();
	struct srv_jwt_claims c;
	bool known = false;

	if (check_token(tok, &x, cap, &c) != 0)
		return;
	for (int i = 0; i < NTOK && !known; i++)
		known = fz.valid[i] && same_token(i, tok);
	if (!known)
		fprintf(stderr, "forged token accepted: %s\n", tok);
	FUZZ_CHECK(known);
}

/* ---- mutate mode ---- */

enum edit {
	EDIT_HEADER, /* header := base64url(kids(rest)) */
	EDIT_PAYLOAD, /* payload := base64url(kids(rest)) */
	EDIT_BOTH, /* header and payload := rest split at its first newline */
	EDIT_SIG, /* signature := base64url(rest) */
	EDIT_SIG_TEXT, /* signature := rest */
	EDIT_OVERWRITE, /* rest[2..] written at offset rest[0] | rest[1] << 8 */
	EDIT_HS256, /* EDIT_BOTH, then an HS256 MAC keyed with a public key PEM */
	EDIT_SIG_BITS, /* rest[0]'s low bits set in the signature's unused last bits */
};

struct part {
	const char *p;
	size_t n;
};

/* base64url of s[0..n); malloc'd. */
static char *encode(const unsigned char *s, size_t n)
{
	char *out = malloc((4 * n + 2) / 3 + 1);

	FUZZ_CHECK(out != NULL);
	fl_b64url_encode(s, n, out);
	return out;
}

/* base64url of s[0..n) with "@rsa" and "@ec" replaced by the keys' kids
 * (16 characters each); malloc'd. */
static char *encode_kids(const uint8_t *s, size_t n)
{
	unsigned char *t = malloc(n * 6 + 1);
	char *out;
	size_t o = 0;

	FUZZ_CHECK(t != NULL);
	for (size_t i = 0; i < n;) {
		const char *kid = NULL;

		if (n - i >= 4 && memcmp(s + i, "@rsa", 4) == 0) {
			kid = fz.keys[K_RSA].kid;
			i += 4;
		} else if (n - i >= 3 && memcmp(s + i, "@ec", 3) == 0) {
			kid = fz.keys[K_EC].kid;
			i += 3;
		}
		if (kid != NULL) {
			memcpy(t + o, kid, strlen(kid));
			o += strlen(kid);
		} else {
			t[o++] = s[i++];
		}
	}
	out = encode(t, o);
	free(t);
	return out;
}

/* "a.b" or "a.b.c" from the parts; malloc'd. */
static char *join(const struct part *parts, int n)
{
	size_t len = 0, o = 0;
	char *s;

	for (int i = 0; i < n; i++)
		len += parts[i].n + 1;
	s = malloc(len);
	FUZZ_CHECK(s != NULL);
	for (int i = 0; i < n; i++) {
		memcpy(s + o, parts[i].p, parts[i].n);
		o += parts[i].n;
		s[o++] = i + 1 < n ? '.' : '\0';
	}
	return s;
}

static char *hs256(const struct part *parts, const struct srv_key *k)
{
	char *input = join(parts, 2), *sig = malloc(48);
	unsigned char mac[32];
	unsigned int ml = 0;
	struct part all[3];
	char *tok;

	FUZZ_CHECK(sig != NULL);
	FUZZ_CHECK(HMAC(EVP_sha256(), k->pub_pem, (int)k->pub_len, (unsigned char *)input,
	                strlen(input), mac, &ml) != NULL);
	fl_b64url_encode(mac, ml, sig);
	all[0] = parts[0];
	all[1] = parts[1];
	all[2] = (struct part){sig, strlen(sig)};
	tok = join(all, 3);
	free(sig);
	free(input);
	return tok;
}

static void mutate_mode(const uint8_t *data, size_t size)
{
	const char *base, *d1, *d2;
	const uint8_t *rest = data + 3, *nl;
	struct part parts[3];
	char *enc[2] = {NULL, NULL}, *tok = NULL;
	size_t n, blen;

	if (size < 3)
		return;
	n = size - 3;
	base = fz.tok[(data[1] & 7) % NTOK];
	blen = strlen(base);
	d1 = strchr(base, '.');
	d2 = strchr(d1 + 1, '.');
	parts[0] = (struct part){base, (size_t)(d1 - base)};
	parts[1] = (struct part){d1 + 1, (size_t)(d2 - d1 - 1)};
	parts[2] = (struct part){d2 + 1, strlen(d2 + 1)};
	switch ((enum edit)(data[2] & 7)) {
	case EDIT_HEADER:
	case EDIT_PAYLOAD:
		enc[0] = encode_kids(rest, n);
		parts[(data[2] & 7) == EDIT_HEADER ? 0 : 1] = (struct part){enc[0], strlen(enc[0])};
		tok = join(parts, 3);
		break;
	case EDIT_BOTH:
	case EDIT_HS256:
		nl = memchr(rest, '\n', n);
		enc[0] = encode_kids(rest, nl ? (size_t)(nl - rest) : n);
		parts[0] = (struct part){enc[0], strlen(enc[0])};
		if (nl != NULL) {
			enc[1] = encode_kids(nl + 1, n - (size_t)(nl + 1 - rest));
			parts[1] = (struct part){enc[1], strlen(enc[1])};
		}
		if ((data[2] & 7) == EDIT_BOTH)
			tok = join(parts, 3);
		else
			tok = hs256(parts, &fz.keys[data[1] & 8 ? K_EC : K_RSA]);
		break;
	case EDIT_SIG:
		enc[0] = encode(rest, n);
		parts[2] = (struct part){enc[0], strlen(enc[0])};
		tok = join(parts, 3);
		break;
	case EDIT_SIG_TEXT:
		parts[2] = (struct part){(const char *)rest, n};
		tok = join(parts, 3);
		break;
	case EDIT_OVERWRITE: {
		size_t at = n >= 2 ? (size_t)(rest[0] | rest[1] << 8) % (blen + 1) : 0;
		size_t m = n >= 2 ? n - 2 : 0, len = at + m > blen ? at + m : blen;

		tok = malloc(len + 1);
		FUZZ_CHECK(tok != NULL);
		memcpy(tok, base, blen);
		memcpy(tok + at, rest + (n >= 2 ? 2 : 0), m);
		tok[len] = '\0';
		break;
	}
	case EDIT_SIG_BITS: {
		static const char alphabet[] =
		        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
		/* Signature characters beyond whole bytes: 2 of 4 leave 4 bits unused. */
		unsigned unused = parts[2].n % 4 == 2 ? 15 : parts[2].n % 4 == 3 ? 3 : 0;
		size_t d;

		tok = join(parts, 3);
		d = (size_t)(strchr(alphabet, tok[blen - 1]) - alphabet);
		tok[blen - 1] = alphabet[d | (n > 0 ? rest[0] & unused : unused)];
		break;
	}
	}
	check_untrusted(tok, 256);
	free(tok);
	free(enc[0]);
	free(enc[1]);
}

/* ---- claims mode ---- */

static int value_depth(const json_t *v)
{
	const char *k;
	json_t *m;
	size_t i;
	int max = 0;

	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, m)
		{
			int d = value_depth(m);

			max = d > max ? d : max;
		}
		return max + 1;
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, m)
		{
			int d = value_depth(m);

			max = d > max ? d : max;
		}
		return max + 1;
	}
	return 0;
}

/* A NumericDate as jose.c reads it: an integer, or a real within ±9e15
 * truncated to whole seconds; -1 for anything else. */
static int ref_date(const json_t *c, const char *name, int64_t *v, bool *have)
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
		return -1;
	return 0;
}

static bool ref_aud(const json_t *aud, const char *want)
{
	const json_t *v;
	size_t i;

	if (json_is_string(aud))
		return strcmp(json_string_value(aud), want) == 0;
	json_array_foreach(aud, i, v)
	{
		if (json_is_string(v) && strcmp(json_string_value(v), want) == 0)
			return true;
	}
	return false;
}

/* The claim rules of jose.h, written without arithmetic that can overflow:
 * exp is required and later than now - skew, nbf and iat are no later than
 * now + skew, iss is the issuer, aud holds the audience (when one is
 * expected), sub is a non-empty string shorter than 256 bytes, and the
 * payload nests no deeper than 8. */
static bool ref_claims(const json_t *c, const struct srv_jwt_expect *x, int64_t *exp, int64_t *iat)
{
	const char *iss = json_string_value(json_object_get(c, "iss"));
	const char *sub = json_string_value(json_object_get(c, "sub"));
	int64_t nbf;
	bool has_exp, has_nbf, has_iat;

	if (ref_date(c, "exp", exp, &has_exp) != 0 || ref_date(c, "nbf", &nbf, &has_nbf) != 0 ||
	    ref_date(c, "iat", iat, &has_iat) != 0)
		return false;
	return has_exp && *exp > x->now - x->skew && (!has_nbf || nbf <= x->now + x->skew) &&
	       (!has_iat || *iat <= x->now + x->skew) && iss != NULL &&
	       strcmp(iss, x->issuer) == 0 &&
	       (x->audience == NULL || ref_aud(json_object_get(c, "aud"), x->audience)) &&
	       sub != NULL && sub[0] != '\0' && strlen(sub) < 256 && value_depth(c) <= 8;
}

/* Byte 1: bits 0-1 the signer (RSA key, EC key, the intruder under the EC
 * key's kid, the EC key under the RSA key's kid), bit 2 HS256 keyed with
 * the public PEM of the key the kid names instead, bit 3 no audience
 * expected, bit 4 no clock skew. */
static void claims_mode(const uint8_t *data, size_t size)
{
	struct srv_jwt_expect x = expect();
	struct srv_jwt_claims out;
	struct srv_key signer;
	struct fl_err err = {0};
	json_t *c;
	char *tok = NULL;
	int64_t exp = 0, iat = 0;
	bool want;
	int rc;

	if (size < 2)
		return;
	c = json_loadb((const char *)data + 2, size - 2, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(c))
		goto out;
	if (data[1] & 8)
		x.audience = NULL;
	if (data[1] & 16)
		x.skew = 0;
	switch (data[1] & 3) {
	case 0: signer = fz.keys[K_RSA]; break;
	case 1: signer = fz.keys[K_EC]; break;
	case 2: signer = fz.keys[K_INTRUDER]; break;
	default:
		signer = fz.keys[K_EC];
		memcpy(signer.kid, fz.keys[K_RSA].kid, sizeof(signer.kid));
		break;
	}
	if (data[1] & 4) {
		const struct srv_key *named = srv_keyset_find(&fz.ks, signer.kid);
		char hdr[160], *h, *p, *payload = fl_json_dump(c, NULL);
		struct part parts[2];

		FUZZ_CHECK(named != NULL && payload != NULL);
		snprintf(hdr, sizeof(hdr), "{\"alg\":\"HS256\",\"kid\":\"%s\",\"typ\":\"JWT\"}",
		         signer.kid);
		h = encode((const unsigned char *)hdr, strlen(hdr));
		p = encode((const unsigned char *)payload, strlen(payload));
		parts[0] = (struct part){h, strlen(h)};
		parts[1] = (struct part){p, strlen(p)};
		tok = hs256(parts, named);
		free(h);
		free(p);
		free(payload);
		want = false;
	} else {
		FUZZ_CHECK(srv_jwt_sign(&signer, c, &tok, &err) == 0);
		want = (data[1] & 3) < 2 && strlen(tok) <= SRV_JWT_MAX_BYTES &&
		       ref_claims(c, &x, &exp, &iat);
	}
	rc = check_token(tok, &x, 256, &out);
	if ((rc == 0) != want)
		fprintf(stderr, "verify %s, the claim rules %s: %s\n",
		        rc == 0 ? "accepted" : "refused", want ? "accept" : "refuse", tok);
	FUZZ_CHECK((rc == 0) == want);
	if (rc == 0) {
		const char *fsv = json_string_value(json_object_get(c, "fsv"));

		FUZZ_CHECK(strcmp(out.sub, json_string_value(json_object_get(c, "sub"))) == 0);
		FUZZ_CHECK(out.exp == exp && out.iat == iat);
		FUZZ_CHECK(strcmp(out.fsv,
		                  fsv != NULL && strlen(fsv) < sizeof(out.fsv) ? fsv : "") == 0);
	}
out:
	free(tok);
	json_decref(c);
}

/* ---- key modes ---- */

static void jwks_mode(const uint8_t *data, size_t size)
{
	struct srv_keyset ks = {0};
	struct fl_err err = {0};

	if (srv_jwks_parse((const char *)data, size, &ks, &err) != 0) {
		FUZZ_CHECK(err.kind == FL_ERR_BAD_REQUEST || err.kind == FL_ERR_NOMEM);
		FUZZ_CHECK(err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
		FUZZ_CHECK(ks.n == 0 && ks.keys == NULL);
		return;
	}
	FUZZ_CHECK(ks.n > 0 && ks.keys != NULL);
	for (int i = 0; i < ks.n; i++) {
		const struct srv_key *k = &ks.keys[i], *f;
		struct srv_key back = {0};

		FUZZ_CHECK(k->type == SRV_KEY_RSA || k->type == SRV_KEY_EC256);
		FUZZ_CHECK(k->priv_pem == NULL && k->pub_pem != NULL);
		FUZZ_CHECK(strlen(k->pub_pem) == k->pub_len);
		FUZZ_CHECK(k->kid[0] != '\0' && memchr(k->kid, '\0', sizeof(k->kid)) != NULL);
		/* The first key of a kid wins; a later one with the same kid is shadowed. */
		f = srv_keyset_find(&ks, k->kid);
		FUZZ_CHECK(f != NULL && f <= k && strcmp(f->kid, k->kid) == 0);
		FUZZ_CHECK(srv_key_from_pem(k->pub_pem, k->pub_len, &back, &err) == 0);
		FUZZ_CHECK(back.type == k->type && back.priv_pem == NULL);
		srv_key_free(&back);
	}
	FUZZ_CHECK((srv_keyset_find(&ks, NULL) != NULL) == (ks.n == 1));
	srv_keyset_free(&ks);
	FUZZ_CHECK(ks.n == 0 && ks.keys == NULL);
}

static void pem_mode(const uint8_t *data, size_t size)
{
	struct srv_key k = {0}, back = {0};
	struct srv_keyset one = {0};
	struct srv_jwt_expect x = expect();
	struct srv_jwt_claims c;
	struct fl_err err = {0};
	bool unknown;
	char *tok;
	int rc;

	if (srv_key_from_pem((const char *)data, size, &k, &err) != 0) {
		FUZZ_CHECK(err.kind == FL_ERR_BAD_REQUEST || err.kind == FL_ERR_NOMEM);
		FUZZ_CHECK(err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
		FUZZ_CHECK(k.kid[0] == '\0' && k.pub_pem == NULL && k.priv_pem == NULL);
		return;
	}
	FUZZ_CHECK(k.type == SRV_KEY_RSA || k.type == SRV_KEY_EC256);
	FUZZ_CHECK(k.pub_pem != NULL && strlen(k.pub_pem) == k.pub_len);
	FUZZ_CHECK(strlen(k.kid) == 16);
	FUZZ_CHECK(srv_key_from_pem(k.pub_pem, k.pub_len, &back, &err) == 0);
	FUZZ_CHECK(back.type == k.type && strcmp(back.kid, k.kid) == 0 && back.priv_pem == NULL);
	srv_key_free(&back);
	if (k.priv_pem != NULL) {
		FUZZ_CHECK(srv_key_from_pem(k.priv_pem, k.priv_len, &back, &err) == 0);
		FUZZ_CHECK(strcmp(back.kid, k.kid) == 0 && back.priv_pem != NULL);
		srv_key_free(&back);
		/* A key that signs makes tokens its own public part accepts. */
		FUZZ_CHECK(srv_keyset_add(&one, &k, false, &err) == 0);
		tok = sign(&k, full_claims(NOW + 60));
		rc = srv_jwt_verify(tok, &one, &x, &c, &unknown, &err);
		if (rc != 0)
			fprintf(stderr, "key %s refuses its own token: %s\n", k.kid, err.msg);
		FUZZ_CHECK(rc == 0);
		free(tok);
		srv_keyset_free(&one);
	}
	srv_key_free(&k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	char *tok;

	if (!ready) {
		setup();
		ready = true;
	}
	if (size == 0)
		return 0;
	switch ((data[0] & 7) % 5) {
	case 0:
		tok = malloc(size);
		FUZZ_CHECK(tok != NULL);
		memcpy(tok, data + 1, size - 1);
		tok[size - 1] = '\0';
		/* Bit 7 asks peek for a small buffer. */
		check_untrusted(tok, data[0] & 0x80 ? 8 : 256);
		free(tok);
		break;
	case 1: mutate_mode(data, size); break;
	case 2: claims_mode(data, size); break;
	case 3: jwks_mode(data + 1, size - 1); break;
	default: pem_mode(data + 1, size - 1); break;
	}
	return 0;
}
