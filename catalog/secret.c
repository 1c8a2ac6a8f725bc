/* secret.c - client secrets: generation and salted PBKDF2-HMAC-SHA256 hashes.
 *
 * The stored form is "pbkdf2-sha256$<iterations>$<salt>$<hash>" with salt
 * (16 bytes) and hash (32 bytes) in unpadded base64url.  The iteration count
 * travels with the hash so it can be raised later without invalidating
 * existing secrets.  Nothing here can recover a secret from its hash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcrypto.h"
#include "access.h"
#include "b64.h"

#define SECRET_ITERATIONS 600000 /* OWASP's figure for PBKDF2-HMAC-SHA256 */
#define SALT_BYTES 16
#define HASH_BYTES 32

#ifdef FL_LIBCRYPTO_HAS_SHA256_CTX
/* PBKDF2-HMAC-SHA256 of one block, which is all HASH_BYTES takes: the value
 * PKCS5_PBKDF2_HMAC gives (test_secret compares them), at about half its cost
 * and with no allocation.  PKCS5_PBKDF2_HMAC copies an EVP digest context,
 * which allocates and frees, twice a round: 1.2 million times a verification,
 * which AddressSanitizer's quarantine made ~2.5 s a token.  Only locals are
 * touched, so ThreadSanitizer, which would instrument every state copy, is
 * told to leave it. */
__attribute__((no_sanitize_thread)) static int derive(const char *secret, const unsigned char *salt,
                                                      long iter, unsigned char out[HASH_BYTES])
{
	static const unsigned char block1[4] = {0, 0, 0, 1};
	unsigned char key[64] = {0}, pad[64], u[32];
	size_t len = strlen(secret);
	SHA256_CTX inner, outer, c;

	if (len > sizeof(key)) { /* HMAC's key is the secret's hash */
		SHA256_Init(&c);
		SHA256_Update(&c, secret, len);
		SHA256_Final(key, &c);
	} else {
		memcpy(key, secret, len);
	}
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = key[i] ^ 0x36;
	SHA256_Init(&inner);
	SHA256_Update(&inner, pad, sizeof(pad));
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = key[i] ^ 0x5c;
	SHA256_Init(&outer);
	SHA256_Update(&outer, pad, sizeof(pad));

	c = inner; /* U1 = HMAC(secret, salt || INT(1)) */
	SHA256_Update(&c, salt, SALT_BYTES);
	SHA256_Update(&c, block1, sizeof(block1));
	SHA256_Final(u, &c);
	c = outer;
	SHA256_Update(&c, u, sizeof(u));
	SHA256_Final(u, &c);
	memcpy(out, u, HASH_BYTES);
	for (long r = 1; r < iter; r++) { /* Uj = HMAC(secret, Uj-1); out ^= Uj */
		c = inner;
		SHA256_Update(&c, u, sizeof(u));
		SHA256_Final(u, &c);
		c = outer;
		SHA256_Update(&c, u, sizeof(u));
		SHA256_Final(u, &c);
		for (size_t i = 0; i < HASH_BYTES; i++)
			out[i] ^= u[i];
	}
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(pad, sizeof(pad));
	OPENSSL_cleanse(u, sizeof(u));
	OPENSSL_cleanse(&inner, sizeof(inner));
	OPENSSL_cleanse(&outer, sizeof(outer));
	OPENSSL_cleanse(&c, sizeof(c));
	return 0;
}
#else
static int derive(const char *secret, const unsigned char *salt, long iter,
                  unsigned char out[HASH_BYTES])
{
	return PKCS5_PBKDF2_HMAC(secret, (int)strlen(secret), salt, SALT_BYTES, (int)iter,
	                         EVP_sha256(), HASH_BYTES, out) == 1
	               ? 0
	               : -1;
}
#endif

int cat_secret_new(char out[64], struct fl_err *err)
{
	unsigned char b[32];

	if (RAND_bytes(b, sizeof(b)) != 1)
		return fl_err_set(err, FL_ERR_INTERNAL, "no randomness for a secret");
	fl_b64url_encode(b, sizeof(b), out);
	OPENSSL_cleanse(b, sizeof(b));
	return 0;
}

int cat_secret_hash(const char *secret, char **out, struct fl_err *err)
{
	unsigned char salt[SALT_BYTES], h[HASH_BYTES];
	char s64[32], h64[48], *text;
	size_t cap = 128;

	if (RAND_bytes(salt, sizeof(salt)) != 1 || derive(secret, salt, SECRET_ITERATIONS, h) != 0)
		return fl_err_set(err, FL_ERR_INTERNAL, "cannot hash the secret");
	fl_b64url_encode(salt, sizeof(salt), s64);
	fl_b64url_encode(h, sizeof(h), h64);
	text = malloc(cap);
	if (text == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	snprintf(text, cap, "pbkdf2-sha256$%d$%s$%s", SECRET_ITERATIONS, s64, h64);
	*out = text;
	return 0;
}

/* Decodes base64url of exactly n bytes; -1 otherwise. */
static int dec(const char *s, size_t len, unsigned char *out, size_t n)
{
	size_t got;

	return fl_b64_decode(s, len, out, n, &got) == 0 && got == n ? 0 : -1;
}

bool cat_secret_verify(const char *secret, const char *stored)
{
	unsigned char salt[SALT_BYTES], want[HASH_BYTES], got[HASH_BYTES];
	const char *p, *salt_end, *hash;
	char *end;
	long iter;

	if (strncmp(stored, "pbkdf2-sha256$", 14) != 0)
		return false;
	p = stored + 14;
	iter = strtol(p, &end, 10);
	if (end == p || *end != '$' || iter < 1000 || iter > 100000000)
		return false;
	p = end + 1;
	salt_end = strchr(p, '$');
	if (salt_end == NULL)
		return false;
	hash = salt_end + 1;
	if (dec(p, (size_t)(salt_end - p), salt, sizeof(salt)) != 0 ||
	    dec(hash, strlen(hash), want, sizeof(want)) != 0 ||
	    derive(secret, salt, iter, got) != 0)
		return false;
	return CRYPTO_memcmp(want, got, sizeof(got)) == 0;
}
