/* Unit tests of server/jose.c: the token checks libjwt 1.10 does not make
 * (algorithm against the key type, alg none, HS256 with an RSA public key,
 * exp, nbf, iat, iss, aud, sub), kid lookup and JWKS conversion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jwt.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "b64.h"
#include "jose.h"

#define NOW 1800000000LL

static struct srv_key rsa_key, ec_key;
static struct srv_keyset ks; /* public parts of both */

static int setup(void **state)
{
	EVP_PKEY *rsa = EVP_RSA_gen(2048);
	BIO *b = BIO_new(BIO_s_mem());
	struct fl_err err = {0};
	char *pem;
	long n;

	(void)state;
	assert_non_null(rsa);
	assert_int_equal(PEM_write_bio_PrivateKey(b, rsa, NULL, NULL, 0, NULL, NULL), 1);
	n = BIO_get_mem_data(b, &pem);
	assert_int_equal(srv_key_from_pem(pem, (size_t)n, &rsa_key, &err), 0);
	assert_int_equal(rsa_key.type, SRV_KEY_RSA);
	assert_non_null(rsa_key.priv_pem);
	BIO_free(b);
	EVP_PKEY_free(rsa);
	assert_int_equal(srv_key_generate(&ec_key, &err), 0);
	assert_int_equal(ec_key.type, SRV_KEY_EC256);
	assert_int_equal(srv_keyset_add(&ks, &rsa_key, false, &err), 0);
	assert_int_equal(srv_keyset_add(&ks, &ec_key, false, &err), 0);
	assert_null(ks.keys[0].priv_pem);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	srv_key_free(&rsa_key);
	srv_key_free(&ec_key);
	srv_keyset_free(&ks);
	return 0;
}

static json_t *claims(void)
{
	return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "iss", "floe", "aud", "floe", "sub",
	                 "alice", "iat", (json_int_t)NOW, "nbf", (json_int_t)NOW, "exp",
	                 (json_int_t)(NOW + 300));
}

static char *sign(const struct srv_key *k, json_t *c)
{
	struct fl_err err = {0};
	char *tok = NULL;

	assert_int_equal(srv_jwt_sign(k, c, &tok, &err), 0);
	json_decref(c);
	return tok;
}

static int verify(const char *tok, const char *aud, struct srv_jwt_claims *out, bool *unknown,
                  struct fl_err *err)
{
	struct srv_jwt_expect x = {.issuer = "floe", .audience = aud, .now = NOW, .skew = 30};

	return srv_jwt_verify(tok, &ks, &x, out, unknown, err);
}

static void expect_refused(const char *tok, const char *word)
{
	struct srv_jwt_claims c;
	struct fl_err err = {0};
	bool unknown;

	assert_int_equal(verify(tok, "floe", &c, &unknown, &err), -1);
	assert_int_equal(err.kind, FL_ERR_NOT_AUTHORIZED);
	if (strstr(err.msg, word) == NULL)
		fail_msg("message '%s' should mention '%s'", err.msg, word);
}

static void test_valid_rs256_and_es256(void **state)
{
	const struct srv_key *keys[] = {&rsa_key, &ec_key};

	(void)state;
	for (int i = 0; i < 2; i++) {
		char *tok = sign(keys[i], claims());
		struct srv_jwt_claims c;
		struct fl_err err = {0};
		bool unknown;

		assert_int_equal(verify(tok, "floe", &c, &unknown, &err), 0);
		assert_string_equal(c.sub, "alice");
		assert_int_equal(c.exp, NOW + 300);
		assert_int_equal(c.iat, NOW);
		free(tok);
	}
}

/* Claims that must each be refused, with the word the message must contain. */
static void test_claims_table(void **state)
{
	static const struct {
		const char *key;
		const char *json; /* replacement value; NULL = delete */
		const char *word;
	} cases[] = {
	        {"exp", "1799999000", "expired"},
	        {"exp", NULL, "no exp"},
	        {"exp", "\"soon\"", "exp is not a number"},
	        {"nbf", "1800000600", "nbf"},
	        {"iat", "1800000600", "iat"},
	        {"iss", "\"evil\"", "issuer"},
	        {"iss", NULL, "issuer"},
	        {"aud", "\"other\"", "audience"},
	        {"aud", "[\"a\", \"b\"]", "audience"},
	        {"aud", NULL, "audience"},
	        {"sub", NULL, "sub"},
	        {"sub", "\"\"", "sub"},
	        {"sub", "42", "sub"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *c = claims();
		char *tok;

		if (cases[i].json == NULL)
			json_object_del(c, cases[i].key);
		else
			json_object_set_new(c, cases[i].key,
			                    json_loads(cases[i].json, JSON_DECODE_ANY, NULL));
		tok = sign(&ec_key, c);
		expect_refused(tok, cases[i].word);
		free(tok);
	}
}

static void test_skew_and_audience_array(void **state)
{
	json_t *c = claims();
	struct srv_jwt_claims out;
	struct fl_err err = {0};
	bool unknown;
	char *tok;

	(void)state;
	/* Expired 10 s ago: within the 30 s skew. */
	json_object_set_new(c, "exp", json_integer(NOW - 10));
	json_object_set_new(c, "aud", json_pack("[s, s]", "account", "floe"));
	tok = sign(&rsa_key, c);
	assert_int_equal(verify(tok, "floe", &out, &unknown, &err), 0);
	free(tok);
}

/* A compact JWS with the given header and payload JSON and signature text. */
static char *forge(const char *hdr, const char *payload, const char *sig)
{
	char h[512], p[512], *out = malloc(1200);

	fl_b64url_encode((const unsigned char *)hdr, strlen(hdr), h);
	fl_b64url_encode((const unsigned char *)payload, strlen(payload), p);
	snprintf(out, 1200, "%s.%s.%s", h, p, sig);
	return out;
}

static void test_alg_none_and_unlisted_algs(void **state)
{
	const char *payload =
	        "{\"iss\":\"floe\",\"aud\":\"floe\",\"sub\":\"admin\",\"exp\":1800000300}";
	char hdr[200], *tok;

	(void)state;
	snprintf(hdr, sizeof(hdr), "{\"alg\":\"none\",\"kid\":\"%s\"}", ec_key.kid);
	tok = forge(hdr, payload, "");
	expect_refused(tok, "three non-empty parts");
	free(tok);
	tok = forge(hdr, payload, "AAAA");
	expect_refused(tok, "algorithm not allowed");
	free(tok);
	for (int i = 0; i < 4; i++) {
		static const char *algs[] = {"HS256", "RS512", "ES384", "PS256"};

		snprintf(hdr, sizeof(hdr), "{\"alg\":\"%s\",\"kid\":\"%s\"}", algs[i], rsa_key.kid);
		tok = forge(hdr, payload, "AAAA");
		expect_refused(tok, "algorithm not allowed");
		free(tok);
	}
	/* RS256 claimed for the EC key: the key decides the algorithm. */
	snprintf(hdr, sizeof(hdr), "{\"alg\":\"RS256\",\"kid\":\"%s\"}", ec_key.kid);
	tok = forge(hdr, payload, "AAAA");
	expect_refused(tok, "does not match the key type");
	free(tok);
}

/* The classic confusion: HS256 with the RSA public key PEM as the HMAC
 * secret, which libjwt 1.10 accepts when handed that PEM. */
static void test_hs256_with_rsa_public_key(void **state)
{
	jwt_t *j = NULL;
	char *tok;

	(void)state;
	assert_int_equal(jwt_new(&j), 0);
	assert_int_equal(jwt_add_grant(j, "iss", "floe"), 0);
	assert_int_equal(jwt_add_grant(j, "aud", "floe"), 0);
	assert_int_equal(jwt_add_grant(j, "sub", "admin"), 0);
	assert_int_equal(jwt_add_grant_int(j, "exp", NOW + 300), 0);
	assert_int_equal(jwt_add_header(j, "kid", rsa_key.kid), 0);
	assert_int_equal(jwt_set_alg(j, JWT_ALG_HS256, (const unsigned char *)rsa_key.pub_pem,
	                             (int)rsa_key.pub_len),
	                 0);
	tok = jwt_encode_str(j);
	jwt_free(j);
	assert_non_null(tok);
	expect_refused(tok, "algorithm not allowed");
	free(tok);
}

static void test_tampered_and_unknown_kid(void **state)
{
	char *tok = sign(&rsa_key, claims()), hdr[200];
	struct srv_jwt_claims c;
	struct fl_err err = {0};
	size_t at;
	bool unknown;

	(void)state;
	/* Flip one payload character: the signature no longer matches. */
	assert_non_null(tok);
	at = strcspn(tok, ".") + 5;
	assert_true(at < strlen(tok));
	tok[at] = tok[at] == 'A' ? 'B' : 'A';
	expect_refused(tok, "");
	free(tok);
	snprintf(hdr, sizeof(hdr), "{\"alg\":\"ES256\",\"kid\":\"nope\"}");
	tok = forge(hdr, "{\"iss\":\"floe\"}", "AAAA");
	assert_int_equal(verify(tok, "floe", &c, &unknown, &err), -1);
	assert_true(unknown);
	free(tok);
	/* No kid with two keys: refused, also as "unknown" (a refresh may help). */
	tok = forge("{\"alg\":\"ES256\"}", "{\"iss\":\"floe\"}", "AAAA");
	assert_int_equal(verify(tok, "floe", &c, &unknown, &err), -1);
	assert_true(unknown);
	free(tok);
}

static void test_shapes(void **state)
{
	static const char *bad[] = {"",        "None", "garbage", "a.b",
	                            "a.b.c.d", "a..c", "é.b.c",   "eyJ.eyJ.sig"};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_refused(bad[i], "invalid token");
}

static void test_jwks_roundtrip(void **state)
{
	EVP_PKEY *ec = EVP_EC_gen("P-256"), *rsa = EVP_RSA_gen(2048);
	unsigned char pub[65], nb[512], eb[8];
	char x[64], y[64], n64[700], e64[16], jwks[2000], *pem, *tok;
	BIGNUM *bn = NULL, *be = NULL;
	struct srv_keyset got = {0};
	struct srv_key signer = {0};
	struct fl_err err = {0};
	size_t len = 0;
	BIO *b;
	long pl;

	(void)state;
	assert_int_equal(EVP_PKEY_get_octet_string_param(ec, OSSL_PKEY_PARAM_PUB_KEY, pub,
	                                                 sizeof(pub), &len),
	                 1);
	assert_int_equal(len, 65);
	fl_b64url_encode(pub + 1, 32, x);
	fl_b64url_encode(pub + 33, 32, y);
	assert_int_equal(EVP_PKEY_get_bn_param(rsa, OSSL_PKEY_PARAM_RSA_N, &bn), 1);
	assert_int_equal(EVP_PKEY_get_bn_param(rsa, OSSL_PKEY_PARAM_RSA_E, &be), 1);
	fl_b64url_encode(nb, (size_t)BN_bn2bin(bn, nb), n64);
	fl_b64url_encode(eb, (size_t)BN_bn2bin(be, eb), e64);
	snprintf(
	        jwks, sizeof(jwks),
	        "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"%s\",\"y\":\"%s\",\"kid\":\"e1\"},"
	        "{\"kty\":\"RSA\",\"n\":\"%s\",\"e\":\"%s\",\"kid\":\"r1\",\"use\":\"sig\"},"
	        "{\"kty\":\"RSA\",\"n\":\"%s\",\"e\":\"%s\",\"kid\":\"enc\",\"use\":\"enc\"},"
	        "{\"kty\":\"oct\",\"k\":\"c2VjcmV0\",\"kid\":\"h1\"}]}",
	        x, y, n64, e64, n64, e64);
	assert_int_equal(srv_jwks_parse(jwks, strlen(jwks), &got, &err), 0);
	assert_int_equal(got.n, 2); /* enc and oct keys skipped */
	assert_non_null(srv_keyset_find(&got, "e1"));
	assert_int_equal(srv_keyset_find(&got, "r1")->type, SRV_KEY_RSA);
	assert_null(srv_keyset_find(&got, "h1"));

	/* A token signed by the EC private key verifies against the JWKS key. */
	b = BIO_new(BIO_s_mem());
	assert_int_equal(PEM_write_bio_PrivateKey(b, ec, NULL, NULL, 0, NULL, NULL), 1);
	pl = BIO_get_mem_data(b, &pem);
	assert_int_equal(srv_key_from_pem(pem, (size_t)pl, &signer, &err), 0);
	BIO_free(b);
	snprintf(signer.kid, sizeof(signer.kid), "e1");
	tok = sign(&signer, claims());
	{
		struct srv_jwt_expect xp = {
		        .issuer = "floe", .audience = "floe", .now = NOW, .skew = 0};
		struct srv_jwt_claims c;
		bool unknown;

		assert_int_equal(srv_jwt_verify(tok, &got, &xp, &c, &unknown, &err), 0);
		/* ...but not against our own keys, which lack kid e1. */
		assert_int_equal(srv_jwt_verify(tok, &ks, &xp, &c, &unknown, &err), -1);
		assert_true(unknown);
	}
	free(tok);
	srv_key_free(&signer);
	srv_keyset_free(&got);
	assert_int_equal(srv_jwks_parse("{\"keys\":[]}", 11, &got, &err), -1);
	{
		static const char p384[] =
		        "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"AA\",\"y\":\"AA\"}]}";

		assert_int_equal(srv_jwks_parse(p384, strlen(p384), &got, &err), -1);
	}
	BN_free(bn);
	BN_free(be);
	EVP_PKEY_free(ec);
	EVP_PKEY_free(rsa);
}

static void test_key_types(void **state)
{
	EVP_PKEY *small = EVP_RSA_gen(1024), *p384 = EVP_EC_gen("P-384");
	EVP_PKEY *keys[] = {small, p384};
	struct srv_key k = {0};
	struct fl_err err = {0};

	(void)state;
	for (int i = 0; i < 2; i++) {
		BIO *b = BIO_new(BIO_s_mem());
		char *pem;
		long n;

		assert_int_equal(PEM_write_bio_PUBKEY(b, keys[i]), 1);
		n = BIO_get_mem_data(b, &pem);
		assert_int_equal(srv_key_from_pem(pem, (size_t)n, &k, &err), -1);
		assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
		BIO_free(b);
	}
	assert_int_equal(srv_key_from_pem("not a key", 9, &k, &err), -1);
	EVP_PKEY_free(small);
	EVP_PKEY_free(p384);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_valid_rs256_and_es256),
	        cmocka_unit_test(test_claims_table),
	        cmocka_unit_test(test_skew_and_audience_array),
	        cmocka_unit_test(test_alg_none_and_unlisted_algs),
	        cmocka_unit_test(test_hs256_with_rsa_public_key),
	        cmocka_unit_test(test_tampered_and_unknown_kid),
	        cmocka_unit_test(test_shapes),
	        cmocka_unit_test(test_jwks_roundtrip),
	        cmocka_unit_test(test_key_types),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
