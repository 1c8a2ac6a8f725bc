/* jose.h - signing keys, JWKS and JSON Web Token checks.
 *
 * libjwt 1.10 verifies a signature with the key it is given and nothing
 * else: it does not check exp, nbf, iss or aud, it accepts a token signed
 * HS256 with an RSA public key used as the HMAC secret, and it accepts
 * alg "none" when given no key.  srv_jwt_verify therefore decides the
 * algorithm itself (RS256 for an RSA key, ES256 for a P-256 key, nothing
 * else), picks the key by kid, lets libjwt check the signature with that
 * key, re-checks the algorithm libjwt saw, and then checks the claims.
 *
 * Keys and keysets are immutable after creation and may be shared between
 * threads.  Nothing here logs; messages never contain token text. */
#ifndef SRV_JOSE_H
#define SRV_JOSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define SRV_JWT_MAX_BYTES 8192 /* longest token accepted */

enum srv_key_type { SRV_KEY_RSA = 1, SRV_KEY_EC256 };

struct srv_key {
	char kid[80]; /* given (JWKS) or derived from the public key */
	enum srv_key_type type;
	char *pub_pem; /* SubjectPublicKeyInfo PEM, for verification */
	size_t pub_len;
	char *priv_pem; /* NULL unless the key can sign */
	size_t priv_len;
};

struct srv_keyset {
	struct srv_key *keys;
	int n;
};

/* Loads a PEM key (a private key, which can then sign, or a public key).
 * Only RSA (2048 bits or more) and EC P-256 are accepted.  The kid is the
 * unpadded base64url of the first 12 bytes of SHA-256 over the DER public
 * key, so every replica given the same file derives the same kid. */
int srv_key_from_pem(const char *pem, size_t len, struct srv_key *out,
                     struct fl_err *err) FL_MUST_CHECK;

/* A fresh EC P-256 signing key (for servers given no key file). */
int srv_key_generate(struct srv_key *out, struct fl_err *err) FL_MUST_CHECK;

/* Frees the PEM strings (the key itself is caller storage); accepts zeroed keys. */
void srv_key_free(struct srv_key *k);

/* Appends a copy of k (public part only unless with_private) to ks. */
int srv_keyset_add(struct srv_keyset *ks, const struct srv_key *k, bool with_private,
                   struct fl_err *err) FL_MUST_CHECK;

/* Parses a JWKS document ({"keys":[…]}): RSA keys from n/e and EC P-256 keys
 * from x/y become PEM public keys; keys of other types or with "use" other
 * than "sig" are skipped.  A key without kid gets the derived one.  An empty
 * result is FL_ERR_BAD_REQUEST. */
int srv_jwks_parse(const char *text, size_t len, struct srv_keyset *out,
                   struct fl_err *err) FL_MUST_CHECK;

/* The key with this kid; with kid NULL, the only key of a one-key set. */
const struct srv_key *srv_keyset_find(const struct srv_keyset *ks, const char *kid);

void srv_keyset_free(struct srv_keyset *ks);

/* Signs claims (an object, borrowed) with k's private key: RS256 or ES256
 * by key type, with header kid.  *out is malloc'd. */
int srv_jwt_sign(const struct srv_key *k, const json_t *claims, char **out,
                 struct fl_err *err) FL_MUST_CHECK;

/* The unverified issuer of a token (to choose which keys verify it), copied
 * into iss; -1 when the token is not a well-formed JWS or has no string iss. */
int srv_jwt_peek_issuer(const char *token, char *iss, size_t cap, struct fl_err *err) FL_MUST_CHECK;

struct srv_jwt_expect {
	const char *issuer; /* iss must equal it */
	const char *audience; /* aud (string or array) must contain it; NULL = not checked */
	int64_t now; /* epoch seconds */
	int64_t skew; /* seconds of clock skew allowed for exp, nbf, iat */
};

struct srv_jwt_claims {
	char sub[256];
	int64_t exp;
	int64_t iat; /* 0 when absent */
	char fsv[24]; /* Floe's "fsv" claim (secret version); "" when absent */
};

/* Verifies token against ks and x.  Failure is FL_ERR_NOT_AUTHORIZED with
 * the reason (never the token); *unknown_kid is set when the only problem
 * found so far is that no key has the token's kid (a caller may refresh its
 * keys once and retry).  exp and sub are required. */
int srv_jwt_verify(const char *token, const struct srv_keyset *ks, const struct srv_jwt_expect *x,
                   struct srv_jwt_claims *out, bool *unknown_kid, struct fl_err *err) FL_MUST_CHECK;

#endif
